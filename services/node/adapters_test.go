//go:build integration

package node_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/config"
)

func redisAdapterRequest(t *testing.T, addr, stream string) *adminv1.CreateAdapterRequest {
	t.Helper()
	cfg, err := structpb.NewStruct(map[string]any{"addr": addr, "stream": stream, "start": "0"})
	require.NoError(t, err)
	return &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		Name: "events-" + uuid.NewString(), Kind: adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM, Queue: "stream", Config: cfg,
	}}
}

// TestNodeAdaptersFollowTheAllowList: the node takes
// SWITCHBOARD_ADAPTER_ALLOW from its config. An address it allows makes a
// working adapter (its entries become events); any other, the node's own
// Postgres included, is INVALID_ARGUMENT naming the field.
func TestNodeAdaptersFollowTheAllowList(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(c *config.Config) {
		c.Ingest.AdapterAllow = []config.AdapterAllowEntry{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 6379}}
	})
	adm := adminv1.NewAdminServiceClient(b.conn)

	_, err := adm.CreateAdapter(t.Context(), redisAdapterRequest(t, "127.0.0.1:5432", "s"))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(),
		"adapter.config.addr: 127.0.0.1:5432 is not allowed by SWITCHBOARD_ADAPTER_ALLOW (loopback; port 5432 is not listed for it)")

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	stream := "sbtest:node:" + uuid.NewString()
	t.Cleanup(func() { _ = rdb.Del(context.Background(), stream, stream+":dead").Err() })
	require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{"n":1}`}}).Err(),
		"this test needs the real Redis on 127.0.0.1:6379 (deploy/local/redis.sh)")
	created, err := adm.CreateAdapter(t.Context(), redisAdapterRequest(t, "127.0.0.1:6379", stream))
	require.NoError(t, err)
	source := "adapter:" + created.GetAdapter().GetId()
	events := ingestv1.NewIngestServiceClient(b.conn)
	require.Eventually(t, func() bool {
		got, err := events.ListEvents(t.Context(), &ingestv1.ListEventsRequest{Source: source})
		return err == nil && len(got.GetEvents()) == 1
	}, time.Minute, 50*time.Millisecond, "the node's runner stores the entry")
}

// TestNodeWithoutAllowListRefusesAdapters: unset, no address is allowed.
func TestNodeWithoutAllowListRefusesAdapters(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	_, err := adminv1.NewAdminServiceClient(b.conn).CreateAdapter(t.Context(), redisAdapterRequest(t, "127.0.0.1:6379", "s"))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "(it is unset, so no address is allowed)")
}
