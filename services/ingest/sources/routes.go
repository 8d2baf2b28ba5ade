package sources

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

// MaxRoutes bounds an endpoint's routes (Endpoint.routes).
const MaxRoutes = 20

// Route is one target of an endpoint's fan-out (table endpoint_routes): its
// events that match Topic (a glob, "" any) and Filter (CEL, "" any) get a
// todo in Queue, addressed to AgentID (nil: unaddressed).
type Route struct {
	Queue   string
	AgentID *uuid.UUID
	Topic   string
	Filter  string
}

// checkRoutes checks an endpoint's routes: their number, each queue, glob
// and filter (which must compile to a bool: CEL's message names the
// problem). Each violation names its route, endpoint.routes[i].
func checkRoutes(routes []Route) error {
	if len(routes) > MaxRoutes {
		return invalid("endpoint.routes", "must have at most 20 routes")
	}
	for i, r := range routes {
		field := "endpoint.routes[" + strconv.Itoa(i) + "]"
		switch {
		case !textcheck.QueueName(r.Queue):
			return invalid(field+".queue", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
		case utf8.RuneCountInString(r.Topic) > maxTopicGlobLen || !utf8.ValidString(r.Topic) || containsNUL(r.Topic):
			return invalid(field+".topic", "must be at most 255 characters of valid UTF-8")
		case len(r.Filter) > maxFilterBytes:
			return invalid(field+".filter", "must be at most 2048 bytes")
		case !utf8.ValidString(r.Filter) || containsNUL(r.Filter):
			return invalid(field+".filter", "must be valid UTF-8 without NUL")
		}
		if err := textcheck.Label(r.Topic); err != nil { // a topic is a label: no bidi or invisible characters
			return invalid(field+".topic", err.Error())
		}
		if r.Filter != "" {
			if _, err := CompileFilter(r.Filter); err != nil {
				return invalid(field+".filter", err.Error())
			}
		}
	}
	return nil
}

func containsNUL(s string) bool { return slices.Contains([]byte(s), 0) }

// replaceRoutes makes routes the endpoint's whole list, in the caller's
// transaction that inserted or locked the endpoint. NOT_FOUND names a
// route's agent that is not an agent of the endpoint's human.
func (s *Store) replaceRoutes(ctx context.Context, db dbsqlc.DBTX, endpointID uuid.UUID, routes []Route, replace bool) error {
	if replace {
		if err := s.q.EndpointRouteDeleteAll(ctx, db, endpointID); err != nil {
			return fmt.Errorf("delete endpoint routes: %w", err)
		}
	}
	if len(routes) == 0 {
		return nil
	}
	n := len(routes)
	p := dbsqlc.EndpointRouteInsertParams{
		EndpointID: endpointID, Positions: make([]int16, n), Queues: make([]string, n), AgentIds: make([]string, n),
		TopicGlobs: make([]string, n), Filters: make([]string, n),
	}
	for i, r := range routes {
		p.Positions[i], p.Queues[i], p.TopicGlobs[i], p.Filters[i] = int16(i), r.Queue, r.Topic, r.Filter //nolint:gosec // i < MaxRoutes
		if r.AgentID != nil {
			p.AgentIds[i] = r.AgentID.String()
		}
	}
	stored, err := s.q.EndpointRouteInsert(ctx, db, p)
	if err != nil {
		return dbErr(err, "insert endpoint routes", "endpoint "+endpointID.String())
	}
	for i, r := range routes {
		if !slices.Contains(stored, int16(i)) { //nolint:gosec // i < MaxRoutes
			return apierr.NotFound("endpoint.routes[%d].agent_id: agent %s not found", i, r.AgentID)
		}
	}
	return nil
}

// routesOf returns the routes of the endpoints ids (which the caller has
// already reached), by endpoint, in order.
func (s *Store) routesOf(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID) (map[uuid.UUID][]Route, error) {
	out := make(map[uuid.UUID][]Route, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.EndpointRouteList(ctx, db, ids)
	if err != nil {
		return nil, fmt.Errorf("list endpoint routes: %w", err)
	}
	for _, r := range rows {
		rt := Route{Queue: r.Queue, AgentID: r.AgentID}
		if r.TopicGlob != nil {
			rt.Topic = *r.TopicGlob
		}
		if r.Filter != nil {
			rt.Filter = *r.Filter
		}
		out[r.EndpointID] = append(out[r.EndpointID], rt)
	}
	return out, nil
}

// SameRoutes reports whether a and b are the same list: an update that
// leaves the routes alone does not rewrite them, and a reload of such an
// endpoint keeps its compiled routes (services/ingest).
func SameRoutes(a, b []Route) bool {
	return slices.EqualFunc(a, b, func(x, y Route) bool {
		return x.Queue == y.Queue && x.Topic == y.Topic && x.Filter == y.Filter &&
			(x.AgentID == nil) == (y.AgentID == nil) && (x.AgentID == nil || *x.AgentID == *y.AgentID)
	})
}
