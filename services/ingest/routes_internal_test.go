package ingest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// TestRouteMatchTopic: a route's topic glob and CEL `topic` see the event's
// topic, whatever set it (the scheme or a test); with a filter too, both
// must match. The targets are each (queue, agent) once, in route order.
func TestRouteMatchTopic(t *testing.T) {
	t.Parallel()
	agent := uuid.New()
	rs, err := compileRoutes([]sources.Route{
		{Queue: "pushes", Topic: "github.push"},
		{Queue: "github", Topic: "github.**"},
		{Queue: "opened", Topic: "github.*", Filter: `body.action == "opened"`},
		{Queue: "by-cel", Filter: `topic.endsWith(".opened") && headers["x-a"] == "1"`},
		{Queue: "github", Topic: "**"},                  // same target as route 1
		{Queue: "github", Topic: "**", AgentID: &agent}, // another target
	}, 1024)
	require.NoError(t, err)
	queues := func(topic, body string, headers map[string]string) []string {
		e := store.Event{Topic: topic, Payload: []byte(body), Headers: headers}
		var out []string
		set, _ := rs.match(zap.NewNop(), uuid.Nil, &e)
		for _, tg := range set.targets() {
			out = append(out, tg.Queue)
		}
		return out
	}
	require.Equal(t, []string{"pushes", "github", "github"}, queues("github.push", `{}`, nil))
	require.Equal(t, []string{"github", "opened", "github"}, queues("github.opened", `{"action":"opened"}`, nil))
	require.Equal(t, []string{"github", "by-cel", "github"}, queues("github.pr.opened", `{"action":"opened"}`, map[string]string{"x-a": "1"}))
	require.Equal(t, []string{"github", "github"}, queues("stripe.invoice", `{}`, nil))
}

// TestReusableRoutes: a reload of an endpoint whose routes and body cap are
// unchanged keeps the routes compiled by the load before (the same
// pointer, so no filter is compiled again); any change compiles anew.
func TestReusableRoutes(t *testing.T) {
	t.Parallel()
	agent := uuid.New()
	stored := []sources.Route{{Queue: "a", Topic: "github.*", Filter: `body.x == 1`}, {Queue: "b", AgentID: &agent}}
	compiled, err := compileRoutes(stored, 1024)
	require.NoError(t, err)
	prev := &hookEndpoint{Hook: sources.Hook{MaxBodyBytes: 1024, Routes: stored}, routes: compiled}
	same := agent
	require.Same(t, compiled, reusableRoutes(prev, sources.Hook{MaxBodyBytes: 1024, Routes: []sources.Route{stored[0], {Queue: "b", AgentID: &same}}}))
	for _, h := range []sources.Hook{
		{MaxBodyBytes: 2048, Routes: stored},
		{MaxBodyBytes: 1024, Routes: []sources.Route{{Queue: "a", Topic: "github.*", Filter: `body.x == 2`}, stored[1]}},
		{MaxBodyBytes: 1024, Routes: []sources.Route{stored[0], {Queue: "b"}}},
		{MaxBodyBytes: 1024, Routes: stored[:1]},
	} {
		require.Nil(t, reusableRoutes(prev, h))
	}
	require.Nil(t, reusableRoutes(nil, prev.Hook))
	require.Nil(t, reusableRoutes(&hookEndpoint{Hook: prev.Hook}, prev.Hook), "misconfigured before: compile again")
}
