//go:build integration

package ingest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest"
)

// TestPublishEventTopicWithInvisibleCharactersIsRefused reproduces finding
// 12 for PublishEvent: a topic with a bidi override, a zero-width space or
// a line break would read as another topic in the console (and be routed
// as one) while being different; it is INVALID_ARGUMENT naming topic and
// nothing is stored. A topic in any script stays valid.
func TestPublishEventTopicWithInvisibleCharactersIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	ctx := asHuman(t, e.human, nil)
	for _, topic := range []string{"invoice.paid\u202Ediap.eciovni", "build\u200b.finished", "build\n.finished", "tag\U000E0041"} {
		_, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: topic, Queue: "builds"})
		st, _ := apierr.ToStatus(err)
		require.Equal(t, codes.InvalidArgument, st.Code(), "%+q: %v", topic, err)
		require.Contains(t, st.Message(), "invalid topic: contains U+", "%+q", topic)
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`), "nothing stored")

	_, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "Bestellung.erstellt.東京", Queue: "builds"})
	require.NoError(t, err)
}

// TestHookTopicWithInvisibleCharactersIsDropped: a webhook whose signed
// body names a topic with a bidi override is stored (its signature passed,
// and a sender's event is never lost over its label) without that topic,
// so its todo's kind is "webhook", as for a topic that cannot be stored.
func TestHookTopicWithInvisibleCharactersIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"type":"invoice.paid\u202Ediap"}`)
	code, resp := e.post(t, slug, body, standardHeaders(t, "msg_bidi", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	_, topic, _, kind := e.eventOf(t, slug)
	require.Empty(t, topic)
	require.Equal(t, "webhook", kind)
}
