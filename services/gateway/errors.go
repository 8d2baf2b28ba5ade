package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The gateway's one error handler: every error a REST client sees passes
// through handleError or handleRoutingError, which turn what only the
// gateway knows (a body too large or too slow, a parameter that did not
// decode, a route that does not exist) into the right HTTP status and a
// message of our own. Library text (strconv, protojson, gRPC's transport)
// never reaches the client.

var (
	// errTooLarge is a body declared longer than MaxBodyBytes.
	errTooLarge = errors.New("request body too large")
	// errMessageTooLarge is a request that encodes larger than the upstream
	// accepts (MaxRequestBytes): JSON can be the smaller of the two.
	errMessageTooLarge = errors.New("request message too large")
)

// retryAfterSeconds is the Retry-After of a 503: long enough for a database
// restart or failover to finish, short enough not to idle a client.
const retryAfterSeconds = "2"

// handleError renders err in the default JSON shape ({"code", "message",
// "details"}) with the status mapped here.
func (g *Gateway) handleError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if probeOf(ctx) != nil {
		return
	}
	err = g.clientError(r, err)
	var custom *runtime.HTTPStatusError
	if errors.As(err, &custom) && (custom.HTTPStatus == http.StatusRequestTimeout || custom.HTTPStatus == http.StatusRequestEntityTooLarge) {
		// The rest of the body is not worth reading.
		w.Header().Set("Connection", "close")
	}
	if after, ok := retryAfter(err); ok {
		// The upstream said when (a google.rpc.RetryInfo: a rate limit).
		w.Header().Set("Retry-After", after)
	} else if status.Code(err) == codes.Unavailable {
		// HTTP clients and proxies use it to pace their retries (a
		// database fault, a draining node).
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}

// retryAfter is the Retry-After of an upstream status that carries a
// google.rpc.RetryInfo: its delay in whole seconds, rounded up (HTTP has
// no finer unit; a client that retries sooner is only refused again).
func retryAfter(err error) (string, bool) {
	s, ok := status.FromError(err)
	if !ok {
		return "", false
	}
	for _, d := range s.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().IsValid() {
			secs := math.Ceil(max(ri.GetRetryDelay().AsDuration().Seconds(), 1))
			return strconv.FormatFloat(secs, 'f', 0, 64), true
		}
	}
	return "", false
}

// clientError is what the client is told about err.
func (g *Gateway) clientError(r *http.Request, err error) error {
	st := stateOf(r.Context())
	if st != nil && st.bodyErr != nil {
		return g.bodyError(st.bodyErr)
	}
	switch {
	case errors.Is(err, errTooLarge):
		return g.bodyError(&http.MaxBytesError{Limit: g.opts.MaxBodyBytes})
	case errors.Is(err, errMessageTooLarge):
		return withHTTPStatus(http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
			fmt.Sprintf("the request is larger than %d bytes as protobuf; send less", g.opts.MaxRequestBytes))
	}
	var custom *runtime.HTTPStatusError
	if errors.As(err, &custom) {
		if _, ok := status.FromError(custom.Err); !ok { // a malformed path escape
			return withHTTPStatus(http.StatusBadRequest, codes.InvalidArgument, "the request path is malformed")
		}
		return err
	}
	s, _ := status.FromError(err)
	switch {
	case s.Code() == codes.InvalidArgument && st != nil && !st.upstream:
		// The gateway could not decode the request, so the text is a
		// library's (strconv, protojson): name what was wrong, in our words.
		return status.Error(codes.InvalidArgument, badRequest(s.Message(), st))
	case s.Code() == codes.ResourceExhausted && strings.HasPrefix(s.Message(), "grpc: ") && g.opts.MaxRequestBytes > 0:
		// gRPC's own size limit, which the request passed (unaryUpstream
		// checks it): the answer is what is too large to relay.
		return withHTTPStatus(http.StatusBadGateway, codes.ResourceExhausted,
			"the answer is too large to relay; ask for less (a smaller page_size)")
	case s.Code() == codes.ResourceExhausted && strings.HasPrefix(s.Message(), "grpc: "):
		return withHTTPStatus(http.StatusRequestEntityTooLarge, codes.ResourceExhausted, "the request is larger than the node accepts")
	}
	return err
}

