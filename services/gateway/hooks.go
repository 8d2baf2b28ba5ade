package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"go.uber.org/zap"
)

// HookForwarding configures ForwardHooks: how a gateway whose node runs no
// ingest passes POST and GET /hooks/{slug} (the GETs are providers'
// handshakes) on to a node that does.
type HookForwarding struct {
	// Pick is the base URL (scheme://host:port) of an ingest node's HTTP
	// edge, or false when no live node runs ingest.
	Pick func() (*url.URL, bool)
	// Transport reaches ingest nodes (the node's TLS client config for
	// https); nil: DefaultHookTransport.
	Transport *http.Transport
	// MaxBodyBytes caps the forwarded body: the largest any endpoint may
	// accept (the ingest node then applies the endpoint's own cap).
	MaxBodyBytes int64
	// ResponseTimeout bounds waiting for the ingest node's answer once the
	// body is sent (it answers after its commit).
	ResponseTimeout time.Duration
	Log             *zap.Logger
}

// hookRetryAfter is the Retry-After, in seconds, of a hook this gateway
// could not hand to an ingest node: senders retry, and by then a restarted
// or newly scheduled ingest node has registered.
const hookRetryAfter = "5"

// ForwardHooks serves POST and GET /hooks/{slug} by forwarding it to an
// ingest node, unchanged in what verification reads: the path and query
// (handshakes carry their challenge there), the body bytes and
// every end-to-end header (hop-by-hop ones are the connection's, not the
// sender's), and the Host the sender addressed, for schemes that sign the
// URL. X-Forwarded-For is replaced, not appended to: it names the peer this
// gateway saw, never what the sender claims.
func ForwardHooks(f HookForwarding) http.Handler {
	transport := f.Transport
	if transport == nil {
		transport = DefaultHookTransport()
	}
	transport.ResponseHeaderTimeout = f.ResponseTimeout
	p := &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			target, _ := pr.In.Context().Value(hookTargetKey{}).(*url.URL)
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				hookAnswer(w, http.StatusRequestEntityTooLarge, http.StatusText(http.StatusRequestEntityTooLarge))
				return
			}
			f.Log.Warn("webhook forward to an ingest node failed; answering 503", zap.Error(err))
			unavailableHook(w, "the ingest service is unreachable; retry later")
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.MaxBodyBytes > 0 && r.ContentLength > f.MaxBodyBytes {
			w.Header().Set("Connection", "close")
			hookAnswer(w, http.StatusRequestEntityTooLarge, http.StatusText(http.StatusRequestEntityTooLarge))
			return
		}
		target, ok := f.Pick()
		if !ok {
			unavailableHook(w, "no live node runs ingest; retry later")
			return
		}
		if f.MaxBodyBytes > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, f.MaxBodyBytes)
		}
		r = r.WithContext(withHookTarget(r.Context(), target))
		p.ServeHTTP(w, r)
	})
}

// DefaultHookTransport is the plaintext transport to ingest nodes: no
// proxy from the environment (the ingest node is a peer, not the
// internet), bounded dials.
func DefaultHookTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

func unavailableHook(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", hookRetryAfter)
	hookAnswer(w, http.StatusServiceUnavailable, msg)
}

// hookAnswer writes the webhook edge's error shape ({"error": msg}), the
// one ingest's own answers have.
func hookAnswer(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	_, _ = w.Write(append(b, '\n'))
}

type hookTargetKey struct{}

// withHookTarget carries the node Pick chose to the proxy's Rewrite.
func withHookTarget(ctx context.Context, u *url.URL) context.Context {
	return context.WithValue(ctx, hookTargetKey{}, u)
}
