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
