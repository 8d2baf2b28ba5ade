package ingest

import (
	"crypto/sha256"
	"net/http"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// maxTopicLen bounds a topic in bytes: a topic is also its todo's kind, and
// PublishEvent, ListEvents and Enqueue take at most 255 characters of
// either.
const maxTopicLen = 255

// eventFacts sets e's topic and dedup keys from res (completed by
// verify.Describe). The delivery id: the one the scheme reports, signed or
// not (a Stripe or Slack event id from the signed body, a header), else the
// endpoint's delivery-id header. The body's SHA-256 too when the endpoint
// has body-hash dedup on, whatever the id: the endpoint chose it.
func (s *Server) eventFacts(e *store.Event, r *http.Request, ep *hookEndpoint, res verify.Result) {
	e.DeliveryID = res.DeliveryID
	if e.DeliveryID == "" && ep.DeliveryIDHeader != "" {
		e.DeliveryID = r.Header.Get(ep.DeliveryIDHeader)
	}
	e.DeliveryID = cut(e.DeliveryID, 255)
	e.Topic = s.storableTopic(ep, res.Topic)
	if ep.BodyDedupWindow > 0 {
		sum := sha256.Sum256(e.Payload)
		e.BodySHA256, e.BodyDedupWindow = sum[:], ep.BodyDedupWindow
	}
}

// storableTopic is topic cut to maxTopicLen bytes (at a rune boundary), or
// "" when it holds text a column cannot (a NUL from a JSON "\u0000") or a
// label must not (textcheck.Label: a bidi override or an invisible
// character would make the topic read as another in the console and to
// routes): the signature already passed, so the event is stored without its
// topic (its todo's kind is then "webhook") rather than refused, and the
// drop logged.
func (s *Server) storableTopic(ep *hookEndpoint, topic string) string {
	topic = cut(topic, maxTopicLen) // first: a cut may leave a joiner dangling
	if err := textcheck.Label(topic); err != nil {
		s.log.Info("webhook topic dropped: text a topic may not hold", zap.String("endpoint_id", ep.ID.String()), zap.Error(err))
		return ""
	}
	return topic
}
