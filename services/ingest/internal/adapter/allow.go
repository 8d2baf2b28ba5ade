package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// PolicyName is the operator's setting an Allowlist comes from. Refusals
// name it, so a tenant knows what the operator would have to change.
const PolicyName = "SWITCHBOARD_ADAPTER_ALLOW"

// resolveTimeout bounds the DNS lookup of a create-time check.
const resolveTimeout = 3 * time.Second

// AllowRule is one operator entry: a DNS name or an address range, and
// optionally the one port it allows.
type AllowRule struct {
	// Host is a DNS name in lower case without a trailing dot, or "*." and
	// a name for every name below it (not the name itself). Empty for an
	// address rule.
	Host string
	// Prefix is the addresses an address rule allows (one address is a /32
	// or /128). Invalid for a name rule.
	Prefix netip.Prefix
	// Port is the only port the rule allows; 0 allows every port.
	Port uint16
}

func (r AllowRule) port(p uint16) bool { return r.Port == 0 || r.Port == p }

func (r AllowRule) name(name string) bool {
	if suffix, ok := strings.CutPrefix(r.Host, "*."); ok {
		return strings.HasSuffix(name, "."+suffix)
	}
	return r.Host != "" && name == r.Host
}

// Allowlist is the operator's rule for where pull adapters may connect. An
// address is allowed only when a rule names it:
//
//   - a name rule allows that name (and port). It trusts DNS for the name:
//     whatever the name resolves to is dialed, private or loopback included,
//     so list only names whose records the operator controls;
//   - an address rule allows the addresses of its prefix (and port), with
//     one restriction: an address in a special range (loopback, private,
//     link-local with the cloud metadata endpoint, carrier-grade NAT,
//     this-network and unspecified, multicast, broadcast) is allowed only by
//     a rule that lies inside that range. 10.0.0.0/8 or 10.1.2.3 allow
//     10.1.2.3; 0.0.0.0/0 allows every public IPv4 address and none of
//     those.
//
// Any other name is resolved and allowed only when every address it
// resolves to is allowed by an address rule; the dial checks the address it
// actually connects to again (DialContext), so a name that resolves
// elsewhere by then (DNS rebinding) is refused. No rules allow nothing.
type Allowlist struct {
	rules    []AllowRule
	resolver *net.Resolver
}

// NewAllowlist returns the allow list of rules. resolver resolves names for
// checks and dials; nil means net.DefaultResolver.
func NewAllowlist(rules []AllowRule, resolver *net.Resolver) *Allowlist {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return &Allowlist{rules: append([]AllowRule(nil), rules...), resolver: resolver}
}

// RefusedError is a refusal by the allow list. Its message is safe for the
// tenant who chose the address.
type RefusedError struct {
	Addr string // as the adapter's config has it
	Why  string // "loopback", "it resolves to a private address", "port 5432 is not listed"…
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is not allowed by %s (%s)", e.Addr, PolicyName, e.Why)
}

// Unwrap makes a refusal match ErrDisallowedTarget.
func (e *RefusedError) Unwrap() error { return ErrDisallowedTarget }

// ResolveError is a create-time check that could not resolve the name.
type ResolveError struct {
	Host     string
	NotFound bool // the name does not exist; otherwise DNS failed, maybe briefly
	Err      error
}

func (e *ResolveError) Error() string {
	if e.NotFound {
		return "the name " + e.Host + " does not resolve"
	}
	return "the name " + e.Host + " cannot be resolved now"
}

func (e *ResolveError) Unwrap() error { return e.Err }

// Check reports whether addr ("host:port") may be connected to: nil, a
// *RefusedError, a *ResolveError, or an error for an address that is not
// host:port. It gives the early, readable answer at create and update time;
// the dial checks again (DialContext).
func (l *Allowlist) Check(ctx context.Context, addr string) error {
	_, _, err := l.check(ctx, addr)
	return err
}

