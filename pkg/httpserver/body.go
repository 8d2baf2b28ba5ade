package httpserver

import (
	"net/http"
	"time"
)

// bodyDeadline gives every request that has a body d to deliver it: a read
// deadline on the connection from when the handler starts. It is a
// per-request deadline rather than http.Server.ReadTimeout so that requests
// without a body (GETs, streaming subscriptions) are left alone. Once a body
// has been read to its end, net/http lifts the deadline itself (it starts
// its background read of the connection then), so a long answer after the
// body (a long poll) is not cut; a handler that never reads the body leaves
// it in place, which bounds the drain net/http does after it.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}
