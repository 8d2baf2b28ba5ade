package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHTTPFloor measures what one webhook delivery costs in CPU when
// the server does nothing with it: `bench ingest`'s own client (hookConn,
// signing each delivery) against a net/http server whose handler only
// reads the body and answers 200, both in this process, 32 deliveries in
// flight over loopback. Its cpu-µs/delivery is the HTTP share of the
// node's cost that no change to ingest can remove while the load
// generator, the node and Postgres share one machine's cores; compare it
// with the database's cost per delivery at the ceiling (docs/ingest.md,
// "Performance"):
//
//	cd services && go test -run '^$' -bench HTTPFloor ./internal/bench/
func BenchmarkHTTPFloor(b *testing.B) {
	ln, err := (&net.ListenConfig{}).Listen(b.Context(), "tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"accepted"}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })

	const inFlight = 32
	pad := make([]byte, 192)
	for i := range pad {
		pad[i] = 'x'
	}
	var next atomic.Int64
	var failed atomic.Value
	cpu0 := cpuTime(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for range inFlight {
		c, err := newHookConn("http://"+ln.Addr().String()+"/hooks/floor", []byte("bench-floor-key"), nil)
		require.NoError(b, err)
		wg.Go(func() {
			defer c.close()
			var body []byte
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				body = fmt.Appendf(body[:0], `{"run":"floor","n":%d,"pad":%q}`, i, pad)
				if err := c.deliver(context.Background(), "floor-"+strconv.FormatInt(i, 10), body); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/delivery")
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
