package adapter

import (
	"errors"
	"net/netip"
)

// ErrDisallowedTarget is wrapped by every refusal of the allow list (create
// time and dial time), so callers can tell "the operator does not allow this
// address" from a network failure.
var ErrDisallowedTarget = errors.New("target address not allowed")

// specialRange is an address range a tenant must never reach unless an
// operator's entry lies inside it (Allowlist).
type specialRange struct {
	prefix netip.Prefix
	class  string // how a message names an address of it
}

// specialRanges are the non-public unicast ranges and the non-unicast ones.
// They do not overlap, so an address has at most one.
var specialRanges = []specialRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"}, // RFC 1122; 0.x connects to localhost on Linux
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"}, // RFC 6598, internal to providers
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"}, // holds 169.254.169.254, the cloud metadata endpoint
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"}, // RFC 4193 unique local
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// nat64 is RFC 6052's well-known prefix: its addresses embed an IPv4 address
// that a NAT64 gateway connects to.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// normalize is the address the packets really go to: without an IPv6 zone,
// an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as its IPv4 address, and a
// NAT64 address that embeds a non-public IPv4 address as that address (so
// 64:ff9b::7f00:1 is judged as 127.0.0.1, the host it reaches).
func normalize(ip netip.Addr) netip.Addr {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if _, _, special := classify(v4); special {
			return v4
		}
	}
	return ip
}

// classify returns the special range holding a normalized ip and how to name
// it, or special false for a public unicast address.
func classify(ip netip.Addr) (rng netip.Prefix, class string, special bool) {
	for _, r := range specialRanges {
		if r.prefix.Contains(ip) {
			if ip.IsUnspecified() {
				return r.prefix, "unspecified", true
			}
			return r.prefix, r.class, true
		}
	}
	return netip.Prefix{}, "", false
}

// within reports whether every address of p is in rng.
func within(p, rng netip.Prefix) bool {
	return p.Addr().Is4() == rng.Addr().Is4() && p.Bits() >= rng.Bits() && rng.Contains(p.Addr())
}