// bodyError is the answer to a body that could not be read.
func (g *Gateway) bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		return withHTTPStatus(http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
			fmt.Sprintf("the request body is larger than %d bytes", g.opts.MaxBodyBytes))
	case errors.As(err, &ne) && ne.Timeout():
		return withHTTPStatus(http.StatusRequestTimeout, codes.DeadlineExceeded, "the request body did not arrive in time")
	}
	return withHTTPStatus(http.StatusBadRequest, codes.InvalidArgument, "the request body could not be read")
}

func withHTTPStatus(httpStatus int, c codes.Code, msg string) error {
	return &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: status.Error(c, msg)}
}

// What grpc-gateway says when a path parameter, a query parameter or the
// body does not decode; the name caught is at most 64 word characters, so
// nothing else the client sent is echoed back. protojson's errors start
// "proto:" and a space or, at random, a no-break space (it discourages
// matching its text; the tests catch a change).
var (
	pathParamError  = regexp.MustCompile(`^(?:type mismatch, parameter: |missing parameter )([\w.]{1,64})`)
	queryParamError = regexp.MustCompile(`^(?:parsing field|parsing list|parsing map key|parsing map value|too many values for field|duplicate field|field|invalid path:) "([\w.]{1,64})"`)
	bodyFieldError  = regexp.MustCompile(`^proto:[ \x{00a0}]\(line \d+:\d+\): (unknown field|duplicate field|invalid value for \w+ field) "?([\w.]{1,64})`)
)

// badRequest names the parameter or field that did not decode.
func badRequest(msg string, st *requestState) string {
	if m := pathParamError.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("path parameter %q is not valid", m[1])
	}
	if m := queryParamError.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("query parameter %q is not valid", m[1])
	}
	if !st.bodyRead {
		return "the request's parameters are not valid"
	}
	m := bodyFieldError.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return "the request body is not valid JSON for this call"
	case m[1] == "unknown field":
		return fmt.Sprintf("request body: unknown field %q", m[2])
	case m[1] == "duplicate field":
		return fmt.Sprintf("request body: field %q appears more than once", m[2])
	}
	return fmt.Sprintf("request body: field %q has an invalid value", snakeCase(m[2]))
}

// snakeCase turns protojson's JSON field name (eventId) into the proto name
// the API documents (event_id).
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// handleRoutingError answers a request no route matched: 404 for an
// unknown path, 405 with Allow for a known path and another method.
func (g *Gateway) handleRoutingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if probeOf(ctx) != nil {
		return
	}
	err := withHTTPStatus(http.StatusInternalServerError, codes.Internal, "routing error")
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		allow := strings.Join(g.allowed(r), ", ")
		w.Header().Set("Allow", allow)
		err = withHTTPStatus(httpStatus, codes.Unimplemented, "this method is not allowed here; allowed: "+allow)
	case http.StatusNotFound:
		err = withHTTPStatus(httpStatus, codes.NotFound, "no such route")
	case http.StatusBadRequest:
		err = withHTTPStatus(httpStatus, codes.InvalidArgument, "the request path is malformed")
	}
	g.handleError(ctx, mux, m, w, r, err)
}

type probeKey struct{}

// probe asks the mux whether a request would be routed, without serving it.
type probe struct{ matched bool }

func probeOf(ctx context.Context) *probe {
	p, _ := ctx.Value(probeKey{}).(*probe)
	return p
}

// allowed lists the methods r's path has routes for, by asking the mux
// itself for each (the edge middleware answers a probe before any handler
// runs), so it agrees with routing whatever the patterns are.
func (g *Gateway) allowed(r *http.Request) []string {
	var out []string
	for _, method := range g.methods() {
		p := &probe{}
		pr := r.Clone(context.WithValue(r.Context(), probeKey{}, p))
		pr.Method, pr.Body, pr.ContentLength = method, http.NoBody, 0
		g.mux.ServeHTTP(discard{}, pr)
		if p.matched {
			out = append(out, method)
		}
	}
	return out
}

// methods are the HTTP methods of the gateway's routes, sorted.
func (g *Gateway) methods() []string {
	var out []string
	for route := range g.routes {
		method, _, _ := strings.Cut(route, " ")
		if !slices.Contains(out, method) {
			out = append(out, method)
		}
	}
	slices.Sort(out)
	return out
}

// discard is a ResponseWriter for probes, which write nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
