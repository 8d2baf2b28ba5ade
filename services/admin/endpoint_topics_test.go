//go:build integration

package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// TestEndpointBodyDedupDefaults: a new endpoint's body-hash dedup is its
// scheme's default when unset (off where the delivery id is signed, else
// the deployment's ingest.dedup window, capped at 7 days), and exactly what
// was asked otherwise, 0 included.
func TestEndpointBodyDedupDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"window_seconds": 7200}' WHERE key = 'ingest.dedup'`)
	require.NoError(t, err)

	for scheme, want := range map[adminv1.VerificationScheme]int32{
		adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB:            7200,
		adminv1.VerificationScheme_VERIFICATION_SCHEME_SHOPIFY:           7200,
		adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE:              7200,
		adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS: 0,
		adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE:            0,
		adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK:             0,
	} {
		secret := ""
		if scheme == adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE || scheme == adminv1.VerificationScheme_VERIFICATION_SCHEME_SLACK {
			secret = "provider-issued-secret-0123"
		}
		ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: scheme}, secret)
		require.NotNil(t, ep.BodyDedupWindowSeconds, "always set on read") //nolint:protogetter // presence is the point
		require.Equal(t, want, ep.GetBodyDedupWindowSeconds(), scheme.String())
	}

	off, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB, BodyDedupWindowSeconds: proto.Int32(0),
	}, "")
	require.Zero(t, off.GetBodyDedupWindowSeconds(), "an explicit 0 is kept: off")

	_, err = e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"window_seconds": 9999999}' WHERE key = 'ingest.dedup'`)
	require.NoError(t, err)
	capped, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_GITHUB}, "")
	require.EqualValues(t, 604800, capped.GetBodyDedupWindowSeconds(), "the default is capped at 7 days")
}

// TestUpdateEndpointTopicAndDedup: the topic source and the dedup window
// change through the mask; named but unset, the window is the scheme's
// default again, and a second topic source is refused against the stored one.
func TestUpdateEndpointTopicAndDedup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, TopicHeader: "X-Event-Type",
	}, "")
	require.Equal(t, "X-Event-Type", ep.GetTopicHeader())

	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), TopicPointer: "/event/type"},
	})
	requireInvalid(t, err, "endpoint.topic_pointer")
	require.Nil(t, upd)

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: ep.GetId(), TopicPointer: "/event/type", BodyDedupWindowSeconds: proto.Int32(60)},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"topic_header", "topic_pointer", "body_dedup_window_seconds"}},
	})
	require.NoError(t, err)
	require.Empty(t, upd.GetEndpoint().GetTopicHeader())
	require.Equal(t, "/event/type", upd.GetEndpoint().GetTopicPointer())
	require.EqualValues(t, 60, upd.GetEndpoint().GetBodyDedupWindowSeconds())

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: ep.GetId()},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"body_dedup_window_seconds"}},
	})
	require.NoError(t, err)
	require.EqualValues(t, 259200, upd.GetEndpoint().GetBodyDedupWindowSeconds(), "named but unset: NONE's default, the ingest.dedup window")
	require.Equal(t, "/event/type", upd.GetEndpoint().GetTopicPointer(), "unnamed fields keep their values")
}
