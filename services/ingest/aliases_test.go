//go:build integration

package ingest_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/internal/dnstest"
)

// Other ways to reach a Redis server than its own address, for the tests
// of who owns a stream: a TCP proxy, a Redis server of the test's own that
// it can restart, and a DNS server whose answer the test changes.

// proxy listens on a loopback port of its own and forwards every
// connection to target: one Redis server, reached at another address. It
// returns "127.0.0.1:<port>"; it stops at cleanup.
func proxy(t *testing.T, target string) string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context()) // the proxy lives until its cleanup
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		open = append(open, c)
	}
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			var d net.Dialer
			out, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			track(in)
			track(out)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			wg.Go(func() { pipe(out, in) })
			wg.Go(func() { pipe(in, out) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// ownRedis is a redis-server process of the test's own (no persistence),
// on a free loopback port, which the test may stop and start again: the
// new process has a new run_id at the same address. It stops at cleanup.
type ownRedis struct {
	t    *testing.T
	Addr string
	cmd  *exec.Cmd
}

func newOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	r := &ownRedis{t: t, Addr: addr}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *ownRedis) start() {
	r.t.Helper()
	port := r.Addr[len("127.0.0.1:"):]
	// The server lives until the test stops it or cleans up.
	r.cmd = exec.CommandContext(context.WithoutCancel(r.t.Context()), "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(r.t, r.cmd.Start(), "these tests need redis-server (deploy/local/redis.sh installs it)")
	rdb := r.client()
	defer func() { _ = rdb.Close() }()
	require.Eventually(r.t, func() bool { return rdb.Ping(r.t.Context()).Err() == nil }, time.Minute, 20*time.Millisecond,
		"redis-server on %s answers", r.Addr)
}

func (r *ownRedis) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func (r *ownRedis) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// runID is what the server now running calls itself.
func (r *ownRedis) runID() string {
	r.t.Helper()
	rdb := r.client()
	defer func() { _ = rdb.Close() }()
	info, err := rdb.InfoMap(r.t.Context(), "server").Result()
	require.NoError(r.t, err)
	return info["Server"]["run_id"]
}

// dnsAnswer is the one address a test's DNS server answers every name
// with, until the test changes it.
type dnsAnswer struct{ v atomic.Value }

func newDNS(addr string) *dnsAnswer {
	d := &dnsAnswer{}
	d.set(addr)
	return d
}

func (d *dnsAnswer) set(addr string) { d.v.Store(netip.MustParseAddr(addr)) }

// resolver is a resolver asking this DNS server.
func (d *dnsAnswer) resolver() *net.Resolver {
	return dnstest.Resolver(func() netip.Addr { return d.v.Load().(netip.Addr) })
}
