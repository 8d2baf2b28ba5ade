package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command answers --help (and -h) on stdout, exit 0, with its
// synopsis and every flag it takes, without reading configuration or
// touching the network.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	for cmd, flags := range map[string][]string{
		"serve":          {"-announce"},
		"serve all":      {"-announce"},
		"migrate":        nil,
		"migrate up":     nil,
		"token":          nil,
		"token create":   {"-admin", "-email", "-name", "-promote"},
		"token generate": nil,
		"version":        nil,
		"mcp":            {"-addr", "-cacert", "-tls"},
		"bench":          nil,
		"bench queue":    {"-todos", "-workers", "-buffer", "-addr", "-queue", "-batch", "-trickle", "-cacert", "-tls"},
		"bench ingest":   {"-requests", "-concurrency", "-url", "-body-bytes", "-queue", "-cacert", "-tls"},
		"bench realtime": {"-publishers", "-subscribers", "-rate", "-addrs", "-duration", "-warmup", "-size", "-ephemeral", "-channel", "-cacert", "-tls"},
	} {
		for _, help := range []string{"--help", "-h"} {
			var out bytes.Buffer
			args := append(strings.Fields(cmd), help)
			err := Run(t.Context(), args, &out, noEnv)
			require.NoError(t, err, "%s %s", cmd, help)
			require.Equal(t, 0, exitCode(err), cmd)
			text := out.String()
			require.Contains(t, text, "Usage: switchboard "+strings.Fields(cmd)[0], cmd)
			if len(flags) == 0 && cmd != "token" && cmd != "bench" {
				require.Contains(t, text, "Flags: none", cmd)
			}
			for _, f := range flags {
				require.Regexp(t, `(?m)^  `+f+`\b`, text, "%s %s lists %s", cmd, help, f)
			}
		}
	}
	// token's flags are create's: its help names them instead of "none".
	var token bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"token", "--help"}, &token, noEnv))
	require.NotContains(t, token.String(), "Flags: none")
	for _, f := range []string{"--admin", "--email", "--name", "--promote", "switchboard token create --help"} {
		require.Contains(t, token.String(), f)
	}
	// bench's flags are its targets': its help points at them.
	var bench bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"bench", "--help"}, &bench, noEnv))
	require.NotContains(t, bench.String(), "Flags: none")
	require.Contains(t, bench.String(), "switchboard bench queue --help")
	var out bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"--help"}, &out, noEnv))
	require.Contains(t, out.String(), "Every command answers --help")
}

// A flag after the positional argument is parsed too, and an unknown flag
// is a usage error (exit 2) naming it.
func TestFlagsAnywhereAndUnknownFlags(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	err := Run(t.Context(), []string{"serve", "all", "--bogus"}, &bytes.Buffer{}, noEnv)
	require.Equal(t, 2, ExitCode(err))
	require.ErrorContains(t, err, "bogus")
	err = Run(t.Context(), []string{"serve", "queue", "gateway"}, &bytes.Buffer{}, noEnv)
	require.Equal(t, 2, ExitCode(err))
	err = Run(t.Context(), []string{"migrate", "sideways"}, &bytes.Buffer{}, noEnv)
	require.Equal(t, 2, ExitCode(err))
	err = Run(t.Context(), []string{"token", "mint"}, &bytes.Buffer{}, noEnv)
	require.Equal(t, 2, ExitCode(err))
	require.ErrorContains(t, err, `unknown token command "mint"`)
	err = Run(t.Context(), []string{"mcp"}, &bytes.Buffer{}, noEnv)
	require.Equal(t, 2, ExitCode(err), "mcp without SWITCHBOARD_TOKEN")
	require.ErrorContains(t, err, "SWITCHBOARD_TOKEN")
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	return ExitCode(err)
}

// The banner `serve --announce` prints names both addresses as commands to
// paste, plaintext or TLS.
func TestBanner(t *testing.T) {
	t.Parallel()
	plain := banner("127.0.0.1:9090", "127.0.0.1:8080", false)
	require.Contains(t, plain, "grpcurl -plaintext 127.0.0.1:9090 list")
	require.Contains(t, plain, "curl http://127.0.0.1:8080/health")
	tls := banner("10.0.0.1:9090", "10.0.0.1:8443", true)
	require.Contains(t, tls, "grpcurl -cacert CA.pem 10.0.0.1:9090 list")
	require.Contains(t, tls, "https://10.0.0.1:8443/")
}
