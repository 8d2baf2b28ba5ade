// Package mcp is Switchboard's Model Context Protocol server: tools and
// resources through which an agent built on an MCP client reads the event
// history, the queues and the todos, and does work (claims, heartbeats,
// completes or fails todos, publishes realtime messages).
//
// It is a client of the gRPC API, not a second way into the stores: every
// tool is one RPC on a client connection, with the caller's bearer
// credential attached as per-call metadata, so authentication, tenant
// scoping and scopes are the services' own interceptors' decision, exactly
// as for any other gRPC client (docs/access.md). It serves over stdio
// (`switchboard mcp`, the token from the environment) and over streamable
// HTTP at /mcp on the node's HTTP edge (the token from each request's
// Authorization header, checked before the body is read: http.go).
package mcp

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// Name is the server's name in the MCP handshake.
const Name = "switchboard"

// Conns are where the tools' RPCs go, by service: one connection may serve
// all three (a node's own gRPC port), or each its own (the gateway's
// upstreams on a node that does not run every service).
type Conns struct {
	Queue    grpc.ClientConnInterface
	Ingest   grpc.ClientConnInterface
	Realtime grpc.ClientConnInterface
}

// Options configure New.
type Options struct {
	// Version is reported in the MCP handshake.
	Version string
	// MaxWaitsPerTenant caps the calls of one tenant's credentials that
	// wait on this node at once (each credential's are capped at
	// MaxWaitsPerCredential); 0: a tenant is capped only through its
	// credentials (stdio, where one credential is the only caller).
	MaxWaitsPerTenant int
}

// WaitsPerTenantSetting is the setting behind Options.MaxWaitsPerTenant
// (pkg/config), named in refusals so a tenant knows whom to ask.
const WaitsPerTenantSetting = "SWITCHBOARD_MCP_MAX_WAITS_PER_TENANT"

// server holds the clients the tools call. It holds no credential: every
// call brings its own.
type server struct {
	queue    queuev1.QueueServiceClient
	ingest   ingestv1.IngestServiceClient
	realtime realtimev1.RealtimeServiceClient
	// waits counts the calls that wait (limits.go).
	waits *gate
}

// New builds the MCP server: its tools and resource templates over c.
func New(c Conns, o Options) *mcp.Server {
	s := &server{
		queue:    queuev1.NewQueueServiceClient(c.Queue),
		ingest:   ingestv1.NewIngestServiceClient(c.Ingest),
		realtime: realtimev1.NewRealtimeServiceClient(c.Realtime),
		waits: newGate("waiting calls (claim_todo with wait_seconds, subscriptions/listen)",
			" when one returns, or claim with wait_seconds 0", MaxWaitsPerCredential, o.MaxWaitsPerTenant, WaitsPerTenantSetting),
	}
	m := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Switchboard", Version: o.Version}, &mcp.ServerOptions{
		Instructions:              instructions,
		SupportedProtocolVersions: protocolVersions(),
	})
	// Outermost first: a listen's place is taken before its clock starts,
	// and an answer is measured within the call's time.
	m.AddReceivingMiddleware(s.limitListens, bounded, capResults)
	s.addReadTools(m)
	s.addWorkTools(m)
	s.addResources(m)
	return m
}

const instructions = `Switchboard: durable webhook ingest, a work queue of todos, and realtime channels.
Read tools see only what the credential's tenant (and agent) may see. To do work: claim_todo,
then heartbeat_todo while working, then complete_todo or fail_todo with the lease_token the
claim returned. Ids and lease tokens are decimal strings; copy them as returned.`

// callTimeout bounds every request a client makes, so a node that does not
// answer cannot hold a tool call (or, over stdio, the agent) forever. It is
// far above claim_todo's longest wait.
const callTimeout = 30 * time.Second

// bounded runs each request under callTimeout.
func bounded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return next(ctx, method, req)
	}
}

// outgoing is ctx carrying, for an RPC, the Authorization (and
// X-Switchboard-Tenant) header of the HTTP request that carried the call.
// Over stdio there is none: the connection itself carries the process's
// credential (per-RPC credentials on the Conns).
func (s *server) outgoing(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if extra == nil || extra.Header == nil {
		return ctx
	}
	var kv []string
	for _, v := range extra.Header.Values("Authorization") {
		kv = append(kv, "authorization", v)
	}
	for _, v := range extra.Header.Values(auth.TenantHeader) {
		kv = append(kv, auth.TenantHeader, v)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
