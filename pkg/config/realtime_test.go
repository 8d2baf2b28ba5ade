package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestLoadRealtimeTransport(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, "notify", c.Realtime.EphemeralTransport, "the default needs nothing but Postgres")

	secret := strings.Repeat("s", 32)
	c, err = config.Load(env(map[string]string{config.EnvEphemeralTransport: "mesh", config.EnvClusterSecret: secret}))
	require.NoError(t, err)
	require.Equal(t, "mesh", c.Realtime.EphemeralTransport)
	require.Equal(t, secret, c.Realtime.ClusterSecret)

	_, err = config.Load(env(map[string]string{config.EnvEphemeralTransport: "mesh"}))
	require.ErrorContains(t, err, config.EnvClusterSecret+":", "the mesh without a secret")
	_, err = config.Load(env(map[string]string{config.EnvEphemeralTransport: "mesh", config.EnvClusterSecret: "short"}))
	require.ErrorContains(t, err, config.EnvClusterSecret+":")
	require.NotContains(t, err.Error(), "short", "no secret in the error")
	_, err = config.Load(env(map[string]string{config.EnvEphemeralTransport: "carrier-pigeon"}))
	require.ErrorContains(t, err, config.EnvEphemeralTransport+":")
}
