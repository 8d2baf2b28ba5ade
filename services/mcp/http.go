package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/auth"
)

// Path is where the node's HTTP edge serves MCP over streamable HTTP.
const Path = "/mcp"

// How many bodies of the largest size a credential's and a tenant's
// requests in progress may carry between them, on top of
// MaxCallsPerCredential and MaxCallsPerTenant: decoding and answering a
// request costs its node tens of times its body (a 4 MiB string, about
// 90 MB), so the requests' count alone would let eight large ones from one
// credential hold most of a gigabyte.
const (
	bodiesPerCredential = 2
	bodiesPerTenant     = 4
)

// BodySetting is the setting behind HTTPOptions.MaxBodyBytes (pkg/config).
const BodySetting = "SWITCHBOARD_HTTP_MAX_BODY"

// CallsPerTenantSetting is the setting behind HTTPOptions.MaxCallsPerTenant
// (pkg/config), named in refusals so a tenant knows whom to ask.
const CallsPerTenantSetting = "SWITCHBOARD_MCP_MAX_CALLS_PER_TENANT"

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Identify vets the request's Authorization header values before its
	// body is read (the node's authenticator, as the REST gateway's
	// Options.Authenticate) and says whose credential it is: its
	// Principal, or a gRPC status error.
	Identify func(ctx context.Context, authorization []string) (auth.Principal, error)
	// MaxBodyBytes caps a request body (413 past it); 0 is the SDK's
	// default, 4 MiB.
	MaxBodyBytes int64
	// MaxCallsPerTenant caps the requests one tenant's credentials have in
	// progress on this node (each credential's are capped at
	// MaxCallsPerCredential); 0: a tenant is capped only through its
	// credentials.
	MaxCallsPerTenant int
}

// Handler serves s over streamable HTTP, stateless and answering in JSON
// rather than an event stream: each POST is a whole exchange of one
// request, no session outlives its request (GET and DELETE are 405), so a
// caller holds nothing between calls; a caller that hangs up cancels its
// call's RPC.
//
// Before the SDK sees a request, in this order, each refusal costing the
// node next to nothing: a caller the authenticator refuses is answered
// (401, or 503 when credentials cannot be checked) before a byte of the
// body is read, and the connection closed; a caller whose credential or
// tenant already has its most requests in progress on this node is
// answered 429, its body unread, also closing; a body that is a JSON-RPC
// batch (MinProtocolVersion says why) or would cost too much to decode
// (request.go) is answered 400 with one Invalid Request error, nothing of
// it run; and one whose bytes would take its caller past the bodies it may
// have in progress is answered 429.
func Handler(s *mcp.Server, o HTTPOptions) http.Handler {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	return &edge{
		sdk: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			JSONResponse:                 true,
			MaxRequestBodyBytes:          o.MaxBodyBytes,
			PropagateRequestCancellation: true,
		}),
		identify: o.Identify,
		maxBody:  o.MaxBodyBytes,
		calls:    newGate("requests in progress", " when one returns", MaxCallsPerCredential, o.MaxCallsPerTenant, CallsPerTenantSetting),
		bodies: newGate("bytes of request bodies in progress", " when one returns", bodiesPerCredential*int(o.MaxBodyBytes),
			bodiesPerTenant*int(o.MaxBodyBytes), fmt.Sprintf("%d × %s", bodiesPerTenant, BodySetting)),
	}
}

// edge is Handler's http.Handler: the checks, then the SDK's handler.
type edge struct {
	sdk      http.Handler
	identify func(ctx context.Context, authorization []string) (auth.Principal, error)
	maxBody  int64
	// calls and bodies count each caller's requests in progress and the
	// bytes of their bodies. Both are held until the answer is written,
	// not only while the call runs: an answer read slowly still holds the
	// node's memory.
	calls, bodies *gate
}

func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var who caller
	if e.identify != nil {
		// No RPC is named: the MCP request is not read yet. Each tool's
		// RPC is then checked for its own scope by the service.
		p, err := e.identify(r.Context(), r.Header.Values("Authorization"))
		if err != nil {
			refuse(w, err)
			return
		}
		who = caller{credential: p.CredentialID, tenant: p.HumanID}
	}
	leave, err := e.calls.enter(who, 1)
	if err != nil {
		tooMany(w, err)
		return
	}
	defer leave()
	if r.Method == http.MethodPost {
		body, ok := readRequest(w, r, e.maxBody)
		if !ok {
			return
		}
		leaveBytes, err := e.bodies.enter(who, len(body))
		if err != nil {
			tooMany(w, err)
			return
		}
		defer leaveBytes()
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	e.sdk.ServeHTTP(w, r.WithContext(withCaller(r.Context(), who)))
}

// tooMany answers a request over a caller's caps: 429, a JSON-RPC error
// naming the cap, and a second before trying again.
func tooMany(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	answer(w, http.StatusTooManyRequests, errorResponse(CodeResourceExhausted, err.Error()))
}

// readRequest reads r's body whole (up to limit) and answers what no tool
// may run: a body that cannot be read, a batch, or one that would cost too
// much to decode (request.go). ok is false once it has answered.
func readRequest(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, ok bool) {
	var err error
	if r.ContentLength <= limit { // else refused unread
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case r.ContentLength > limit || errors.As(err, &tooLarge):
		answer(w, http.StatusRequestEntityTooLarge, errorResponse(jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("the request body is larger than %d bytes", limit)))
		return nil, false
	case errors.As(err, &ne) && ne.Timeout():
		answer(w, http.StatusRequestTimeout, errorResponse(jsonrpc.CodeInvalidRequest,
			"the request body did not arrive in time"))
		return nil, false
	case err != nil:
		answer(w, http.StatusBadRequest, errorResponse(jsonrpc.CodeInvalidRequest,
			"the request body could not be read"))
		return nil, false
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && isBatch(trimmed[0]) {
		answer(w, http.StatusBadRequest, batchRefusal)
		return nil, false
	}
	if jerr := checkCost(body); jerr != nil {
		answer(w, http.StatusBadRequest, errorResponse(jerr.Code, jerr.Message))
		return nil, false
	}
	return body, true
}

// answer writes a JSON body with code, and closes the connection rather
// than draining a body the node did not read (or read only in part).
func answer(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// refuse answers a refused caller as the REST edge does: the status's
// HTTP code and message as JSON, and the connection closed rather than
// its unread body drained.
func refuse(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	if st.Code() == codes.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	}
	body, _ := json.Marshal(map[string]any{"code": int(st.Code()), "message": st.Message()})
	answer(w, runtime.HTTPStatusFromCode(st.Code()), append(body, '\n'))
}
