package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The edge's checks on a routed request, made before the route's handler
// reads the body: that its URL carries no secret (secrets.go), who is
// calling (Options.Authenticate) and how much they may send
// (Options.MaxBodyBytes). What the handler and the upstream call
// then learn about the request is kept in its requestState for the error
// handler (errors.go).

type stateKey struct{}

// requestState is what the edge learns about one request as it is served.
// Only the request's own goroutine touches it.
type requestState struct {
	bodyRead bool  // the handler began reading the body
	bodyEnd  bool  // and read it to its end
	bodyErr  error // reading it failed: too large, too slow, or cut off
	upstream bool  // the request was decoded and handed to the upstream
}

func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}

// edge is the mux middleware: it runs once routing has named the RPC and
// before that route's handler, the first code to read the body.
func (g *Gateway) edge(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p := probeOf(r.Context()); p != nil {
			p.matched = true // only finding which methods a path has (errors.go)
			return
		}
		if err := g.secretInQuery(r); err != nil {
			g.refuse(w, r, err)
			return
		}
		if g.opts.Authenticate != nil {
			if err := g.opts.Authenticate(r.Context(), g.rpcOf(r), r.Header.Values("Authorization")); err != nil {
				g.refuse(w, r, err)
				return
			}
		}
		limit := g.opts.MaxBodyBytes
		if limit > 0 && r.ContentLength > limit {
			g.refuse(w, r, errTooLarge)
			return
		}
		st := &requestState{}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		if r.Body != nil && r.Body != http.NoBody {
			body := r.Body
			if limit > 0 {
				// Bodies of unknown length (chunked) stop at the cap.
				body = http.MaxBytesReader(w, body, limit)
			}
			r.Body = &edgeBody{ReadCloser: body, st: st}
		}
		next(w, r, params)
	}
}

// refuse answers a request turned away before its body was read, closing
// the connection when it has one: reading a body only to discard it (as
// net/http otherwise does before answering) is what the refusal saves.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	_, m := runtime.MarshalerForRequest(g.mux, r)
	g.handleError(r.Context(), g.mux, m, w, r, err)
}

// edgeBody records how reading the body went.
type edgeBody struct {
	io.ReadCloser
	st *requestState
}

func (b *edgeBody) Read(p []byte) (int, error) {
	b.st.bodyRead = true
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.st.bodyEnd = true
	case err != nil && b.st.bodyErr == nil:
		b.st.bodyErr = err
	}
	return n, err
}

// unaryUpstream runs on every unary call the gateway makes. It refuses a
// request whose body did not arrive whole (the route's handler ignores an
// error reading past the first JSON value, and would send what it decoded)
// and one that encodes larger than the upstream accepts (refused here, not
// there, so the client gets 413 and no gRPC library text); and it marks the
// request as handed upstream, so the error handler knows any later error is
// the upstream's answer rather than the gateway failing to decode it.
func (g *Gateway) unaryUpstream(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
) error {
	if st := stateOf(ctx); st != nil {
		if st.bodyErr != nil {
			return st.bodyErr
		}
		st.upstream = true
	}
	if m, ok := req.(proto.Message); ok && g.opts.MaxRequestBytes > 0 && proto.Size(m) > g.opts.MaxRequestBytes {
		return errMessageTooLarge
	}
	var header, trailer metadata.MD
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
	if err != nil && !answeredByServer(header, trailer) {
		return noAnswer(err)
	}
	return err
}

// answeredByServer reports whether a call's metadata came from a
// Switchboard server: its request-id interceptor names every call it sees,
// so a status without that name was made up by the gRPC client itself
// (the upstream unreachable, a connection reset, a deadline), with
// transport text a REST client must not see.
func answeredByServer(header, trailer metadata.MD) bool {
	return len(header.Get(requestIDHeader)) > 0 || len(trailer.Get(requestIDHeader)) > 0
}

// noAnswer is what a REST client is told when the upstream gave no answer
// of its own: the code, in our words. gRPC's size limits keep their text,
// which clientError turns into 413 or 502.
func noAnswer(err error) error {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		return err
	case codes.Canceled:
		return status.Error(codes.Canceled, "the request was cancelled")
	case codes.DeadlineExceeded:
		return status.Error(codes.DeadlineExceeded, "the upstream did not answer in time")
	case codes.Unimplemented:
		return status.Error(codes.Unimplemented, "the upstream does not serve this method")
	default:
		// The registry's resolver names the service no live node runs
		// (cluster.NoLiveNode): worth telling, and no transport detail.
		msg := status.Convert(err).Message()
		if i := strings.Index(msg, noLiveNode); i >= 0 {
			return status.Error(codes.Unavailable, msg[i:]+"; retry shortly")
		}
		return status.Error(codes.Unavailable, "the upstream is unreachable; retry shortly")
	}
}

// noLiveNode begins the resolver's error for a service that no live node
// runs (the text of cluster.ErrNoLiveNode).
const noLiveNode = "no live node runs "

// streamUpstream marks a server stream's request as handed upstream (no
// stream route takes a body).
func streamUpstream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption,
) (grpc.ClientStream, error) {
	if st := stateOf(ctx); st != nil {
		st.upstream = true
	}
	return streamer(ctx, desc, cc, method, opts...)
}
