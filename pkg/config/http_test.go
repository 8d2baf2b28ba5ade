package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/grpcserver"
)

func TestLoadHTTPLimitsDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, config.HTTPLimits{MaxBody: 4 << 20, ReadTimeout: 30 * time.Second, MaxConns: 4096}, c.HTTPLimits)
	require.Equal(t, grpcserver.MaxRecvMsgSize, config.DefaultHTTPMaxBody,
		"a REST body the gRPC server would refuse is refused at the edge, and no smaller one is")
}

func TestLoadHTTPLimits(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int64{"2048": 2048, "512KiB": 512 << 10, "8MiB": 8 << 20, "1 MiB": 1 << 20} {
		c, err := config.Load(env(map[string]string{config.EnvHTTPMaxBody: v}))
		require.NoError(t, err, v)
		require.Equal(t, want, c.HTTPLimits.MaxBody, v)
	}
	c, err := config.Load(env(map[string]string{config.EnvHTTPReadTimeout: "5s", config.EnvHTTPMaxConns: "100"}))
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, c.HTTPLimits.ReadTimeout)
	require.Equal(t, 100, c.HTTPLimits.MaxConns)
}

func TestLoadHTTPLimitsRefusesNonsense(t *testing.T) {
	t.Parallel()
	for name, value := range map[string][]string{
		config.EnvHTTPMaxBody:     {"big", "-1", "4MB", "12", "65MiB", "99999999999999999999", "9223372036854775807KiB"},
		config.EnvHTTPReadTimeout: {"30", "0s", "-1s"},
		config.EnvHTTPMaxConns:    {"many", "0", "-5"},
	} {
		for _, v := range value {
			_, err := config.Load(env(map[string]string{name: v}))
			require.ErrorContains(t, err, name+":", "%s=%q", name, v)
		}
	}
}
