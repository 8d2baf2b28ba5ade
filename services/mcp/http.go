package mcp

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Path is where the node's HTTP edge serves MCP over streamable HTTP.
const Path = "/mcp"

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Authenticate vets the request's Authorization header values before
	// its body is read (the node's authenticator, as the REST gateway's
	// Options.Authenticate): nil, or a gRPC status error.
	Authenticate func(ctx context.Context, fullMethod string, authorization []string) error
	// MaxBodyBytes caps a request body (413 past it).
	MaxBodyBytes int64
}

// Handler serves s over streamable HTTP, stateless and answering in JSON
// rather than an event stream: each POST is a whole exchange, no session
// or stream outlives its request (GET and DELETE are 405), so a caller
// holds nothing between calls and nothing needs a cap or a timeout beyond
// the HTTP server's own; a caller that hangs up cancels its call's RPC. A caller the authenticator
// refuses is answered (401, or 503 when credentials cannot be checked)
// before a byte of the body is read, and the connection closed.
func Handler(s *mcp.Server, o HTTPOptions) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		JSONResponse:                 true,
		MaxRequestBodyBytes:          o.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Authenticate != nil {
			// No RPC is named: the MCP request is not read yet. Each tool's
			// RPC is then checked for its own scope by the service.
			if err := o.Authenticate(r.Context(), "", r.Header.Values("Authorization")); err != nil {
				refuse(w, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// refuse answers a refused caller as the REST edge does: the status's
// HTTP code and message as JSON, and the connection closed rather than
// its unread body drained.
func refuse(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	if st.Code() == codes.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	}
	w.WriteHeader(runtime.HTTPStatusFromCode(st.Code()))
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(st.Code()), "message": st.Message()})
}
