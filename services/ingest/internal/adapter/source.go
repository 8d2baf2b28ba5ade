package adapter

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrSourceTaken is a refusal to read a source because another owner's
// adapter already reads it: found when an adapter is configured (the
// addresses its name reaches) or when it connects (the address dialed, and
// the server's own identity). Its text is what the adapter's owner reads,
// the same words whichever check found it; it never names the other owner
// or its adapter.
var ErrSourceTaken = errors.New("another owner's adapter already reads this Redis stream (server, db and stream)")

// LoopbackHost is how SourceHost names every address of this host.
const LoopbackHost = "loopback"

// SourceHost is how an address is compared as the server a source is read
// from: the address the packets reach, in one spelling. An IPv4-mapped or
// NAT64 address is its IPv4 address, the zone is dropped, and every address
// that reaches this host's own services is LoopbackHost: 127.0.0.0/8, ::1,
// and the unspecified and this-network addresses (Linux connects those to
// the host itself). One Redis listening on 127.0.0.1 and ::1 (its default
// bind) is one server, however a tenant spells it; two servers on one port
// of two loopback addresses are rare enough to share a key.
func SourceHost(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if ip.IsLoopback() || ip.IsUnspecified() || thisNetwork.Contains(ip) {
		return LoopbackHost
	}
	return ip.String()
}

// thisNetwork is 0.0.0.0/8 (RFC 1122), which Linux connects to the host.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// SourceAddr is SourceHost with the port, as "host:port".
func SourceAddr(ap netip.AddrPort) string {
	return net.JoinHostPort(SourceHost(ap.Addr()), strconv.Itoa(int(ap.Port())))
}

// IsLocalName reports whether a DNS name (normalized: NormalizeName) means
// this host whatever DNS says: "localhost" and the names below it (RFC
// 6761 reserves them for loopback).
func IsLocalName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}
