package realtime

import (
	"encoding/json"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// The notify transport (phase 1): each ephemeral event travels inside a
// pg_notify payload to every node's listen connection. Nothing is stored,
// and a node that is not listening at that moment never sees it. Sending
// only queues (Server.ephemeralOut, a pgnotify.Queue): the node's notifier
// batches queued events into one statement, and a full queue drops and
// counts them (ephemeral delivery is best effort; the publisher is never
// held up by Postgres).

// sendEphemeral queues an encoded event (wire.Ephemeral as JSON, at most
// maxNotifyPayload bytes: publishEphemeral encodes and checks it once).
func (s *Server) sendEphemeral(encoded []byte) { s.ephemeralOut.Send(string(encoded)) }

// receiveEphemeral is the listen side: another node's event (or this node's
// own, which deliverRemote skips) for the local subscribers. It runs on the
// notifier's listen goroutine and never blocks (the hub does not wait).
func (s *Server) receiveEphemeral(payload string) {
	var e wire.Ephemeral
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		s.log.Warn("unreadable ephemeral notification", zap.Error(err))
		return
	}
	s.deliverRemote(e)
}
