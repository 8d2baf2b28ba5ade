package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

// EnvAdapterAllow names where pull adapters may connect.
//
// SWITCHBOARD_ADAPTER_ALLOW is a comma-separated list of entries, each a
// target optionally followed by ":port" (1–65535; without it every port):
//
//	redis.internal:6379   a DNS name (any case; a trailing dot is ignored)
//	*.redis.internal      every name below redis.internal (not the name itself)
//	10.1.2.3:6379         an IPv4 address
//	10.0.0.0/8            an IPv4 range (CIDR, host bits zero)
//	[fd00::1]:6379        an IPv6 address, always in brackets
//	[fd00::]/8            an IPv6 range; with a port: [fd00::]/8:6379
//
// An adapter's address (its config's addr) is allowed only if an entry
// matches it, port included:
//
//   - a name entry matches that name as the adapter writes it, and trusts
//     DNS for it: whatever it resolves to is dialed, private or loopback
//     included. List only names whose records you control.
//   - an address entry matches the addresses of its range. An address in a
//     special range — loopback, private (RFC 1918, RFC 4193), link-local
//     (with the cloud metadata endpoint 169.254.169.254), carrier-grade NAT,
//     this-network and unspecified, multicast, broadcast — is matched only
//     by an entry inside that range: 10.0.0.0/8 or 10.1.2.3 allow 10.1.2.3,
//     but 0.0.0.0/0 allows every public IPv4 address and none of those.
//   - any other name is resolved: it is allowed only when every address it
//     resolves to is allowed by an address entry.
//
// Every connection is checked again on the address actually dialed, after
// DNS resolution, so a name that resolves elsewhere later, or an adapter
// stored before the list changed, is refused.
//
// Unset (or blank) allows nothing: pull adapters cannot be created or
// connect until the operator says where their sources are. "Public
// addresses by default" would still let any tenant make every node connect
// to any host on the internet, on any port, from the deployment's own
// addresses (its public IPs included, and hosts that trust them); a
// demanding operator names the servers instead. For development with the
// local Redis: SWITCHBOARD_ADAPTER_ALLOW=127.0.0.1:6379.
const EnvAdapterAllow = "SWITCHBOARD_ADAPTER_ALLOW"

// maxAdapterAllowEntries bounds the list: every create-time check and every
// dial walks it.
const maxAdapterAllowEntries = 256

// AdapterAllowEntry is one entry of SWITCHBOARD_ADAPTER_ALLOW: either Host
// or Prefix is set.
type AdapterAllowEntry struct {
	// Host is a DNS name in lower case without the trailing dot, or "*."
	// and such a name.
	Host string
	// Prefix is the addresses of an address entry (one address is a /32 or
	// /128).
	Prefix netip.Prefix
	// Port is the entry's one port; 0 means every port.
	Port uint16
}

// adapterAllow parses SWITCHBOARD_ADAPTER_ALLOW; unset leaves the list
// empty (nothing allowed).
func (p *parser) adapterAllow(name string, dst *Ingest) {
	if entries, ok := parse(p, name, ParseAdapterAllow, func(_ string, err error) error {
		return fmt.Errorf("%s: %w", name, err)
	}); ok {
		dst.AdapterAllow = entries
	}
}

