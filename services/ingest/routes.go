package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

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
	// filters are the routes' filters (nil: no route has one, and the body
	// is never parsed). A delivery runs them under one budget.
	filters *sources.FilterSet
}

// compiledRoute is a route ready to match: a nil topic matches every event,
// and so does a route without a filter.
type compiledRoute struct {
	target store.Target
	topic  *regexp.Regexp
}

// compileRoutes compiles an endpoint's stored routes (nil for none). A
// filter that no longer compiles (stored by another version of CEL) makes
// the endpoint misconfigured: refusing its webhooks, so the sender retries
// and the error is logged, beats dropping the events that route should take.
// maxBodyBytes sizes the body for the filters' estimates: one stored before
// the budget that cannot fit it alone on such bodies is not run (its route
// never matches; sources.ErrFilterNotRun).
func compileRoutes(rs []sources.Route, maxBodyBytes int64) (*endpointRoutes, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := &endpointRoutes{routes: make([]compiledRoute, len(rs))}
	filters := make([]string, len(rs))
	for i, r := range rs {
		c := compiledRoute{target: store.Target{Queue: r.Queue, AgentID: r.AgentID, Kind: routeKind, KindFromTopic: true}}
		if r.Topic != "" {
			c.topic = sources.CompileTopicGlob(r.Topic)
		}
		out.routes[i], filters[i] = c, r.Filter
	}
	var err error
	if out.filters, err = sources.CompileFilters(filters, maxBodyBytes); err != nil {
		return nil, err
	}
	return out, nil
}

// routeSet is the routes of one load that an event matched, as a bit per
// route (at most sources.MaxRoutes); comparable, for the batch key.
type routeSet struct {
	of   *endpointRoutes
	mask uint32
}

// filterReport is what a delivery's filters did, for its delivery log and
// tests: the budget spent, where it ran out (nil: it did not), and the
// first route whose stored filter is not run.
type filterReport struct {
	spent  uint64
	stop   *sources.FilterStop
	notRun int // -1: none
}

// match returns the routes e matches. Filters run in route order, in the
// request's goroutine, under one budget for the delivery (sources.FilterRun):
// once it runs out, no later filter runs and their routes do not match.
// A filter that fails to evaluate (a missing key, a wrong type) does not
// match; it is logged with the endpoint, as the sender cannot be told.
func (r *endpointRoutes) match(log *zap.Logger, endpoint uuid.UUID, e *store.Event) (routeSet, filterReport) {
	set, rep := routeSet{of: r}, filterReport{notRun: -1}
	var run *sources.FilterRun
	for i, rt := range r.routes {
		if rt.topic != nil && !rt.topic.MatchString(e.Topic) {
			continue
		}
		if r.filters.Has(i) {
			if run == nil {
				run = r.filters.Start(filterVars(e))
			}
			ok, err := run.Eval(i)
			if err != nil {
				if errors.Is(err, sources.ErrFilterNotRun) && rep.notRun < 0 {
					rep.notRun = i
				}
				// Debug, not Info: a filter naming a field some bodies lack
				// (body.type on an event without one) fails on each of them,
				// which would log every such delivery under load.
				log.Debug("route filter failed; route skipped", zap.String("endpoint_id", endpoint.String()), zap.Int("route", i), zap.Error(err))
				continue
			}
			if !ok {
				continue
			}
		}
		set.mask |= 1 << i
	}
	if run != nil {
		rep.spent, rep.stop = run.Spent(), run.Stop()
		run.Done()
	}
	return set, rep
}

// note is the delivery log's detail for a delivery whose filters did not
// all run ("" when they did).
func (rep filterReport) note() string {
	switch {
	case rep.stop != nil && errors.Is(rep.stop.Err, sources.ErrFilterTime):
		return fmt.Sprintf("route filters stopped at routes[%d]: the time limit for one delivery (%v) ran out; it and the later filtered routes did not match", rep.stop.Route, sources.FilterTimeLimit)
	case rep.stop != nil:
		return fmt.Sprintf("route filters stopped at routes[%d]: the cost budget for one delivery (%d units) ran out; it and the later filtered routes did not match", rep.stop.Route, sources.FilterBudget)
	case rep.notRun >= 0:
		return fmt.Sprintf("routes[%d]: its filter, stored before the filter rules and budget, breaks them and is not run; update the route", rep.notRun)
	}
	return ""
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
// before the group commit), all in the event's transaction. note is for
// the delivery log: why some filters did not run ("" when all did). The
// event is stored whatever they did: the sender is answered as usual.
func (s *Server) ingestRouted(ctx context.Context, ep *hookEndpoint, e store.Event) (store.Event, store.Stored, string, error) {
	set, rep := ep.routes.match(s.log, ep.ID, &e)
	if s.onRouteFilters != nil {
		s.onRouteFilters(rep.spent, rep.stop)
	}
	e.AgentID = set.eventAgent(ep.AgentID)
	stored, err := s.batcher.ingestTo(ctx, e, set)
	return e, stored, rep.note(), err
}

// ingestTo stores e with a todo for every target of set, sharing a
// statement with concurrent calls for the same endpoint that matched the
// same routes when the batcher runs.
func (b *batcher) ingestTo(ctx context.Context, e store.Event, set routeSet) (store.Stored, error) {
	if e.BodySHA256 != nil || e.EndpointID == nil {
		return ingestOne(ctx, b.st, e, set.targets()...)
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
	set, _ := ep.routes.match(s.log, ep.ID, &e)
	targets := set.targets()
	for i := range targets {
		targets[i].Kind, targets[i].Payload = kind, payload
	}
	return targets, nil
}
