package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// routeKind is the kind of a webhook's todos, routed or not.
const routeKind = "webhook"

// endpointRoutes are an endpoint's routes compiled once per load of it
// (endpoints.load) and cached with it. A pointer to one is part of a group
// commit's key: the events of one batch matched the same routes of the
// same load.
type endpointRoutes struct {
	routes []compiledRoute
	// anyFilter: some route has a filter, so the body is parsed (once per
	// request) before matching.
	anyFilter bool
}

// compiledRoute is a route ready to match: a nil topic or filter matches
// every event.
type compiledRoute struct {
	target store.Target
	topic  *regexp.Regexp
	filter cel.Program
}

// compileRoutes compiles an endpoint's stored routes (nil for none). A
// filter that no longer compiles (stored by another version of CEL) makes
// the endpoint misconfigured: refusing its webhooks, so the sender retries
// and the error is logged, beats dropping the events that route should take.
func compileRoutes(rs []sources.Route) (*endpointRoutes, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := &endpointRoutes{routes: make([]compiledRoute, len(rs))}
	for i, r := range rs {
		c := compiledRoute{target: store.Target{Queue: r.Queue, AgentID: r.AgentID, Kind: routeKind, KindFromTopic: true}}
		if r.Topic != "" {
			c.topic = sources.CompileTopicGlob(r.Topic)
		}
		if r.Filter != "" {
			prg, err := sources.CompileFilter(r.Filter)
			if err != nil {
				return nil, fmt.Errorf("route %d filter: %w", i, err)
			}
			c.filter, out.anyFilter = prg, true
		}
		out.routes[i] = c
	}
	return out, nil
}

// routeSet is the routes of one load that an event matched, as a bit per
// route (at most sources.MaxRoutes); comparable, for the batch key.
type routeSet struct {
	of   *endpointRoutes
	mask uint32
}

// match returns the routes e matches. A filter that fails to evaluate (a
// missing key, a wrong type, the cost limit) does not match; it is logged
// with the endpoint, as the sender cannot be told.
func (r *endpointRoutes) match(log *zap.Logger, endpoint uuid.UUID, e *store.Event) routeSet {
	set := routeSet{of: r}
	var vars map[string]any
	for i, rt := range r.routes {
		if rt.topic != nil && !rt.topic.MatchString(e.Topic) {
			continue
		}
		if rt.filter != nil {
			if vars == nil {
				vars = filterVars(e)
			}
			v, _, err := rt.filter.Eval(vars) // bounded by its cost limit, no timeout
			if err != nil {
				// Debug, not Info: a filter naming a field some bodies lack
				// (body.type on an event without one) fails on each of them,
				// which would log every such delivery under load.
				log.Debug("route filter failed; route skipped", zap.String("endpoint_id", endpoint.String()), zap.Int("route", i), zap.Error(err))
				continue
			}
			if v != types.True {
				continue
			}
		}
		set.mask |= 1 << i
	}
	return set
}

// filterVars are a filter's variables for e: its topic, its stored headers
// (lower-case names) and its body parsed as JSON (null when it is not).
func filterVars(e *store.Event) map[string]any {
	var body any = types.NullValue
	if parsed, ok := parseJSON(e.Payload); ok && parsed != nil {
		body = parsed
	}
	headers := e.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	return map[string]any{"topic": e.Topic, "headers": headers, "body": body}
}

// parseJSON parses a body for the filters: JSON integers become int (so
// `body.n % 2 == 0` and `body.id == 42` mean what they say), other numbers
// double.
func parseJSON(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	return numbers(v), true
}

// numbers replaces v's json.Numbers by int64 or float64.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// targets are the todos' targets of the matched routes, each (queue,
// agent) once.
func (s routeSet) targets() []store.Target {
	var out []store.Target
	for i, rt := range s.of.routes {
		if s.mask&(1<<i) == 0 {
			continue
		}
		dup := false
		for _, t := range out {
			dup = dup || (t.Queue == rt.target.Queue && sameAgent(t.AgentID, rt.target.AgentID))
		}
		if !dup {
			out = append(out, rt.target)
		}
	}
	return out
}

// eventAgent is the agent a routed event is for (events.agent_id): the one
// agent every matched route addresses, else nobody (the tenant's shared
// events: an unaddressed todo, or todos for several agents, must be
// readable by whoever claims them); with no route matched, the endpoint's
// own agent (def).
func (s routeSet) eventAgent(def *uuid.UUID) *uuid.UUID {
	ts := s.targets()
	if len(ts) == 0 {
		return def
	}
	first := ts[0].AgentID
	for _, t := range ts[1:] {
		if !sameAgent(first, t.AgentID) {
			return nil
		}
	}
	return first
}

func sameAgent(a, b *uuid.UUID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// ingestRouted stores a webhook event of an endpoint with routes: a todo
// for every route it matches (evaluated here, in the request's goroutine,
// before the group commit), all in the event's transaction.
func (s *Server) ingestRouted(ctx context.Context, ep *hookEndpoint, e store.Event) (store.Event, store.Stored, error) {
	set := ep.routes.match(s.log, ep.ID, &e)
	e.AgentID = set.eventAgent(ep.AgentID)
	stored, err := s.batcher.ingestTo(ctx, e, set)
	return e, stored, err
}

// ingestTo stores e with a todo for every target of set, sharing a
// statement with concurrent calls for the same endpoint that matched the
// same routes when the batcher runs.
func (b *batcher) ingestTo(ctx context.Context, e store.Event, set routeSet) (store.Stored, error) {
	if e.BodySHA256 != nil || e.EndpointID == nil {
		return b.st.IngestTo(ctx, e, set.targets())
	}
	return b.Do(ctx, batchKey{human: e.HumanID, endpoint: *e.EndpointID, kind: routeKind, routed: set}, e)
}

// routedReplayTargets is where a replay of ev, an event of an endpoint with
// routes, goes: the endpoint's current routes that the stored event (its
// topic, headers and body) matches, compiled as the webhook edge compiled
// them (its cache). None when no route matches it now.
func (s *Server) routedReplayTargets(ctx context.Context, ev store.ReplayRow, slug, kind string, payload []byte) ([]store.Target, error) {
	ep, err := s.endpoints.get(ctx, slug)
	if err != nil {
		return nil, fmt.Errorf("ingest: the routes of endpoint %s: %w", ev.EndpointID, err)
	}
	if ep.routes == nil { // its routes were removed since: its own queue
		return []store.Target{{Queue: ep.Queue, AgentID: ep.AgentID, Kind: kind, Payload: payload}}, nil
	}
	row, err := s.store.GetEvent(ctx, store.Reader{HumanID: ev.HumanID}, ev.ID)
	if err != nil {
		return nil, err
	}
	e := store.Event{Topic: row.Topic, Payload: row.Payload, Headers: map[string]string{}}
	if err := json.Unmarshal(row.Headers, &e.Headers); err != nil {
		return nil, fmt.Errorf("ingest: headers of event %d: %w", ev.ID, err)
	}
	targets := ep.routes.match(s.log, ep.ID, &e).targets()
	for i := range targets {
		targets[i].Kind, targets[i].Payload = kind, payload
	}
	return targets, nil
}
