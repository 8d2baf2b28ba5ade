package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

// The work tools: a worker's loop (claim, heartbeat, complete or fail) and
// a realtime publish. Which credential may call them is the services'
// decision: an agent credential for the todos addressed to its agent or to
// none, PERMISSION_DENIED for a read-only one.

const (
	// MaxClaimWait bounds claim_todo's long poll, so a tool call cannot
	// hold a request (and the client) for long.
	MaxClaimWait = 5 * time.Second
	// MaxClaimTodos caps one claim: each todo is a lease the model must
	// then finish or let expire.
	MaxClaimTodos = 10
)

type claimIn struct {
	Queue        string  `json:"queue" jsonschema:"the queue to claim from"`
	WorkerID     string  `json:"worker_id,omitempty" jsonschema:"who is working, recorded as the todo's lease_owner (default mcp)"`
	MaxTodos     int     `json:"max_todos,omitempty" jsonschema:"how many todos to claim, 1-10 (default 1)"`
	LeaseSeconds int     `json:"lease_seconds,omitempty" jsonschema:"lease length in seconds, 1-3600 (default: the queue's, 30); renew it with heartbeat_todo"`
	WaitSeconds  float64 `json:"wait_seconds,omitempty" jsonschema:"how long to wait for a runnable todo when none is, 0-5 seconds (default 0: answer at once)"`
}

type leaseIn struct {
	ID         string `json:"id" jsonschema:"the todo's id, as claim_todo returned it"`
	LeaseToken string `json:"lease_token" jsonschema:"the lease_token claim_todo returned for this todo"`
}

type heartbeatIn struct {
	leaseIn
	LeaseSeconds int            `json:"lease_seconds,omitempty" jsonschema:"new lease length in seconds from now, 1-3600 (default 30)"`
	Progress     map[string]any `json:"progress,omitempty" jsonschema:"optional progress as a JSON object, e.g. {\"done\": 40, \"total\": 100}; at most 1 KiB"`
}

type completeIn struct {
	leaseIn
	Result map[string]any `json:"result,omitempty" jsonschema:"optional result as a JSON object, stored on the todo; at most 1 MiB, and an MCP request at most 10000 JSON values (larger results: the gRPC or REST API)"`
}

