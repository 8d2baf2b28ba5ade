package adapter

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSourceHost: every spelling of one address is one host, and every
// address that reaches this host's own services is "loopback".
func TestSourceHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1":            "loopback",
		"127.0.0.2":            "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback",
		"64:ff9b::7f00:1":      "loopback", // NAT64 of 127.0.0.1
		"0.0.0.0":              "loopback", // Linux connects it to the host
		"0.1.2.3":              "loopback",
		"::":                   "loopback",
		"10.1.2.3":             "10.1.2.3",
		"::ffff:10.1.2.3":      "10.1.2.3",
		"64:ff9b::808:808":     "8.8.8.8",
		"fe80::1%eth0":         "fe80::1",
		"2001:DB8:0:0::1":      "2001:db8::1",
		"2606:4700:4700::1111": "2606:4700:4700::1111",
	} {
		require.Equal(t, want, SourceHost(netip.MustParseAddr(in)), in)
	}
	require.Equal(t, "[2001:db8::1]:6379", SourceAddr(netip.MustParseAddrPort("[2001:db8::1]:6379")))
	require.Equal(t, "loopback:6379", SourceAddr(netip.MustParseAddrPort("[::ffff:127.0.0.1]:6379")))
}

// TestReach: what an addr reaches, the check passed: the literal; every
// address a name resolves to, whether an address rule judged them or a
// name rule trusts the name; loopback for a name under localhost whatever
// DNS says; nothing (and no error) for a trusted name that does not
// resolve. A refused addr reaches nothing.
func TestReach(t *testing.T) {
	t.Parallel()
	loop := []AllowRule{prefixRule("127.0.0.0/8", 6379), prefixRule("::1/128", 6379), {Host: "redis.internal"}}
	cases := []struct {
		name     string
		addr     string
		resolves string // "" answers no address
		want     []string
	}{
		{"literal", "127.0.0.1:6379", "", []string{"127.0.0.1:6379"}},
		{"v6 literal", "[::1]:6379", "", []string{"[::1]:6379"}},
		{"resolved name", "cache.example:6379", "127.0.0.5", []string{"127.0.0.5:6379"}},
		{"trusted name", "redis.internal:7000", "10.9.8.7", []string{"10.9.8.7:7000"}},
		{"trusted name, unresolvable", "redis.internal:7000", "", []string{}},
		{"localhost", "localhost:6379", "127.0.0.1", []string{"127.0.0.1:6379", "[::1]:6379"}},
		{"below localhost", "a.localhost:6379", "127.0.0.1", []string{"127.0.0.1:6379", "[::1]:6379"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answer := netip.Addr{}
			if tc.resolves != "" {
				answer = netip.MustParseAddr(tc.resolves)
			}
			l := NewAllowlist(loop, fakeResolver(func() netip.Addr { return answer }))
			reach, err := l.Reach(t.Context(), tc.addr)
			require.NoError(t, err)
			got := make([]string, 0, len(reach))
			for _, ap := range reach {
				got = append(got, ap.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
	l := NewAllowlist(loop, fixedResolver(netip.MustParseAddr("127.0.0.1")))
	reach, err := l.Reach(t.Context(), "127.0.0.1:5432")
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	require.Nil(t, reach)
}
