package adapter

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClassify: every special range is found, with the IPv4 address behind
// an IPv4-mapped or NAT64 form; public addresses are not special.
func TestClassify(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"8.8.8.8":                "",
		"2606:4700:4700::1111":   "",
		"100.128.0.1":            "",
		"::ffff:8.8.8.8":         "",
		"64:ff9b::808:808":       "", // NAT64 of 8.8.8.8
		"127.0.0.1":              "loopback",
		"127.255.0.9":            "loopback",
		"::1":                    "loopback",
		"10.1.2.3":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"fd00::1":                "private",
		"169.254.169.254":        "link-local",
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local",
		"0.0.0.0":                "unspecified",
		"0.1.2.3":                "this-network",
		"::":                     "unspecified",
		"224.0.0.1":              "multicast",
		"ff02::1":                "multicast",
		"100.64.0.1":             "carrier-grade NAT",
		"100.127.255.255":        "carrier-grade NAT",
		"255.255.255.255":        "broadcast",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:169.254.169.254": "link-local",
		"64:ff9b::a00:1":         "private", // NAT64 of 10.0.0.1
		"64:ff9b::7f00:1":        "loopback",
	}
	for addr, want := range cases {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			_, class, special := classify(normalize(netip.MustParseAddr(addr)))
			require.Equal(t, want, class)
			require.Equal(t, want != "", special)
		})
	}
}