// check is Check, also returning the addresses it judged (the literal, or
// what the name resolved to) and whether a name rule allowed the name
// without resolving it (ips is then nil).
func (l *Allowlist) check(ctx context.Context, addr string) (ips []netip.Addr, byName bool, err error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, false, err
	}
	if len(l.rules) == 0 {
		return nil, false, &RefusedError{Addr: addr, Why: "it is unset, so no address is allowed"}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if v := l.verdict(ip, port); !v.ok() {
			return nil, false, &RefusedError{Addr: addr, Why: v.literal()}
		}
		return []netip.Addr{ip}, false, nil
	}
	name := NormalizeName(host)
	if l.nameAllowed(name, port) {
		return nil, true, nil
	}
	if !l.hasAddressRules() {
		return nil, false, &RefusedError{Addr: addr, Why: "no entry names it"}
	}
	ips, err = l.lookup(ctx, name)
	if err != nil {
		return nil, false, err
	}
	// Every address must pass: the dialer may pick any of them.
	for _, ip := range ips {
		if v := l.verdict(ip, port); !v.ok() {
			return nil, false, &RefusedError{Addr: addr, Why: v.resolved()}
		}
	}
	return ips, false, nil
}

// lookup resolves name to at least one address, or returns a *ResolveError.
func (l *Allowlist) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := l.resolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		var dnsErr *net.DNSError
		return nil, &ResolveError{Host: name, NotFound: errors.As(err, &dnsErr) && dnsErr.IsNotFound, Err: err}
	}
	if len(ips) == 0 {
		return nil, &ResolveError{Host: name, NotFound: true}
	}
	return ips, nil
}

// NormalizeName is a DNS name as rules and source keys compare it: lower
// case, without the trailing dot.
func NormalizeName(host string) string { return strings.TrimSuffix(strings.ToLower(host), ".") }

func (l *Allowlist) nameAllowed(name string, port uint16) bool {
	for _, r := range l.rules {
		if r.name(name) && r.port(port) {
			return true
		}
	}
	return false
}

func (l *Allowlist) hasAddressRules() bool {
	for _, r := range l.rules {
		if r.Prefix.IsValid() {
			return true
		}
	}
	return false
}

// verdict is the allow list's answer for one address and port.
type verdict struct {
	class    string // the special range's class; "" for a public address
	allowed  bool
	portMiss bool // a rule allows the address, but not on this port
	port     uint16
}

func (v verdict) ok() bool { return v.allowed }

// literal explains a refusal of an address the tenant wrote.
func (v verdict) literal() string {
	switch {
	case v.portMiss && v.class != "":
		return v.class + "; port " + strconv.Itoa(int(v.port)) + " is not listed for it"
	case v.portMiss:
		return "port " + strconv.Itoa(int(v.port)) + " is not listed for it"
	case v.class != "":
		return v.class
	}
	return "no entry names it"
}

// resolved explains a refusal of an address a name resolved to, without
// the address: the tenant learns the class, not the operator's topology.
func (v verdict) resolved() string {
	switch {
	case v.portMiss && v.class != "":
		return "it resolves to a " + v.class + " address; port " + strconv.Itoa(int(v.port)) + " is not listed for it"
	case v.portMiss:
		return "port " + strconv.Itoa(int(v.port)) + " is not listed for the address it resolves to"
	case v.class != "":
		return "it resolves to a " + v.class + " address"
	}
	return "it resolves to an address no entry names"
}

func (l *Allowlist) verdict(ip netip.Addr, port uint16) verdict {
	ip = normalize(ip)
	rng, class, special := classify(ip)
	v := verdict{class: class, port: port}
	for _, r := range l.rules {
		if !r.Prefix.IsValid() || !r.Prefix.Contains(ip) || (special && !within(r.Prefix, rng)) {
			continue
		}
		if !r.port(port) {
			v.portMiss = true
			continue
		}
		v.allowed = true
		return v
	}
	return v
}

// splitAddr splits "host:port" with a port of 1–65535.
func splitAddr(addr string) (string, uint16, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("adapter address %q is not host:port", addr)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("adapter address %q has no valid port", addr)
	}
	return host, uint16(n), nil
}
