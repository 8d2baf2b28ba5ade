//go:build integration

package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	sbmcp "github.com/switchboard/switchboard/services/mcp"
)

// A result over MaxResultBytes is not sent: the tool answers an error
// saying to ask for less, and a smaller page of the same todos is served.
// Fifty dead todos, each failed once with 4,096 two-byte characters (its
// last_error and its one attempt's error), make a page of about 1.6 MB,
// which no cut of render.go shortens.
func TestResultOverTheCapIsAToolError(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	q := queuev1.NewQueueServiceClient(dialAs(t, l.node, l.admin))
	reqs := make([]*queuev1.EnqueueRequest, 50)
	for i := range reqs {
		reqs[i] = &queuev1.EnqueueRequest{Kind: "fat"}
	}
	_, err := q.EnqueueBatch(t.Context(), &queuev1.EnqueueBatchRequest{Queue: "fat-q", Requests: reqs})
	require.NoError(t, err)
	claimed, err := q.Claim(t.Context(), &queuev1.ClaimRequest{Queue: "fat-q", WorkerId: "w", MaxTodos: 50, Wait: durationpb.New(0)})
	require.NoError(t, err)
	require.Len(t, claimed.GetTodos(), 50)
	for _, td := range claimed.GetTodos() {
		_, err := q.Fail(t.Context(), &queuev1.FailRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(),
			Error: strings.Repeat("é", 4096), DeadLetter: true})
		require.NoError(t, err)
	}

	s := l.overHTTP(t, l.reader)
	refusal := callFails(t, s, "list_todos", map[string]any{"queue": "fat-q", "page_size": 50})
	require.Regexp(t, fmt.Sprintf(`^RESOURCE_EXHAUSTED: the result is \d+ bytes as JSON, over the %d an MCP answer may be; `+
		`ask for less: a smaller page_size, a narrower filter, or one item by id$`, sbmcp.MaxResultBytes), refusal)
	page := call(t, s, "list_todos", map[string]any{"queue": "fat-q", "page_size": 10})
	require.Len(t, page["todos"], 10)
	require.NotEmpty(t, page["next_page_token"])
}
