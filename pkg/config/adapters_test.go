package config_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

// TestLoadAdapterAllowDefault: unset or blank allows nothing.
func TestLoadAdapterAllowDefault(t *testing.T) {
	t.Parallel()
	for _, v := range []*string{nil, ptr(""), ptr("  ")} {
		kv := map[string]string{}
		if v != nil {
			kv[config.EnvAdapterAllow] = *v
		}
		c, err := config.Load(env(kv))
		require.NoError(t, err)
		require.Empty(t, c.Ingest.AdapterAllow)
	}
}

func ptr(s string) *string { return &s }

func TestLoadAdapterAllowEntries(t *testing.T) {
	t.Parallel()
	host := func(h string, port uint16) config.AdapterAllowEntry {
		return config.AdapterAllowEntry{Host: h, Port: port}
	}
	prefix := func(p string, port uint16) config.AdapterAllowEntry {
		return config.AdapterAllowEntry{Prefix: netip.MustParsePrefix(p), Port: port}
	}
	cases := map[string]config.AdapterAllowEntry{
		"redis.internal:6379":  host("redis.internal", 6379),
		"Redis.Internal.":      host("redis.internal", 0),
		"localhost:6379":       host("localhost", 6379),
		"*.redis.internal":     host("*.redis.internal", 0),
		"my_redis-1.svc:1":     host("my_redis-1.svc", 1),
		"10.1.2.3:6379":        prefix("10.1.2.3/32", 6379),
		"127.0.0.1":            prefix("127.0.0.1/32", 0),
		"10.0.0.0/8":           prefix("10.0.0.0/8", 0),
		"10.0.0.0/8:6379":      prefix("10.0.0.0/8", 6379),
		"0.0.0.0/0":            prefix("0.0.0.0/0", 0),
		"[fd00::1]:6379":       prefix("fd00::1/128", 6379),
		"[::1]":                prefix("::1/128", 0),
		"[fd00::]/8":           prefix("fd00::/8", 0),
		"[fd00::]/8:6379":      prefix("fd00::/8", 6379),
		"[::]/0":               prefix("::/0", 0),
		"  10.0.0.0/8  ":       prefix("10.0.0.0/8", 0),
		"redis.internal:06379": host("redis.internal", 6379),
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			c, err := config.Load(env(map[string]string{config.EnvAdapterAllow: in}))
			require.NoError(t, err)
			require.Equal(t, []config.AdapterAllowEntry{want}, c.Ingest.AdapterAllow)
		})
	}

	c, err := config.Load(env(map[string]string{config.EnvAdapterAllow: "redis.internal:6379, 10.0.0.0/8,[fd00::]/8"}))
	require.NoError(t, err)
	require.Len(t, c.Ingest.AdapterAllow, 3)
	var shown []string
	for _, e := range c.Ingest.AdapterAllow {
		shown = append(shown, e.String())
	}
	require.Equal(t, []string{"redis.internal:6379", "10.0.0.0/8", "[fd00::]/8"}, shown)
}

// TestLoadAdapterAllowRefuses: a bad entry stops the process with one line
// naming the variable and the entry.
func TestLoadAdapterAllowRefuses(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"10.0.0.0/8,":                    `entry 2 "": is empty`,
		"10.0.0.0/8,,redis":              `entry 2 "": is empty`,
		"redis,10.0.0.0/33":              `entry 2 "10.0.0.0/33": is not an IPv4 address or range`,
		"*":                              `a bare * would allow any name`,
		"*.":                             `a bare * would allow any name`,
		"10.0.0.0/33":                    `is not an IPv4 address or range`,
		"10.1.2.3/8":                     `did you mean 10.0.0.0/8?`,
		"10.0.0":                         `is not an IPv4 address or range`,
		"300.1.1.1":                      `is not an IPv4 address or range`,
		"fd00::1":                        `an IPv6 address goes in brackets`,
		"fd00::/8":                       `an IPv6 address goes in brackets`,
		"[fd00::1":                       `has no closing bracket`,
		"[fd00::1]x":                     `has text after the brackets`,
		"[10.0.0.1]":                     `is not an IPv6 address or range`,
		"[::ffff:10.0.0.1]":              `IPv4-mapped`,
		"[fe80::1%eth0]":                 `is not an IPv6 address or range`,
		"[fd00::1]/8":                    `did you mean fd00::/8?`,
		"redis:0":                        `port "0" must be a number from 1 to 65535`,
		"redis:65536":                    `port "65536"`,
		"redis:":                         `port ""`,
		"redis:http":                     `port "http"`,
		"-redis.internal":                `is not a DNS name`,
		"redis..internal":                `is not a DNS name`,
		"red is":                         `is not a DNS name`,
		"user@redis.internal":            `is not a DNS name`,
		"redis.internal/x":               `is not an IPv4 address or range`,
		strings.Repeat("a", 64):          `is not a DNS name`,
		strings.Repeat("a.", 127) + "aa": `is not a DNS name`,
		strings.Repeat("10.0.0.1,", 256) + "10.0.0.1": `at most 256 entries, got 257`,
	}
	for in, want := range cases {
		t.Run(in[:min(len(in), 40)], func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(env(map[string]string{config.EnvAdapterAllow: in}))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), config.EnvAdapterAllow+": "), err.Error())
			require.Contains(t, err.Error(), want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}
