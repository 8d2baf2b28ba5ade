package metrics

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTP is the HTTP edge's series, per route pattern (never the raw path).
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTP(reg prometheus.Registerer) *HTTP {
	return &HTTP{
		requests: counterVec(reg, "http", "requests_total",
			"HTTP requests answered, by route (the matched ServeMux pattern; \"/\" is the REST gateway), method and status code.",
			"route", "method", "code"),
		duration: histogramVec(reg, "http", "request_duration_seconds",
			"Time to answer an HTTP request (a streaming response counts until it ends), by route and method.",
			prometheus.DefBuckets, "route", "method"),
	}
}

// Middleware records every request next (a *http.ServeMux) serves, by the
// pattern the mux matched.
func (h *HTTP) Middleware(next http.Handler) http.Handler {
	if h == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		// ServeMux sets r.Pattern on the request it was given.
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		method := methodLabel(r.Method)
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		h.requests.WithLabelValues(route, method, codeLabel(code)).Inc()
		h.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	})
}

// methodLabel keeps the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return m
	}
	return "other"
}

func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// statusWriter remembers the status code. Unwrap lets http.ResponseController
// reach the connection's Flush and deadlines (streaming responses).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code == http.StatusRequestEntityTooLarge {
			bodyLimitHit(w.ResponseWriter)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// bodyLimitHit tells net/http what http.MaxBytesReader tells it when a body
// passes its limit: close the connection after this answer, gently (its
// write side first, so a client still sending the body reads the answer
// instead of a reset), and without reading the rest of the body first. A
// handler's MaxBytesReader over this wrapper cannot, because net/http
// recognises only its own ResponseWriter; a MaxBytesReader with no room,
// over the writer this one wraps, reading one byte, does.
func bodyLimitHit(w http.ResponseWriter) {
	_, _ = http.MaxBytesReader(w, io.NopCloser(strings.NewReader("x")), 0).Read(make([]byte, 1))
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes through, for handlers that assert http.Flusher directly.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
