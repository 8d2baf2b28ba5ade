package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestLoadMCPLimits(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, config.MCP{MaxCallsPerTenant: 32, MaxWaitsPerTenant: 16}, c.MCP)

	c, err = config.Load(env(map[string]string{config.EnvMCPMaxCallsPerTenant: "500", config.EnvMCPMaxWaitsPerTenant: "200"}))
	require.NoError(t, err)
	require.Equal(t, config.MCP{MaxCallsPerTenant: 500, MaxWaitsPerTenant: 200}, c.MCP)
}

func TestLoadMCPLimitsRefusesNonsense(t *testing.T) {
	t.Parallel()
	for name, values := range map[string][]string{
		config.EnvMCPMaxCallsPerTenant: {"many", "0", "-1", "1.5", "100001"},
		config.EnvMCPMaxWaitsPerTenant: {"some", "0", "-3", "100001"},
	} {
		for _, v := range values {
			_, err := config.Load(env(map[string]string{name: v}))
			require.ErrorContains(t, err, name+":", "%s=%q", name, v)
		}
	}
	_, err := config.Load(env(map[string]string{config.EnvMCPMaxCallsPerTenant: "10", config.EnvMCPMaxWaitsPerTenant: "11"}))
	require.ErrorContains(t, err, config.EnvMCPMaxWaitsPerTenant+": must not exceed "+config.EnvMCPMaxCallsPerTenant,
		"every wait is also a call in progress")
}
