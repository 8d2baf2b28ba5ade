package redisstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Server is the Redis server a connection reached, as Config.OnServer is
// told it before the connection serves the adapter.
type Server struct {
	// RunID is what the server calls itself (INFO server's run_id: 40 hex
	// digits, random for each start of the server process). Every address
	// that reaches one server process reaches one RunID.
	RunID string
	// Addr is the address dialed, after DNS; the zero value when the
	// dialer's connection did not say.
	Addr netip.AddrPort
}

// errRunID is a server whose INFO has no usable run_id: nothing tells
// which server it is, so the adapter does not read from it.
var errRunID = errors.New("the server's INFO has no run_id of 40 hex digits, so which server it is cannot be told")

// identifyOp and checkOp name the steps of a new connection's check.
const (
	identifyOp = "identify the server (INFO server)"
	checkOp    = "check who reads this stream"
)

// identityTimeout bounds INFO on a new connection and on a probe.
const identityTimeout = 5 * time.Second

// runID asks the server on c for its run_id.
func runID(ctx context.Context, c redis.Cmdable) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok && isRunID(v) {
			return v, nil
		}
	}
	return "", errRunID
}

// isRunID reports whether s looks like a Redis run_id: it becomes part of a
// key, so a server (or something posing as one) cannot choose its shape.
func isRunID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// dialedAddr remembers the address the last connection was dialed to, for
// the check that follows it (the adapter dials one connection at a time).
type dialedAddr struct {
	mu   sync.Mutex
	addr netip.AddrPort
}

// wrap returns dial recording every connection's remote address.
func (d *dialedAddr) wrap(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		ap, _ := netip.ParseAddrPort(conn.RemoteAddr().String())
		d.mu.Lock()
		d.addr = ap
		d.mu.Unlock()
		return conn, nil
	}
}

func (d *dialedAddr) get() netip.AddrPort {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// checkServer is the client's OnConnect: before a new connection serves a
// single command of the adapter, the server says who it is and OnServer
// decides whether this adapter may read from it. An error closes the
// connection, and the command that wanted it fails with it.
func (a *Adapter) checkServer(ctx context.Context, c *redis.Conn, dialed *dialedAddr) error {
	if a.cfg.OnServer == nil {
		return nil
	}
	id, err := runID(ctx, c)
	if err != nil {
		return refused(stepFailed(identifyOp, err))
	}
	if err := a.cfg.OnServer(ctx, Server{RunID: id, Addr: dialed.get()}); err != nil {
		return refused(stepFailed(checkOp, err))
	}
	return nil
}

// refused wraps a failed check once more for go-redis, which unwraps an
// OnConnect error once before the command sees it: the step arrives whole
// (and Reason finds the innermost step either way).
func refused(err error) error { return fmt.Errorf("new connection: %w", err) }

// Probe connects to addr as an adapter with username would, through dial,
// and returns the server it reaches there: whether another adapter's addr
// reaches the server a new connection reached is told by comparing the two
// RunIDs. It reads nothing and writes nothing.
func Probe(ctx context.Context, addr, username string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (Server, error) {
	var dialed dialedAddr
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, Username: username, Dialer: dialed.wrap(dial), ClientName: "switchboard:probe",
		// One try, bounded: an unreachable rival costs one dial timeout.
		// Two slots, so its one failed dial never starts the pool's
		// background redialer (it starts once every slot failed).
		MaxRetries: -1, DialerRetries: 1, PoolSize: 2,
		DialTimeout: identityTimeout, ReadTimeout: identityTimeout, WriteTimeout: identityTimeout,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer func() { _ = rdb.Close() }()
	id, err := runID(ctx, rdb)
	if err != nil {
		return Server{}, fmt.Errorf("probe %s: %w", addr, err)
	}
	return Server{RunID: id, Addr: dialed.get()}, nil
}
