package adapter

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Dial settings, as go-redis's own dialer has them.
const (
	dialTimeout   = 5 * time.Second
	dialKeepAlive = 5 * time.Minute
)

// DialContext connects to addr ("host:port") over TCP if the allow list
// allows it, with the signature of go-redis's Options.Dialer. The check
// runs in the dialer's Control function, after DNS resolution and before
// connect(2), on the address actually being connected to: a name that
// resolved to an allowed address when the adapter was created and to
// another one now (DNS rebinding, or an allow list changed since) is
// refused without a packet being sent to it. A name that a name rule
// allows is trusted with whatever it resolves to.
//
// Every error is a *DialError whose message is safe to show the tenant.
func (l *Allowlist) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &DialError{Addr: addr, Reason: "network " + network + " is not allowed", Err: ErrDisallowedTarget}
	}
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, &DialError{Addr: addr, Reason: "not host:port", Err: err}
	}
	if len(l.rules) == 0 {
		return nil, &DialError{Addr: addr, Reason: "refused by " + PolicyName + " (it is unset, so no address is allowed)",
			Err: ErrDisallowedTarget}
	}
	_, literalErr := netip.ParseAddr(host)
	isName := literalErr != nil
	trusted := isName && l.nameAllowed(NormalizeName(host), port)
	d := net.Dialer{
		Timeout: dialTimeout, KeepAlive: dialKeepAlive, Resolver: l.resolver,
		Control: func(_, address string, _ syscall.RawConn) error {
			if trusted {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Addr: addr, Why: "unexpected address"}
			}
			if v := l.verdict(ap.Addr(), ap.Port()); !v.ok() {
				why := v.literal()
				if isName {
					why = v.resolved()
				}
				return &RefusedError{Addr: addr, Why: why}
			}
			return nil
		},
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, &DialError{Addr: addr, Reason: dialReason(err), Err: err}
	}
	return conn, nil
}

// DialError is a failed dial. Its message names the address as configured
// (never what a name resolved to) and a short cause, and holds no library
// text, so it may be recorded where the tenant reads it.
type DialError struct {
	Addr   string
	Reason string
	Err    error
}

func (e *DialError) Error() string { return "dial " + e.Addr + ": " + e.Reason }

func (e *DialError) Unwrap() error { return e.Err }

func dialReason(err error) string {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return "refused by " + PolicyName + " (" + refused.Why + ")"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return "no such host"
		}
		return "name resolution failed"
	}
	if r, ok := NetReason(err); ok {
		return r
	}
	return "failed"
}

// NetReason names a network failure briefly ("connection refused", "timed
// out"…), or reports false for an error that is none it knows.
func NetReason(err error) (string, bool) {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset", true
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable", true
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable", true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "connection closed", true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out", true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out", true
	}
	return "", false
}
