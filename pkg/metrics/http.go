package metrics

import (
	"net/http"
	"strconv"
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
			// http.MaxBytesReader tells net/http to close the connection
			// after an over-long body through a method only its own
			// ResponseWriter has, which this wrapper hides. The header has
			// the same effect: the answer is sent at once, and the rest of
			// the body is not read first.
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
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
