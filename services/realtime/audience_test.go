//go:build integration

package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/realtime"
)

// seedAgent adds an agent to e's tenant and returns it with a context that
// subscribes as a credential acting as it.
func (e *env) seedAgent(name string) (uuid.UUID, context.Context) {
	e.t.Helper()
	id := uuid.New()
	_, err := e.pool.Exec(e.t.Context(), `INSERT INTO agents (id, human_id, name) VALUES ($1, $2, $3)`, id, e.human, name)
	require.NoError(e.t, err)
	return id, metadata.AppendToOutgoingContext(e.t.Context(), "x-test-human", e.human.String(), "x-test-agent", id.String())
}

// todoID is the todo_id of a lifecycle event.
func todoID(ev *realtimev1.RealtimeEvent) float64 {
	return ev.GetPayload().GetFields()["todo_id"].GetNumberValue()
}

// TestLifecycleEventsReachOnlyTheirAgent: a lifecycle event about one
// agent's todo or event reaches that agent and the tenant's own credentials,
// never the tenant's other agents (who may not read that todo or event
// either), on this node and on another one; shared work reaches everyone.
func TestLifecycleEventsReachOnlyTheirAgent(t *testing.T) {
	t.Parallel()
	a := newEnv(t, realtime.Options{})
	b := newEnvOn(t, a.pool, realtime.Options{Notifier: pgnotify.New(zap.NewNop(), a.pool, pgnotify.Options{})})
	b.human = a.human
	alice, asAlice := a.seedAgent("alice")
	_, asBob := a.seedAgent("bob")
	const channel = realtime.QueueChannelPrefix + "jobs"
	req := &realtimev1.SubscribeRequest{Channels: []string{channel}, IncludeEphemeral: true}
	type node struct {
		env                *env
		tenant, alice, bob *stream
	}
	var nodes []node
	for _, e := range []*env{a, b} {
		n := node{env: e, tenant: e.subscribe(a.human, req), alice: e.subscribeWith(asAlice, req), bob: e.subscribeWith(asBob, req)}
		e.subscribed(3)
		nodes = append(nodes, n)
	}
	// b's subscribers hear a's lifecycle events once a has seen their
	// presence rows (its listened set): probe with shared events until the
	// tenant's subscriber on b has one, then drain the probes everywhere.
	probe := func(id float64) {
		a.srv.System(a.human, nil, channel, "todo.probe", func() map[string]any { return map[string]any{"todo_id": id} })
	}
	probes, deadline := 0.0, time.After(waitFor)
	for heard := false; !heard; {
		probes++
		probe(-probes)
		select {
		case m := <-nodes[1].tenant.events:
			heard = m.GetEvent() != nil && m.GetEvent().GetKind() == "todo.probe"
		case <-time.After(20 * time.Millisecond): // paces the probes
		case <-deadline:
			t.Fatalf("node b heard none of %v probes within %s", probes, waitFor)
		}
	}
	probe(-1000) // the last probe: every stream reads up to it
	for _, n := range nodes {
		for _, s := range []*stream{n.tenant, n.alice, n.bob} {
			for todoID(s.next(t)) != -1000 {
			}
		}
	}

	a.srv.System(a.human, &alice, channel, "todo.claimed", func() map[string]any { return map[string]any{"todo_id": 1} })
	a.srv.System(a.human, nil, channel, "todo.enqueued", func() map[string]any { return map[string]any{"todo_id": 2} })
	for i, n := range nodes {
		require.InDelta(t, 1, todoID(n.tenant.next(t)), 0, "node %d: the tenant's credential hears of alice's todo", i)
		require.InDelta(t, 2, todoID(n.tenant.next(t)), 0, "node %d: and of shared work", i)
		require.InDelta(t, 1, todoID(n.alice.next(t)), 0, "node %d: alice hears of her own todo", i)
		require.InDelta(t, 2, todoID(n.alice.next(t)), 0, "node %d: and of shared work", i)
		require.InDelta(t, 2, todoID(n.bob.next(t)), 0, "node %d: bob's next event is the shared one: alice's never reached him", i)
	}
}
