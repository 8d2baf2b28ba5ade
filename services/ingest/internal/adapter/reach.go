package adapter

import (
	"context"
	"net/netip"
)

// Reach checks addr as Check does and, when it is allowed, returns every
// address it reaches now, with its port: the address itself, or each one
// the name resolves to. A name that a name rule allows is not resolved by
// Check (the rule trusts DNS for it); Reach resolves it anyway, and when
// that fails returns no address rather than an error: the name reaches
// nothing now, and the dial checks the address it reaches later. A name
// under "localhost" also reaches this host's loopback, whatever DNS says.
//
// It is what ownership of a source is compared on: two spellings of one
// server ("localhost:6379", "127.0.0.1:6379", "LOCALHOST.:6379") reach
// the same addresses.
func (l *Allowlist) Reach(ctx context.Context, addr string) ([]netip.AddrPort, error) {
	ips, byName, err := l.check(ctx, addr)
	if err != nil {
		return nil, err
	}
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	name := NormalizeName(host)
	if byName {
		ips, _ = l.lookup(ctx, name)
	}
	if IsLocalName(name) {
		ips = append(ips, netip.IPv6Loopback())
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), port)) // the resolver may answer in IPv4-mapped form
	}
	return out, nil
}
