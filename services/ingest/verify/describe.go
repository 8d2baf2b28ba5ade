package verify

import (
	"strings"
	"unicode/utf8"
)

// Facts are what a verified request says about itself beyond its
// signature: the provider's event type (the event's topic), and, where the
// scheme's body carries the event's own id, that id. Everything here is
// read after verification, so a body-borne id is as trustworthy as the
// signature over the body.
type Facts struct {
	Topic string
	// SignedID is the event id read from the signed body ("" for none).
	SignedID string
}

// TopicSource overrides where an endpoint's topic comes from: a request
// header, or an RFC 6901 JSON pointer into the body (at most one is set;
// both empty: the scheme's own topic).
type TopicSource struct {
	Header  string
	Pointer string
}

// describers reads each scheme's Facts, the one place that knows where a
// provider puts its event type and id. A scheme not listed has neither (a
// generic endpoint names its own with a TopicSource). A new scheme adds one
// line.
var describers = map[Scheme]func(Request) Facts{
	SchemeGitHub:           headerTopic("X-GitHub-Event"), // "push", "pull_request": not ".action"
	SchemeShopify:          headerTopic("X-Shopify-Topic"),
	SchemeStripe:           stripeFacts,
	SchemeSlack:            slackFacts,
	SchemeStandardWebhooks: bodyTopic("type"),
	SchemeZoom:             bodyTopic("event"),
	SchemeMeta:             metaFacts,
	SchemeX:                xFacts,
	SchemeMSGraph:          msgraphFacts,
	// twilio: none (a form post without an event type).
}

// maxIDLen is the longest delivery id events.delivery_id holds.
const maxIDLen = 255

// Describe completes res, the Result of a request r that verified under
// scheme: Topic from src when it names a source, else the scheme's; and for
// a scheme whose body carries the event id (stripe, slack's event_callback),
// that id as DeliveryID with DeliveryIDSigned. A body-borne id that could not
// be stored as is (empty, too long, a NUL) is ignored, leaving res's id: a
// cut id could merge two events. The topic is returned as found; the caller
// bounds it (it logs what it drops). A body that is not JSON has no facts,
// never an error.
func Describe(scheme Scheme, src TopicSource, r Request, res Result) Result {
	var f Facts
	if d := describers[scheme]; d != nil {
		f = d(r)
	}
	switch {
	case src.Header != "":
		f.Topic = r.Header.Get(src.Header)
	case src.Pointer != "":
		f.Topic = pointerTopic(r.Body, src.Pointer)
	}
	res.Topic = f.Topic
	if f.SignedID != "" && len(f.SignedID) <= maxIDLen && storable(f.SignedID) {
		res.DeliveryID, res.DeliveryIDSigned = f.SignedID, true
	}
	return res
}

// SignsDeliveryID reports whether scheme's delivery id is covered by its
// signature: standard_webhooks signs webhook-id; stripe and slack carry the
// event id in the signed body. Body-hash dedup is off by default for these
// (a replayed body carries its id, which dedups it).
func SignsDeliveryID(scheme Scheme) bool {
	switch scheme {
	case SchemeStandardWebhooks, SchemeStripe, SchemeSlack:
		return true
	}
	return false
}

func headerTopic(name string) func(Request) Facts {
	return func(r Request) Facts { return Facts{Topic: r.Header.Get(name)} }
}

func bodyTopic(key string) func(Request) Facts {
	return func(r Request) Facts { return Facts{Topic: scalar(topLevel(r.Body, key)[key])} }
}

// stripeFacts: the Event object's type ("invoice.paid") and id ("evt_…"),
// the same id on every redelivery whatever else of the body changed
// (pending_webhooks).
func stripeFacts(r Request) Facts {
	m := topLevel(r.Body, "type", "id")
	return Facts{Topic: scalar(m["type"]), SignedID: scalar(m["id"])}
}

// slackFacts: an Events API event_callback's event.type and event_id; any
// other JSON body (url_verification, app_rate_limited) its type; an
// interactive form post (payload=<json>) its payload's type.
func slackFacts(r Request) Facts {
	m := topLevel(r.Body, "type", "event_id", "event")
	if m == nil {
		return Facts{Topic: scalar(topLevel(formPayload(r), "type")["type"])}
	}
	typ := scalar(m["type"])
	if typ != "event_callback" {
		return Facts{Topic: typ}
	}
	return Facts{Topic: scalar(topLevel(m["event"], "type")["type"]), SignedID: scalar(m["event_id"])}
}

// metaFacts: the object ("page", "whatsapp_business_account"), with the
// first change's field when there is one ("page.feed").
func metaFacts(r Request) Facts {
	topic := scalar(topLevel(r.Body, "object")["object"])
	if field := pointerTopic(r.Body, "/entry/0/changes/0/field"); topic != "" && field != "" {
		topic += "." + field
	}
	return Facts{Topic: topic}
}

// xFacts: the Account Activity payload's first key ending in "_events"
// ("tweet_create_events").
func xFacts(r Request) Facts {
	return Facts{Topic: firstKeySuffix(r.Body, "_events")}
}

// msgraphFacts: the first notification's changeType ("created").
func msgraphFacts(r Request) Facts {
	return Facts{Topic: pointerTopic(r.Body, "/value/0/changeType")}
}

// storable is pkg/textcheck's rule (no NUL, valid UTF-8: what a text column
// holds), restated so this package depends on nothing of the service.
func storable(s string) bool { return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) }
