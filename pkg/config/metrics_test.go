package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestLoadMetrics(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Empty(t, c.Metrics.Addr, "default: /metrics on the HTTP listener")
	require.False(t, c.Metrics.TenantLabel, "default: no tenant label")

	c, err = config.Load(env(map[string]string{config.EnvMetricsAddr: "0.0.0.0:9100", config.EnvMetricsTenantLabel: "true"}))
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:9100", c.Metrics.Addr)
	require.True(t, c.Metrics.TenantLabel)

	for _, bad := range []string{"9100", "host:port", "127.0.0.1:70000"} {
		_, err = config.Load(env(map[string]string{config.EnvMetricsAddr: bad}))
		require.ErrorContains(t, err, config.EnvMetricsAddr+":", bad)
	}
	_, err = config.Load(env(map[string]string{config.EnvMetricsAddr: "127.0.0.1:8080"}))
	require.ErrorContains(t, err, config.EnvMetricsAddr+":", "the HTTP listener's own address")
	_, err = config.Load(env(map[string]string{config.EnvMetricsTenantLabel: "maybe"}))
	require.ErrorContains(t, err, config.EnvMetricsTenantLabel+":")
}
