package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestLoadPprof(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Empty(t, c.Pprof.Addr, "default: no profiler")

	c, err = config.Load(env(map[string]string{config.EnvPprofAddr: "127.0.0.1:6060"}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6060", c.Pprof.Addr)

	for _, bad := range []string{"6060", "host:port", "127.0.0.1:70000"} {
		_, err = config.Load(env(map[string]string{config.EnvPprofAddr: bad}))
		require.ErrorContains(t, err, config.EnvPprofAddr+":", bad)
	}
	_, err = config.Load(env(map[string]string{config.EnvPprofAddr: "127.0.0.1:8080"}))
	require.ErrorContains(t, err, config.EnvPprofAddr+":", "the HTTP listener's own address")
	_, err = config.Load(env(map[string]string{config.EnvMetricsAddr: "127.0.0.1:9100", config.EnvPprofAddr: "127.0.0.1:9100"}))
	require.ErrorContains(t, err, config.EnvPprofAddr+":", "the metrics listener's address")
}
