package adapter

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func prefixRule(p string, port uint16) AllowRule {
	return AllowRule{Prefix: netip.MustParsePrefix(p), Port: port}
}

// TestCheckLiterals: an address the tenant writes is allowed only by a rule
// that covers it (and its port); a special range needs a rule inside it.
func TestCheckLiterals(t *testing.T) {
	t.Parallel()
	everyPublic := []AllowRule{prefixRule("0.0.0.0/0", 0), prefixRule("::/0", 0)}
	cases := []struct {
		name  string
		rules []AllowRule
		addr  string
		why   string // "" = allowed
	}{
		{"unset allows nothing", nil, "8.8.8.8:6379", "it is unset, so no address is allowed"},
		{"unset refuses loopback", nil, "127.0.0.1:5432", "it is unset"},
		{"public in 0.0.0.0/0", everyPublic, "8.8.8.8:6379", ""},
		{"public v6 in ::/0", everyPublic, "[2606:4700::1]:6379", ""},
		{"loopback not in 0.0.0.0/0", everyPublic, "127.0.0.1:5432", "loopback"},
		{"loopback v6 not in ::/0", everyPublic, "[::1]:6379", "loopback"},
		{"mapped loopback not in ::/0", everyPublic, "[::ffff:127.0.0.1]:6379", "loopback"},
		{"metadata not in 0.0.0.0/0", everyPublic, "169.254.169.254:80", "link-local"},
		{"private not in 0.0.0.0/0", everyPublic, "10.0.0.5:6379", "private"},
		{"cgnat not in 0.0.0.0/0", everyPublic, "100.64.0.1:6379", "carrier-grade NAT"},
		{"unspecified not in 0.0.0.0/0", everyPublic, "0.0.0.0:6379", "unspecified"},
		{"nat64 of private not in ::/0", everyPublic, "[64:ff9b::a00:1]:6379", "private"},
		{"private in its range", []AllowRule{prefixRule("10.0.0.0/8", 0)}, "10.1.2.3:6379", ""},
		{"private by one address", []AllowRule{prefixRule("10.1.2.3/32", 6379)}, "10.1.2.3:6379", ""},
		{"wrong port", []AllowRule{prefixRule("10.1.2.3/32", 6379)}, "10.1.2.3:5432", "private; port 5432 is not listed for it"},
		{"wrong public port", []AllowRule{prefixRule("8.8.8.8/32", 6379)}, "8.8.8.8:5432", "port 5432 is not listed for it"},
		{"other address of the range", []AllowRule{prefixRule("10.1.2.3/32", 6379)}, "10.1.2.4:6379", "private"},
		{"172.0.0.0/8 is wider than 172.16.0.0/12", []AllowRule{prefixRule("172.0.0.0/8", 0)}, "172.16.0.1:6379", "private"},
		{"but allows its public part", []AllowRule{prefixRule("172.0.0.0/8", 0)}, "172.1.0.1:6379", ""},
		{"loopback named", []AllowRule{prefixRule("127.0.0.1/32", 6379)}, "127.0.0.1:6379", ""},
		{"loopback named, other port", []AllowRule{prefixRule("127.0.0.1/32", 6379)}, "127.0.0.1:22", "loopback; port 22 is not listed for it"},
		{"ula range", []AllowRule{prefixRule("fd00::/8", 0)}, "[fd12::1]:6379", ""},
		{"v4 rule does not cover v6", []AllowRule{prefixRule("10.0.0.0/8", 0)}, "[fd12::1]:6379", "private"},
		{"public not listed", []AllowRule{prefixRule("10.0.0.0/8", 0)}, "8.8.8.8:6379", "no entry names it"},
		{"name rule does not cover an address", []AllowRule{{Host: "redis.internal"}}, "10.0.0.1:6379", "private"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := NewAllowlist(tc.rules, nil).Check(t.Context(), tc.addr)
			if tc.why == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrDisallowedTarget)
			var refused *RefusedError
			require.ErrorAs(t, err, &refused)
			require.Contains(t, refused.Why, tc.why)
			require.Contains(t, err.Error(), tc.addr+" is not allowed by SWITCHBOARD_ADAPTER_ALLOW (")
		})
	}
}

// TestCheckMessage: the refusal reads as the operator and tenant need it.
func TestCheckMessage(t *testing.T) {
	t.Parallel()
	err := NewAllowlist([]AllowRule{prefixRule("0.0.0.0/0", 0)}, nil).Check(t.Context(), "127.0.0.1:5432")
	require.EqualError(t, err, "127.0.0.1:5432 is not allowed by SWITCHBOARD_ADAPTER_ALLOW (loopback)")
}

// TestCheckNames: a name rule allows its name (and wildcard, port) without
// resolving it; any other name must resolve only to allowed addresses.
func TestCheckNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		rules    []AllowRule
		addr     string
		resolves string // what the fake DNS answers
		why      string // "" = allowed
	}{
		{"named", []AllowRule{{Host: "redis.internal", Port: 6379}}, "redis.internal:6379", "127.0.0.1", ""},
		{"named, any case and trailing dot", []AllowRule{{Host: "redis.internal"}}, "Redis.Internal.:6379", "10.0.0.1", ""},
		{"named, other port", []AllowRule{{Host: "redis.internal", Port: 6379}}, "redis.internal:22", "10.0.0.1", "no entry names it"},
		{"wildcard", []AllowRule{{Host: "*.internal"}}, "a.b.internal:6379", "10.0.0.1", ""},
		{"wildcard is not the apex", []AllowRule{{Host: "*.internal"}}, "internal:6379", "10.0.0.1", "no entry names it"},
		{"suffix is not a subdomain", []AllowRule{{Host: "*.internal"}}, "evilinternal:6379", "10.0.0.1", "no entry names it"},
		{"resolves into a listed range", []AllowRule{prefixRule("10.0.0.0/8", 6379)}, "redis.svc:6379", "10.0.0.7", ""},
		{"resolves to loopback", []AllowRule{prefixRule("0.0.0.0/0", 0)}, "evil.example:6379", "127.0.0.1", "it resolves to a loopback address"},
		{"resolves to metadata", []AllowRule{prefixRule("0.0.0.0/0", 0)}, "evil.example:80", "169.254.169.254", "it resolves to a link-local address"},
		{"resolves to v6 loopback", []AllowRule{prefixRule("::/0", 0)}, "evil.example:6379", "::1", "it resolves to a loopback address"},
		{"resolves outside the list", []AllowRule{prefixRule("10.0.0.0/8", 0)}, "pub.example:6379", "8.8.8.8", "it resolves to an address no entry names"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewAllowlist(tc.rules, fixedResolver(netip.MustParseAddr(tc.resolves)))
			err := l.Check(t.Context(), tc.addr)
			if tc.why == "" {
				require.NoError(t, err)
				return
			}
			var refused *RefusedError
			require.ErrorAs(t, err, &refused)
			require.Contains(t, refused.Why, tc.why)
			require.NotContains(t, err.Error(), tc.resolves, "the tenant learns the class, not the address")
		})
	}
}

// TestCheckUnresolvable: a name that does not resolve cannot be checked,
// and says so.
func TestCheckUnresolvable(t *testing.T) {
	t.Parallel()
	l := NewAllowlist([]AllowRule{prefixRule("10.0.0.0/8", 0)}, fakeResolver(func() netip.Addr { return netip.Addr{} }))
	err := l.Check(t.Context(), "nowhere.example:6379")
	var re *ResolveError
	require.ErrorAs(t, err, &re)
	require.True(t, re.NotFound)
	require.EqualError(t, err, "the name nowhere.example does not resolve")
}
