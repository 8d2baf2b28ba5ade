package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrDisallowedTarget is returned (wrapped) when a host or address is in a
// range an adapter must not reach unless private targets are explicitly allowed.
var ErrDisallowedTarget = errors.New("target address not allowed")

// Ranges that netip's predicates do not cover.
var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598 carrier-grade NAT, internal to providers
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122 "this network"; 0.x connects to localhost on Linux
	nat64       = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052: embeds an IPv4 address that a NAT64 gateway reaches
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// disallowReason returns why ip is not a public unicast address, or "" if it
// is. IPv4-mapped IPv6 (::ffff:a.b.c.d) and NAT64 forms are judged by the IPv4
// address they carry, since that is where the packets end up.
func disallowReason(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		if r := disallowReason(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); r != "" {
			return "NAT64 of " + r
		}
	}
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		// Includes 169.254.169.254, the cloud metadata endpoint.
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(ip):
		return "carrier-grade NAT"
	case thisNetwork.Contains(ip):
		return "this-network"
	case ip == broadcast:
		return "broadcast"
	}
	return ""
}

// CheckAddr reports whether ip may be connected to: nil for a public unicast
// address, a wrapped ErrDisallowedTarget otherwise.
func CheckAddr(ip netip.Addr) error {
	if r := disallowReason(ip); r != "" {
		return fmt.Errorf("%w: %s is %s", ErrDisallowedTarget, ip, r)
	}
	return nil
}

// CheckTarget resolves host (a name or an IP literal, IPv6 optionally in
// brackets) and rejects it when any of its addresses is loopback, private
// (RFC 1918, RFC 4193), link-local (including cloud metadata), unspecified,
// multicast, carrier-grade NAT, or an IPv4-mapped form of those, unless
// allowPrivate. Every address must pass, not just one, because the dialer may
// pick any of them. A nil resolver means net.DefaultResolver.
//
// CheckTarget gives early, readable configuration errors; it cannot stop DNS
// rebinding (the name may resolve differently at connect time), so the
// connection itself must also use DialControl.
func CheckTarget(ctx context.Context, host string, allowPrivate bool, resolver *net.Resolver) error {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return errors.New("check target: empty host")
	}
	if allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return CheckAddr(ip)
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("check target: resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("check target: %q resolved to no address", host)
	}
	for _, ip := range addrs {
		if err := CheckAddr(ip); err != nil {
			return fmt.Errorf("check target %q: %w", host, err)
		}
	}
	return nil
}

// DialControl returns a net.Dialer.Control function that applies the
// CheckTarget rule to the address actually being connected to, after DNS
// resolution, so a name that resolves to a public address at check time and a
// private one at connect time (DNS rebinding) is still refused. With
// allowPrivate it allows everything.
func DialControl(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("dial control: %w", err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("dial control: %s address %q is not an IP: %w", network, address, err)
		}
		if err := CheckAddr(ip); err != nil {
			return fmt.Errorf("dial control: %w", err)
		}
		return nil
	}
}
