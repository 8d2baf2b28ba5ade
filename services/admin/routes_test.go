//go:build integration

package admin_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// TestEndpointRoutesRoundTrip: routes set on create come back, in order, on
// create, get and list; an update naming "routes" replaces the whole list,
// one that does not leaves it alone, and an empty named list removes it.
func TestEndpointRoutesRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	routes := []*adminv1.Route{
		{Queue: "builds", Topic: "github.push"},
		{Queue: "reviews", AgentId: alice.agent.GetId(), Filter: `body.action == "opened"`},
		{Queue: "everything"},
	}
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: routes,
	}, "")
	requireRoutes(t, routes, ep.GetRoutes())
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	requireRoutes(t, routes, got.GetEndpoint().GetRoutes())
	list, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetEndpoints(), 1)
	requireRoutes(t, routes, list.GetEndpoints()[0].GetRoutes())

	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Name: "renamed"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
	})
	require.NoError(t, err)
	requireRoutes(t, routes, upd.GetEndpoint().GetRoutes())

	replaced := []*adminv1.Route{{Queue: "only", Topic: "stripe.**", Filter: `headers["x-kind"] == "a"`}}
	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Routes: replaced}})
	require.NoError(t, err, "no mask: routes set means replace them")
	requireRoutes(t, replaced, upd.GetEndpoint().GetRoutes())
	require.Equal(t, 1, count(t, e.pool, "SELECT count(*) FROM endpoint_routes WHERE endpoint_id = $1", ep.GetId()))

	upd, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"routes"}},
	})
	require.NoError(t, err)
	require.Empty(t, upd.GetEndpoint().GetRoutes())
	require.Equal(t, 0, count(t, e.pool, "SELECT count(*) FROM endpoint_routes WHERE endpoint_id = $1", ep.GetId()))
}

func requireRoutes(t *testing.T, want, got []*adminv1.Route) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, proto.Equal(want[i], got[i]), "route %d: want %v, got %v", i, want[i], got[i])
	}
}

// TestEndpointRoutesValidation: each bad route is INVALID_ARGUMENT naming
// endpoint.routes[i] and its field, CEL's own message included for a
// filter; no endpoint and no route is stored.
func TestEndpointRoutesValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	for _, tc := range []struct {
		name, field, message string
		routes               []*adminv1.Route
	}{
		{"over 20 routes", "endpoint.routes", "at most 20", manyRoutes(21)},
		{"no queue", "endpoint.routes[1].queue", "must match", []*adminv1.Route{{Queue: "a"}, {}}},
		{"bad queue", "endpoint.routes[0].queue", "must match", []*adminv1.Route{{Queue: "Has Space"}}},
		{"bad agent", "endpoint.routes[0].agent_id", "", []*adminv1.Route{{Queue: "a", AgentId: "nope"}}},
		{"syntax", "endpoint.routes[0].filter", "Syntax error", []*adminv1.Route{{Queue: "a", Filter: "body.x ==="}}},
		{"unknown variable", "endpoint.routes[1].filter", "undeclared reference to 'payload'", []*adminv1.Route{{Queue: "a"}, {Queue: "b", Filter: "payload.x == 1"}}},
		{"not a bool", "endpoint.routes[0].filter", "must evaluate to bool", []*adminv1.Route{{Queue: "a", Filter: `topic + "x"`}}},
		{"headers are strings", "endpoint.routes[0].filter", "no matching overload", []*adminv1.Route{{Queue: "a", Filter: `headers["x"] > 3`}}},
		{"filter too long", "endpoint.routes[0].filter", "2048", []*adminv1.Route{{Queue: "a", Filter: "true || " + strings.Repeat("true || ", 300) + "true"}}},
		{"topic too long", "endpoint.routes[0].topic", "255", []*adminv1.Route{{Queue: "a", Topic: strings.Repeat("a", 256)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
				Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: tc.routes,
			}})
			requireInvalid(t, err, tc.field)
			require.Contains(t, err.Error(), tc.message)
			var stored int
			require.NoError(t, e.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM endpoint_routes)").Scan(&stored))
			require.Zero(t, stored)
		})
	}
}

