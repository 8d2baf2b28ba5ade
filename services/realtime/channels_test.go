//go:build integration

package realtime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestListChannelsCountsPagesAndIsolatesTenants: a live subscription shows
// up; counts are per channel (streams, distinct members, nodes); pages
// continue by name; a prefix narrows; another tenant sees none of it.
func TestListChannelsCountsPagesAndIsolatesTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	ctx := as(t.Context(), e.human)
	e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"live"}})
	require.Eventually(t, func() bool {
		res, err := e.client.ListChannels(ctx, &realtimev1.ListChannelsRequest{})
		return err == nil && len(res.GetChannels()) == 1 && res.GetChannels()[0].GetChannel() == "live"
	}, waitFor, 5*time.Millisecond, "a subscription's channel is listed")

	// The seeded rows' nodes are registered: the presence sweep (every
	// PresenceInterval) removes the rows of nodes that are not.
	_, err := e.pool.Exec(t.Context(), `INSERT INTO node_registry (node_id, endpoint) VALUES ('n1', '127.0.0.1:1'), ('n2', '127.0.0.1:2')`)
	require.NoError(t, err)
	seed := func(human uuid.UUID, channel, member, node string) {
		t.Helper()
		_, err := e.pool.Exec(t.Context(), `INSERT INTO realtime_presence (subscription_id, channel, node_id, human_id, member)
			VALUES ($1, $2, $3, $4, $5)`, uuid.New(), channel, node, human, member)
		require.NoError(t, err)
	}
	// "room:a": three streams of two members on two nodes.
	seed(e.human, "room:a", "human:x", "n2")
	seed(e.human, "room:a", "human:x", "n1")
	seed(e.human, "room:a", "agent:y", "n1")
	for i := range 5 {
		seed(e.human, fmt.Sprintf("room:b%d", i), "human:x", "n1")
	}
	other := uuid.New()
	_, err = e.pool.Exec(t.Context(), `INSERT INTO humans (id, email) VALUES ($1, $2)`, other, other.String()+"@example.test")
	require.NoError(t, err)
	seed(other, "room:secret", "human:z", "n1")
	seed(other, "room:a", "human:z", "n1")

	var names []string
	req := &realtimev1.ListChannelsRequest{PageSize: 2}
	for {
		res, err := e.client.ListChannels(ctx, req)
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.GetChannels()), 2)
		for _, c := range res.GetChannels() {
			names = append(names, c.GetChannel())
			if c.GetChannel() == "room:a" {
				require.Equal(t, int32(3), c.GetSubscribers(), "the other tenant's stream is not counted")
				require.Equal(t, int32(2), c.GetMembers())
				require.Equal(t, []string{"n1", "n2"}, c.GetNodeIds())
			}
		}
		if res.GetNextPageToken() == "" {
			break
		}
		req.PageToken = res.GetNextPageToken()
	}
	require.Equal(t, []string{"live", "room:a", "room:b0", "room:b1", "room:b2", "room:b3", "room:b4"}, names)

	res, err := e.client.ListChannels(ctx, &realtimev1.ListChannelsRequest{Prefix: "room:b", PageSize: 3})
	require.NoError(t, err)
	require.Len(t, res.GetChannels(), 3)
	require.Equal(t, "room:b0", res.GetChannels()[0].GetChannel())
	_, err = e.client.ListChannels(ctx, &realtimev1.ListChannelsRequest{Prefix: "room:", PageToken: res.GetNextPageToken()})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "a token is bound to its prefix")

	theirs, err := e.client.ListChannels(as(t.Context(), other), &realtimev1.ListChannelsRequest{})
	require.NoError(t, err)
	require.Len(t, theirs.GetChannels(), 2)
	require.Equal(t, "room:a", theirs.GetChannels()[0].GetChannel())
	require.Equal(t, int32(1), theirs.GetChannels()[0].GetSubscribers())
	require.Equal(t, "room:secret", theirs.GetChannels()[1].GetChannel())

	for name, bad := range map[string]*realtimev1.ListChannelsRequest{
		"prefix":    {Prefix: "no spaces"},
		"page size": {PageSize: 201},
		"token":     {PageToken: "garbage"},
	} {
		_, err := e.client.ListChannels(ctx, bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), name)
	}
}
