package verify_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

func TestDescribeTopicPerScheme(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		scheme verify.Scheme
		header []string
		body   string
		topic  string
	}{
		{"github header, not the action", verify.SchemeGitHub, []string{"X-GitHub-Event", "pull_request"}, `{"action":"opened"}`, "pull_request"},
		{"github without header", verify.SchemeGitHub, nil, `{"type":"x"}`, ""},
		{"shopify header", verify.SchemeShopify, []string{"X-Shopify-Topic", "orders/create"}, `{}`, "orders/create"},
		{"stripe type", verify.SchemeStripe, nil, `{"id":"evt_1","type":"invoice.paid","data":{"type":"no"}}`, "invoice.paid"},
		{"slack event_callback", verify.SchemeSlack, nil, `{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`, "app_mention"},
		{"slack other type", verify.SchemeSlack, nil, `{"type":"app_rate_limited"}`, "app_rate_limited"},
		{"slack interactive form", verify.SchemeSlack, nil, "payload=" + `%7B%22type%22%3A%22block_actions%22%7D`, "block_actions"},
		{"standard webhooks type", verify.SchemeStandardWebhooks, nil, `{"type":"user.created","data":{}}`, "user.created"},
		{"zoom event", "zoom", nil, `{"event":"meeting.started","payload":{}}`, "meeting.started"},
		{"meta object and field", "meta", nil, `{"object":"page","entry":[{"changes":[{"field":"feed"}]}]}`, "page.feed"},
		{"meta object only", "meta", nil, `{"object":"instagram","entry":[{"messaging":[]}]}`, "instagram"},
		{"x first _events key", "x", nil, `{"for_user_id":"1","favorite_events":[],"tweet_create_events":[]}`, "favorite_events"},
		{"msgraph changeType", "msgraph", nil, `{"value":[{"changeType":"created"},{"changeType":"deleted"}]}`, "created"},
		{"twilio none", "twilio", nil, `Body=hi&From=%2B1`, ""},
		{"hmac none", verify.SchemeHMAC, nil, `{"type":"x"}`, ""},
		{"not JSON", verify.SchemeStripe, nil, `not json{`, ""},
		{"type not a string", verify.SchemeStandardWebhooks, nil, `{"type":{"a":1}}`, ""},
		{"number type", verify.SchemeStandardWebhooks, nil, `{"type": 42}`, "42"},
		{"empty body", verify.SchemeSlack, nil, ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := verify.Request{Body: []byte(c.body), Header: header(c.header...)}
			got := verify.Describe(c.scheme, verify.TopicSource{}, r, verify.Result{Scheme: c.scheme})
			assert.Equal(t, c.topic, got.Topic)
		})
	}
}

func TestDescribeSignedIDs(t *testing.T) {
	t.Parallel()
	unsigned := verify.Result{DeliveryID: "from-header"}
	cases := []struct {
		name   string
		scheme verify.Scheme
		body   string
		id     string
		signed bool
	}{
		{"stripe id", verify.SchemeStripe, `{"id":"evt_123","type":"a","pending_webhooks":1}`, "evt_123", true},
		{"slack event_id", verify.SchemeSlack, `{"type":"event_callback","event_id":"Ev9","event":{"type":"message"}}`, "Ev9", true},
		{"slack url_verification has none", verify.SchemeSlack, `{"type":"url_verification","event_id":"Ev9"}`, "from-header", false},
		{"stripe without id", verify.SchemeStripe, `{"type":"a"}`, "from-header", false},
		{"stripe id with a NUL is ignored", verify.SchemeStripe, `{"id":"evt_\u0000"}`, "from-header", false},
		{"stripe id too long is ignored", verify.SchemeStripe, `{"id":"` + strings.Repeat("e", 256) + `"}`, "from-header", false},
		{"github id stays unsigned", verify.SchemeGitHub, `{"id":"evt_1"}`, "from-header", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := verify.Describe(c.scheme, verify.TopicSource{}, verify.Request{Body: []byte(c.body)}, unsigned)
			assert.Equal(t, c.id, got.DeliveryID)
			assert.Equal(t, c.signed, got.DeliveryIDSigned)
		})
	}
}

func TestDescribeTopicSource(t *testing.T) {
	t.Parallel()
	body := []byte(`{"type":"outer","event":{"type":"inner","a/b":{"~k":"escaped"}},"list":[{"n":"zero"},{"n":"one"}],"dup":"first","dup":"last"}`)
	r := verify.Request{Body: body, Header: header("X-Event-Kind", "from.header")}
	cases := []struct {
		src   verify.TopicSource
		topic string
	}{
		{verify.TopicSource{Header: "X-Event-Kind"}, "from.header"},
		{verify.TopicSource{Header: "X-Missing"}, ""},
		{verify.TopicSource{Pointer: "/event/type"}, "inner"},
		{verify.TopicSource{Pointer: "/event/a~1b/~0k"}, "escaped"},
		{verify.TopicSource{Pointer: "/list/1/n"}, "one"},
		{verify.TopicSource{Pointer: "/list/01/n"}, ""},
		{verify.TopicSource{Pointer: "/list/-/n"}, ""},
		{verify.TopicSource{Pointer: "/list/9/n"}, ""},
		{verify.TopicSource{Pointer: "/event"}, ""},
		{verify.TopicSource{Pointer: "/type/x"}, ""},
		{verify.TopicSource{Pointer: "/dup"}, "last"},
	}
	for _, c := range cases {
		// The override wins over the scheme's own topic (standard_webhooks: "outer").
		got := verify.Describe(verify.SchemeStandardWebhooks, c.src, r, verify.Result{})
		assert.Equal(t, c.topic, got.Topic, "%+v", c.src)
	}
	assert.Equal(t, "outer", verify.Describe(verify.SchemeStandardWebhooks, verify.TopicSource{}, r, verify.Result{}).Topic)
	got := verify.Describe(verify.SchemeStripe, verify.TopicSource{Pointer: "/data/object/kind"},
		verify.Request{Body: []byte(`{"id":"evt_5","type":"t","data":{"object":{"kind":"k"}}}`)}, verify.Result{})
	assert.Equal(t, "k", got.Topic)
	assert.Equal(t, "evt_5", got.DeliveryID, "an override of the topic keeps the signed id")
}

func TestParsePointer(t *testing.T) {
	t.Parallel()
	tokens, err := verify.ParsePointer("/a~1b/~0c/0/")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/b", "~c", "0", ""}, tokens)
	for _, bad := range []string{"", "a/b", "/a~", "/a~2", "/" + strings.Repeat("a/", 64)} {
		_, err := verify.ParsePointer(bad)
		assert.Error(t, err, bad)
	}
}

func TestSignsDeliveryID(t *testing.T) {
	t.Parallel()
	for _, s := range []verify.Scheme{verify.SchemeStandardWebhooks, verify.SchemeStripe, verify.SchemeSlack} {
		assert.True(t, verify.SignsDeliveryID(s), s)
	}
	for _, s := range []verify.Scheme{verify.SchemeGitHub, verify.SchemeShopify, verify.SchemeTwilio, verify.SchemeHMAC, verify.SchemeBearer, verify.SchemeBasic, verify.SchemeNone} {
		assert.False(t, verify.SignsDeliveryID(s), s)
	}
}