// ParseAdapterAllow parses a SWITCHBOARD_ADAPTER_ALLOW value (see
// EnvAdapterAllow). The error names the offending entry.
func ParseAdapterAllow(v string) ([]AdapterAllowEntry, error) {
	parts := strings.Split(v, ",")
	if len(parts) > maxAdapterAllowEntries {
		return nil, fmt.Errorf("at most %d entries, got %d", maxAdapterAllowEntries, len(parts))
	}
	entries := make([]AdapterAllowEntry, 0, len(parts))
	for i, part := range parts {
		s := strings.TrimSpace(part)
		e, err := parseAllowEntry(s)
		if err != nil {
			return nil, fmt.Errorf("entry %d %q: %w", i+1, s, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

const allowSyntax = "(examples: redis.internal:6379, *.redis.internal, 10.1.2.3:6379, 10.0.0.0/8, [fd00::1]:6379, [fd00::]/8)"

func parseAllowEntry(s string) (AdapterAllowEntry, error) {
	if s == "" {
		return AdapterAllowEntry{}, fmt.Errorf("is empty %s", allowSyntax)
	}
	target, port, err := splitAllowPort(s)
	if err != nil {
		return AdapterAllowEntry{}, err
	}
	e := AdapterAllowEntry{Port: port}
	switch {
	case strings.HasPrefix(target, "["):
		e.Prefix, err = allowIPv6(target)
	case strings.ContainsAny(target, "/") || looksNumeric(target):
		e.Prefix, err = allowIPv4(target)
	default:
		e.Host, err = allowName(target)
	}
	return e, err
}

// splitAllowPort splits an optional ":port" off; a bare IPv6 address
// (more than one colon outside brackets) is refused as ambiguous.
func splitAllowPort(s string) (string, uint16, error) {
	rest := s
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("has no closing bracket %s", allowSyntax)
		}
		rest = s[end:]
	}
	switch strings.Count(rest, ":") {
	case 0:
		return s, 0, nil
	case 1:
	default:
		return "", 0, fmt.Errorf("an IPv6 address goes in brackets %s", allowSyntax)
	}
	i := strings.LastIndex(s, ":")
	target := s[:i]
	n, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("port %q must be a number from 1 to 65535", s[i+1:])
	}
	return target, uint16(n), nil
}

// allowIPv4 parses "a.b.c.d" or "a.b.c.d/n".
func allowIPv4(s string) (netip.Prefix, error) {
	p, err := parsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("is not an IPv4 address or range %s", allowSyntax)
	}
	return p, checkMasked(p)
}

// allowIPv6 parses "[addr]" or "[addr]/n".
func allowIPv6(s string) (netip.Prefix, error) {
	end := strings.Index(s, "]")
	inner, bits := s[1:end], s[end+1:]
	if bits != "" && !strings.HasPrefix(bits, "/") {
		return netip.Prefix{}, fmt.Errorf("has text after the brackets %s", allowSyntax)
	}
	p, err := parsePrefix(inner + bits)
	switch {
	case err != nil || !p.Addr().Is6():
		return netip.Prefix{}, fmt.Errorf("is not an IPv6 address or range %s", allowSyntax)
	case p.Addr().Is4In6():
		return netip.Prefix{}, fmt.Errorf("is an IPv4-mapped address: write the IPv4 form")
	}
	return p, checkMasked(p)
}

// parsePrefix parses an address (as a single-address prefix) or a CIDR;
// zones are refused.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("zone not allowed")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func checkMasked(p netip.Prefix) error {
	if m := p.Masked(); m != p {
		return fmt.Errorf("has bits set past the prefix length: did you mean %s?", m)
	}
	return nil
}

// looksNumeric reports a target made of digits and dots only: an IPv4
// address, never a name (a DNS name's last label is not numeric).
func looksNumeric(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

// allowName validates and normalizes a DNS name, or "*." and one.
func allowName(s string) (string, error) {
	name := strings.TrimSuffix(strings.ToLower(s), ".")
	if name == "*" {
		return "", fmt.Errorf("a bare * would allow any name: name the domain (*.redis.internal), or allow addresses (0.0.0.0/0 is every public IPv4 address)")
	}
	base, _ := strings.CutPrefix(name, "*.")
	if !textcheck.DNSName(base) {
		return "", fmt.Errorf("is not a DNS name (labels are 1-63 letters, digits, '-' or '_', not starting or ending with '-') %s", allowSyntax)
	}
	return name, nil
}

// String is the entry in the variable's syntax.
func (e AdapterAllowEntry) String() string {
	target := e.Host
	if e.Prefix.IsValid() {
		a := e.Prefix.Addr()
		target = a.String()
		if a.Is6() {
			target = "[" + target + "]"
		}
		if !e.Prefix.IsSingleIP() {
			target += "/" + strconv.Itoa(e.Prefix.Bits())
		}
	}
	if e.Port != 0 {
		target += ":" + strconv.Itoa(int(e.Port))
	}
	return target
}
