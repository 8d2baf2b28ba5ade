package admin

import (
	"strconv"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// routesFrom translates Endpoint.routes; the rules of a valid route (its
// queue, glob, CEL filter) are the sources' (checkRoutes). More than
// MaxRoutes is refused here too, before any work per route.
func routesFrom(in []*adminv1.Route) ([]sources.Route, error) {
	if len(in) > sources.MaxRoutes {
		return nil, invalid("endpoint.routes", "must have at most 20 routes")
	}
	out := make([]sources.Route, len(in))
	for i, r := range in {
		agent, err := parseOptionalID("endpoint.routes["+strconv.Itoa(i)+"].agent_id", r.GetAgentId())
		if err != nil {
			return nil, err
		}
		out[i] = sources.Route{Queue: r.GetQueue(), AgentID: agent, Topic: r.GetTopic(), Filter: r.GetFilter()}
	}
	return out, nil
}

// routesProto renders an endpoint's routes.
func routesProto(in []sources.Route) []*adminv1.Route {
	out := make([]*adminv1.Route, len(in))
	for i, r := range in {
		out[i] = &adminv1.Route{Queue: r.Queue, AgentId: idString(r.AgentID), Topic: r.Topic, Filter: r.Filter}
	}
	return out
}