type failIn struct {
	leaseIn
	Error             string  `json:"error" jsonschema:"what went wrong, for humans (the first 4096 characters are stored)"`
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty" jsonschema:"delay before the next attempt in seconds, 0-2592000 (default: the server's backoff)"`
	DeadLetter        bool    `json:"dead_letter,omitempty" jsonschema:"true to give up now: the todo goes DEAD whatever attempts remain"`
}

type publishIn struct {
	Channel string         `json:"channel" jsonschema:"the realtime channel's name"`
	Kind    string         `json:"kind,omitempty" jsonschema:"application-defined message type, e.g. message"`
	Payload map[string]any `json:"payload,omitempty" jsonschema:"the message body as a JSON object; at most 64 KiB (7 KiB when not durable)"`
	Durable bool           `json:"durable,omitempty" jsonschema:"true: stored, gets an id, and can be replayed; false: only current subscribers get it"`
}

func (s *server) addWorkTools(m *mcp.Server) {
	lease := map[string]property{"id": pattern(idPattern), "lease_token": pattern(idPattern)}
	withLease := func(more map[string]property) map[string]property {
		for k, v := range lease {
			more[k] = v
		}
		return more
	}
	mcp.AddTool(m, &mcp.Tool{
		Name: "claim_todo",
		Description: "Claim runnable todos of a queue (those addressed to this agent or to none). Each returned todo is " +
			"RUNNING under a lease: keep its id and lease_token, call heartbeat_todo before lease_expires_at, then " +
			"complete_todo or fail_todo. An empty todos list means nothing was runnable within wait_seconds.",
		InputSchema: inputSchema[claimIn](map[string]property{
			"queue": pattern(queuePattern), "max_todos": between(1, MaxClaimTodos),
			"lease_seconds": between(1, 3600), "wait_seconds": between(0, MaxClaimWait.Seconds()),
		}),
	}, s.claim)
	mcp.AddTool(m, &mcp.Tool{
		Name:        "heartbeat_todo",
		Description: "Renew the lease of a claimed todo (and optionally report progress). Returns the new lease_expires_at.",
		InputSchema: inputSchema[heartbeatIn](withLease(map[string]property{"lease_seconds": between(1, 3600)})),
	}, s.heartbeat)
	mcp.AddTool(m, &mcp.Tool{
		Name:        "complete_todo",
		Description: "Finish a claimed todo successfully, with an optional result. already: true means this lease had already completed it.",
		InputSchema: inputSchema[completeIn](withLease(map[string]property{})),
	}, s.complete)
	mcp.AddTool(m, &mcp.Tool{
		Name: "fail_todo",
		Description: "Report a failed attempt of a claimed todo: it is retried after a backoff (or retry_after_seconds) " +
			"while attempts remain, else (or with dead_letter) it goes DEAD.",
		InputSchema: inputSchema[failIn](withLease(map[string]property{"retry_after_seconds": between(0, 2592000)})),
	}, s.fail)
	mcp.AddTool(m, &mcp.Tool{
		Name:        "publish",
		Description: "Publish a message on a realtime channel of the tenant. Returns its id (0 when not durable).",
		InputSchema: inputSchema[publishIn](map[string]property{"channel": pattern(channelPattern)}),
	}, s.publish)
}

func (s *server) claim(ctx context.Context, req *mcp.CallToolRequest, in claimIn) (*mcp.CallToolResult, any, error) {
	worker := in.WorkerID
	if worker == "" {
		worker = "mcp"
	}
	wait := min(time.Duration(in.WaitSeconds*float64(time.Second)), MaxClaimWait)
	if wait > 0 {
		leave, err := s.waits.enter(callerOf(ctx), 1)
		if err != nil {
			return nil, nil, err
		}
		defer leave()
	}
	resp, err := s.queue.Claim(s.outgoing(ctx, req.Extra), &queuev1.ClaimRequest{
		Queue: in.Queue, WorkerId: worker, MaxTodos: int32(min(max(in.MaxTodos, 1), MaxClaimTodos)), //nolint:gosec // bounded
		LeaseSeconds: int32(min(max(in.LeaseSeconds, 0), 3600)), Wait: durationpb.New(max(wait, 0)), //nolint:gosec // bounded
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	todos, err := todosJSON(resp.GetTodos(), MaxFieldBytes)
	if err != nil {
		return nil, nil, err
	}
	return nil, map[string]any{"todos": todos}, nil
}

// lease parses a lease's id and token.
func (in leaseIn) lease() (id, token int64, err error) {
	if id, err = parseID("id", in.ID); err != nil {
		return 0, 0, err
	}
	token, err = parseID("lease_token", in.LeaseToken)
	return id, token, err
}

func (s *server) heartbeat(ctx context.Context, req *mcp.CallToolRequest, in heartbeatIn) (*mcp.CallToolResult, any, error) {
	id, token, err := in.lease()
	if err != nil {
		return nil, nil, err
	}
	progress, err := structOf("progress", in.Progress)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.queue.Heartbeat(s.outgoing(ctx, req.Extra), &queuev1.HeartbeatRequest{
		Id: id, LeaseToken: token, LeaseSeconds: int32(min(max(in.LeaseSeconds, 0), 3600)), Progress: progress, //nolint:gosec // bounded
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	out, err := jsonOf(resp)
	return nil, out, err
}

func (s *server) complete(ctx context.Context, req *mcp.CallToolRequest, in completeIn) (*mcp.CallToolResult, any, error) {
	id, token, err := in.lease()
	if err != nil {
		return nil, nil, err
	}
	result, err := structOf("result", in.Result)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.queue.Complete(s.outgoing(ctx, req.Extra), &queuev1.CompleteRequest{Id: id, LeaseToken: token, Result: result})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	return todoOutcome(resp.GetTodo(), resp.GetAlready())
}

func (s *server) fail(ctx context.Context, req *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	id, token, err := in.lease()
	if err != nil {
		return nil, nil, err
	}
	r := &queuev1.FailRequest{Id: id, LeaseToken: token, Error: in.Error, DeadLetter: in.DeadLetter}
	if in.RetryAfterSeconds > 0 {
		r.RetryAfter = durationpb.New(time.Duration(in.RetryAfterSeconds * float64(time.Second)))
	}
	resp, err := s.queue.Fail(s.outgoing(ctx, req.Extra), r)
	if err != nil {
		return nil, nil, rpcError(err)
	}
	return todoOutcome(resp.GetTodo(), resp.GetAlready())
}

// todoOutcome is what complete_todo and fail_todo answer.
func todoOutcome(t *queuev1.Todo, already bool) (*mcp.CallToolResult, any, error) {
	j, err := todoJSON(t, MaxFieldBytes)
	if err != nil {
		return nil, nil, err
	}
	return nil, map[string]any{"todo": j, "already": already}, nil
}

func (s *server) publish(ctx context.Context, req *mcp.CallToolRequest, in publishIn) (*mcp.CallToolResult, any, error) {
	payload, err := structOf("payload", in.Payload)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.realtime.Publish(s.outgoing(ctx, req.Extra), &realtimev1.PublishRequest{
		Channel: in.Channel, Kind: in.Kind, Payload: payload, Durable: in.Durable,
	})
	if err != nil {
		return nil, nil, rpcError(err)
	}
	out, err := jsonOf(resp)
	return nil, out, err
}

// structOf is an optional JSON object as a Struct (nil when absent).
func structOf(field string, m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil //nolint:nilnil // absent is nil, as the RPC means it
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("INVALID_ARGUMENT: %s: %w", field, err)
	}
	return s, nil
}
