package mcp

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What one caller may hold on one node at once. Each request in progress
// holds its body, its answer and goroutines, and each waiting call also a
// long poll on the queue (or a held stream) for seconds: without caps one
// credential could hold a node's memory with as many as its connections
// allow. Past a cap a request is refused at once, never queued: a queue
// would hold the same memory and time out later.
//
// A credential's caps are constants sized for one MCP client, whose calls
// are mostly one at a time: agents that share a credential and need more
// each get their own (a credential per agent is the access model's way
// anyway). A tenant's caps are settings (SWITCHBOARD_MCP_MAX_*_PER_TENANT),
// since past them only the operator can help.
const (
	// MaxCallsPerCredential caps one credential's /mcp requests in
	// progress on a node.
	MaxCallsPerCredential = 8
	// MaxWaitsPerCredential caps one credential's waiting calls on a node:
	// claim_todo with wait_seconds, subscriptions/listen. It leaves room
	// in MaxCallsPerCredential for the heartbeats and acks that keep the
	// caller's leases alive while it waits.
	MaxWaitsPerCredential = 4
)

// methodListen is the 2026-07-28 revision's stream of notifications: a
// POST whose answer stays open.
const methodListen = "subscriptions/listen"

// caller is who makes a request, for the caps: a credential and its
// tenant (the credential's own human, even when an administrator names
// another tenant: the node's memory is what is counted, not the rows).
type caller struct {
	credential uuid.UUID
	tenant     uuid.UUID
}

type callerKey struct{}

// withCaller is ctx carrying c. Over HTTP the handler sets it from the
// verified credential, and the SDK hands the request's context values on
// to the method handlers.
func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf is the caller ctx carries. Over stdio there is none: the process
// has one credential and one client, all counted as the zero caller.
func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// gate counts what each credential and each tenant holds of one kind:
// requests, waiting calls, bytes.
type gate struct {
	// kind is what is held ("requests in progress"), remedy how to get
	// below the cap (" when one returns"), for the refusals.
	kind, remedy string
	// perCredential and perTenant are the caps; tenantSetting names the
	// setting behind perTenant (0: a tenant is not counted beyond its
	// credentials).
	perCredential, perTenant int
	tenantSetting            string

	mu           sync.Mutex
	byCredential map[uuid.UUID]int
	byTenant     map[uuid.UUID]int
}

func newGate(kind, remedy string, perCredential, perTenant int, tenantSetting string) *gate {
	return &gate{
		kind: kind, remedy: remedy, perCredential: perCredential, perTenant: perTenant, tenantSetting: tenantSetting,
		byCredential: map[uuid.UUID]int{}, byTenant: map[uuid.UUID]int{},
	}
}

// enter takes n for c, or refuses with a RESOURCE_EXHAUSTED error naming
// the cap; leave gives it back (calling it again does nothing).
func (g *gate) enter(c caller, n int) (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if held := g.byCredential[c.credential]; held+n > g.perCredential {
		return nil, g.refusal("this credential already has", held, g.perCredential, "")
	}
	if held := g.byTenant[c.tenant]; g.perTenant > 0 && held+n > g.perTenant {
		return nil, g.refusal("this tenant's credentials already have", held, g.perTenant, " ("+g.tenantSetting+")")
	}
	g.byCredential[c.credential] += n
	g.byTenant[c.tenant] += n
	var once sync.Once
	return func() { once.Do(func() { g.leave(c, n) }) }, nil
}

func (g *gate) refusal(who string, held, most int, setting string) error {
	return fmt.Errorf("RESOURCE_EXHAUSTED: %s %d %s on this node, and may have at most %d%s; retry%s",
		who, held, g.kind, most, setting, g.remedy)
}

func (g *gate) leave(c caller, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	decrement(g.byCredential, c.credential, n)
	decrement(g.byTenant, c.tenant, n)
}

// decrement lowers m[k] by n, deleting it at zero so the maps hold only
// the callers that hold something.
func decrement(m map[uuid.UUID]int, k uuid.UUID, n int) {
	if m[k] <= n {
		delete(m, k)
		return
	}
	m[k] -= n
}

// limitListens counts a subscriptions/listen as a waiting call: it holds
// its stream until the client leaves or callTimeout passes.
func (s *server) limitListens(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodListen {
			return next(ctx, method, req)
		}
		leave, err := s.waits.enter(callerOf(ctx), 1)
		if err != nil {
			return nil, &jsonrpc.Error{Code: CodeResourceExhausted, Message: err.Error()}
		}
		defer leave()
		return next(ctx, method, req)
	}
}