// TestUpdateEndpointRoutesValidation: an update with a bad route list is
// refused the same way and leaves the endpoint's routes as they were.
func TestUpdateEndpointRoutesValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	kept := []*adminv1.Route{{Queue: "kept", Filter: "true"}}
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: kept}, "")
	before := snapshot(ctx, t, e.pool)
	_, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Routes: []*adminv1.Route{{Queue: "a"}, {Queue: "b", Filter: "1 + 1"}},
	}})
	requireInvalid(t, err, "endpoint.routes[1].filter")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Routes: manyRoutes(21)}})
	requireInvalid(t, err, "endpoint.routes")
	require.Equal(t, before, snapshot(ctx, t, e.pool))
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	requireRoutes(t, kept, got.GetEndpoint().GetRoutes())

	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Routes: manyRoutes(20)}})
	require.NoError(t, err, "20 is the most")
	require.Len(t, upd.GetEndpoint().GetRoutes(), 20)
}

// TestEndpointRouteBudget: routes whose filters' worst-case estimates do
// not fit the per-delivery budget together are refused with
// INVALID_ARGUMENT naming the first filter past it, its estimate and the
// budget, and nothing is stored; the same routes fit on small bodies, and
// growing max_body_bytes past what they fit is refused naming that field;
// a filter the budget cannot price is refused; an endpoint whose routes
// were stored before the budget can still be renamed.
func TestEndpointRouteBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	routes := []*adminv1.Route{
		{Queue: "opened", Filter: `body.action == "opened"`},
		{Queue: "bugs", Filter: `body.labels.exists(l, l.name == "bug")`},
	}
	before := snapshot(ctx, t, e.pool)
	_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: routes,
	}})
	requireInvalid(t, err, "endpoint.routes[1].filter")
	require.Contains(t, err.Error(), "could cost 7340034 units per delivery, 7340037 with the filters before it")
	require.Contains(t, err.Error(), "over the budget of 50000 units")
	require.Equal(t, before, snapshot(ctx, t, e.pool))

	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, MaxBodyBytes: 4096, Routes: routes,
	}, "")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), MaxBodyBytes: 1 << 20}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_body_bytes"}},
	})
	requireInvalid(t, err, "endpoint.max_body_bytes")

	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Routes: []*adminv1.Route{{Queue: "p", Filter: `topic.matches(headers["x-pattern"])`}},
	}})
	requireInvalid(t, err, "endpoint.routes[0].filter")
	require.Contains(t, err.Error(), "literal pattern")

	// Stored before the budget (as the API used to accept it): other
	// changes still pass.
	_, err = e.pool.Exec(ctx, `UPDATE endpoints SET max_body_bytes = 1048576 WHERE id = $1`, ep.GetId())
	require.NoError(t, err)
	upd, err := e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint: &adminv1.Endpoint{Id: ep.GetId(), Name: "renamed"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
	})
	require.NoError(t, err)
	requireRoutes(t, routes, upd.GetEndpoint().GetRoutes())
}

func manyRoutes(n int) []*adminv1.Route {
	out := make([]*adminv1.Route, n)
	for i := range out {
		out[i] = &adminv1.Route{Queue: "q" + strconv.Itoa(i)}
	}
	return out
}

// TestEndpointRoutesTenancy: a route's agent must be the endpoint's human's:
// another tenant's agent is NOT_FOUND (as if unknown) on create and update,
// and nothing is stored.
func TestEndpointRoutesTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(ctx, t, e.pool)
	_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
		Routes: []*adminv1.Route{{Queue: "a", AgentId: alice.agent.GetId()}, {Queue: "b", AgentId: bob.agent.GetId()}},
	}})
	requireCode(t, codes.NotFound, err)
	require.Contains(t, err.Error(), "endpoint.routes[1].agent_id")
	require.Equal(t, before, snapshot(ctx, t, e.pool), "no endpoint either: one transaction")
	require.Equal(t, 0, count(t, e.pool, "SELECT count(*) FROM endpoint_routes"))

	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{
		Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE, Routes: []*adminv1.Route{{Queue: "a", AgentId: alice.agent.GetId()}},
	}, "")
	_, err = e.srv.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Id: ep.GetId(), Routes: []*adminv1.Route{{Queue: "b", AgentId: bob.agent.GetId()}},
	}})
	requireCode(t, codes.NotFound, err)
	got, err := e.srv.GetEndpoint(ctx, &adminv1.GetEndpointRequest{Id: ep.GetId()})
	require.NoError(t, err)
	requireRoutes(t, []*adminv1.Route{{Queue: "a", AgentId: alice.agent.GetId()}}, got.GetEndpoint().GetRoutes())
}
