//go:build integration

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/settings"
)

// TestOpenStreamsAreCapped: with streams.limits at 3 per credential and 5
// per tenant, one token gets 3 streams and the next is RESOURCE_EXHAUSTED
// naming the limit, whatever the method; a second credential of the same
// tenant hits the tenant's cap; a closed stream frees its place; and a
// changed setting applies without a restart.
func TestOpenStreamsAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	pool := pgtest.OpenPool(t, b.db, nil)
	// Before the first stream: the node reads the setting when one opens.
	_, err := pool.Exec(t.Context(), `UPDATE settings SET value = '{"max_per_credential": 3, "max_per_tenant": 5}' WHERE key = $1`,
		settings.StreamLimits)
	require.NoError(t, err)

	// A second credential of the same human (the bootstrap administrator):
	// WatchNodes answers at once, so a stream that got its first message
	// was admitted.
	minted, err := adminv1.NewAdminServiceClient(b.conn).MintCredential(t.Context(),
		&adminv1.MintCredentialRequest{Scopes: []string{"admin"}, Name: "second"})
	require.NoError(t, err)
	second, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: minted.GetToken(), AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close() })

	watch := func(conn *grpc.ClientConn) (context.CancelFunc, error) {
		ctx, cancel := context.WithCancel(t.Context())
		stream, err := registryv1.NewRegistryServiceClient(conn).WatchNodes(ctx, &registryv1.WatchNodesRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		if err != nil {
			cancel()
			return nil, err
		}
		t.Cleanup(cancel)
		return cancel, nil
	}
	refused := func(err error, limit string) {
		t.Helper()
		require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		require.Contains(t, status.Convert(err).Message(), limit)
	}

	var first []context.CancelFunc
	for range 3 {
		cancel, err := watch(b.conn)
		require.NoError(t, err)
		first = append(first, cancel)
	}
	_, err = watch(b.conn)
	refused(err, "max_per_credential")
	sub, err := realtimev1.NewRealtimeServiceClient(b.conn).Subscribe(t.Context(), &realtimev1.SubscribeRequest{Channels: []string{"c"}})
	require.NoError(t, err)
	_, err = sub.Recv()
	refused(err, "max_per_credential") // the cap counts every stream method

	for range 2 {
		_, err := watch(second)
		require.NoError(t, err)
	}
	_, err = watch(second)
	refused(err, "max_per_tenant")

	// A closed stream gives its place back, once the server has seen it end.
	first[0]()
	require.Eventually(t, func() bool {
		_, err := watch(second)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the closed stream's place was never freed")
	_, err = watch(b.conn)
	refused(err, "max_per_tenant")

	// Raised through the API: applies on the running node.
	v, err := structpb.NewValue(map[string]any{"max_per_credential": 3, "max_per_tenant": 6})
	require.NoError(t, err)
	_, err = adminv1.NewAdminServiceClient(b.conn).UpdateSetting(t.Context(), &adminv1.UpdateSettingRequest{
		Setting:    &adminv1.Setting{Key: settings.StreamLimits, Value: v},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"value"}},
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := watch(b.conn)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the raised limit never applied")
}
