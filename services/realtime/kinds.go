package realtime

import (
	"strings"
	"unicode"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

// ReservedKindPrefixes are the namespaces of the kinds the services publish
// themselves, and only they:
//
//	presence.  presence.join, presence.leave (presence.go), on any channel
//	todo.      todo.enqueued … todo.progress (the queue's lifecycle, sys:queue:*, sys:todo:*)
//	queue.     queue.paused, queue.resumed, queue.limits (sys:queue:*)
//	schedule.  schedule.fired (sys:queue:*)
//	event.     event.received (sys:ingest)
//
// A client's Publish may not use them: presence events arrive on ordinary
// channels, so a "presence.join" with a member of the publisher's choosing
// would pass for the server's word about who is there, and a client that
// switches on kind alone could be told of todos and events that never
// were. Clients see who published an event in published_by ("node:<id>"
// for the services, "human:" or "agent:" for a client) too, but they need
// not look. Server.System and SystemPublisher.System send only kinds in
// these namespaces, so the two sets cannot meet.
var ReservedKindPrefixes = []string{"presence.", "todo.", "queue.", "schedule.", "event."}

// ReservedKind reports whether kind is in a namespace the services publish
// in. The match ignores ASCII case and leading white space: "Presence.Join"
// or " todo.claimed" would fool a reader that folds or trims.
func ReservedKind(kind string) bool {
	kind = strings.TrimLeftFunc(kind, unicode.IsSpace)
	for _, p := range ReservedKindPrefixes {
		if len(kind) >= len(p) && strings.EqualFold(kind[:len(p)], p) {
			return true
		}
	}
	return false
}

// maxKindLen is PublishRequest.kind's bound.
const maxKindLen = 255

// checkKind is nil for a kind a client may publish, else INVALID_ARGUMENT
// naming kind: at most 255 bytes, a label a person can read as it is
// (textcheck.Label: no bidi controls, zero-width or control characters),
// and outside the reserved namespaces.
func checkKind(kind string) error {
	if len(kind) > maxKindLen {
		return invalid("kind", "must be at most 255 characters")
	}
	if err := textcheck.Label(kind); err != nil {
		return invalid("kind", err.Error())
	}
	if ReservedKind(kind) {
		return invalid("kind", "kinds starting with "+strings.Join(ReservedKindPrefixes, ", ")+
			" are reserved for the events the services publish themselves")
	}
	return nil
}
