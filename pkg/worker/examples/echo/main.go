// Command echo is the Go SDK's example worker: it completes each todo of a
// queue with its payload as the result.
//
//	SWITCHBOARD_QUEUE=builds SWITCHBOARD_ADDRS=127.0.0.1:9090 SWITCHBOARD_TOKEN=… go run ./pkg/worker/examples/echo
//
// It drains SWITCHBOARD_QUEUE on the nodes in SWITCHBOARD_ADDRS
// (comma-separated) with the token in SWITCHBOARD_TOKEN, and on SIGTERM or
// SIGINT stops claiming, lets running handlers finish within the shutdown
// grace, releases the rest and exits 0. The same knobs as the Python and
// TypeScript echo workers: SWITCHBOARD_LEASE_SECONDS (30),
// SWITCHBOARD_CONCURRENCY (10) and SWITCHBOARD_ECHO_DELAY_MS (0: how long
// each handler waits before it completes, so a test can hold todos).
// Connections use TLS when SWITCHBOARD_TLS_CA_FILE names a CA bundle or
// SWITCHBOARD_TLS=1 (the system's roots); plaintext only to loopback
// addresses, or anywhere with SWITCHBOARD_INSECURE=1.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx)
	stop()
	if err != nil {
		log.Printf("echo: %v", err)
		os.Exit(2)
	}
}

func run(ctx context.Context) error {
	queue := os.Getenv("SWITCHBOARD_QUEUE")
	addrs := splitAddrs(os.Getenv("SWITCHBOARD_ADDRS"))
	if queue == "" || len(addrs) == 0 {
		return errors.New("set SWITCHBOARD_QUEUE and SWITCHBOARD_ADDRS (and SWITCHBOARD_TOKEN)")
	}
	lease, err := intEnv("SWITCHBOARD_LEASE_SECONDS", 30)
	if err != nil {
		return err
	}
	concurrency, err := intEnv("SWITCHBOARD_CONCURRENCY", 10)
	if err != nil {
		return err
	}
	delayMS, err := intEnv("SWITCHBOARD_ECHO_DELAY_MS", 0)
	if err != nil {
		return err
	}
	opts, err := dialOptions(addrs)
	if err != nil {
		return err
	}
	conn, err := worker.Dial(addrs, opts)
	if err != nil {
		return err
	}
	defer conn.Close() //nolint:errcheck // exiting
	delay := time.Duration(delayMS) * time.Millisecond
	w := worker.New(conn, queue, func(ctx context.Context, todo *queuev1.Todo) error {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		return worker.SetResult(ctx, todo.GetPayload())
	}, worker.Options{Concurrency: concurrency, LeaseSeconds: int32(lease)}) //nolint:gosec // Run validates the range
	log.Printf("echo: draining %q on %q", queue, strings.Join(addrs, ",")) //nolint:gosec // G706: %q quotes any control characters in the operator's own settings
	if err := w.Run(ctx); err != nil {
		return err
	}
	s := w.Stats()
	log.Printf("echo: stopped: %d claimed, %d completed, %d released", s.Claimed, s.Completed, s.Released)
	return nil
}

// dialOptions: TLS when asked for, else plaintext only to loopback unless
// SWITCHBOARD_INSECURE=1 (the token would cross the network in the clear).
func dialOptions(addrs []string) (worker.DialOptions, error) {
	opts := worker.DialOptions{Token: os.Getenv("SWITCHBOARD_TOKEN"), HealthCheck: true}
	if ca := os.Getenv("SWITCHBOARD_TLS_CA_FILE"); ca != "" {
		pem, err := os.ReadFile(ca) //nolint:gosec // the operator's CA bundle
		if err != nil {
			return opts, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("SWITCHBOARD_TLS_CA_FILE %s holds no certificate", ca)
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		return opts, nil
	}
	if on(os.Getenv("SWITCHBOARD_TLS")) {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		return opts, nil
	}
	opts.AllowInsecure = on(os.Getenv("SWITCHBOARD_INSECURE")) || allLoopback(addrs)
	return opts, nil
}

func allLoopback(addrs []string) bool {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return false
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func intEnv(name string, def int) (int, error) {
	raw := os.Getenv(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, fmt.Errorf("%s must be a whole number, got %q", name, raw)
	}
	return n, nil
}

func on(s string) bool { return s == "1" || s == "true" }
