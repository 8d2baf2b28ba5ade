package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9090", c.GRPC.Addr)
	require.Equal(t, "127.0.0.1:8080", c.HTTP.Addr)
	require.Equal(t, 10*time.Second, c.Cluster.HeartbeatInterval)
	require.Equal(t, 30*time.Second, c.Cluster.StaleThreshold)
	require.Equal(t, "127.0.0.1:9090", c.Cluster.Endpoint, "endpoint defaults to the gRPC address")
	require.NotEmpty(t, c.Cluster.NodeID)
	require.Equal(t, config.DefaultDatabaseURL, c.Postgres.URL)
}

func TestLoadOverrides(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{
		config.EnvDatabaseURL:       "postgresql://u@db:5432/x",
		config.EnvGRPCAddr:          "0.0.0.0:7000",
		config.EnvLogFormat:         "console",
		config.EnvNodeID:            "node-a",
		config.EnvHeartbeatInterval: "2s",
		config.EnvStaleThreshold:    "6s",
		config.EnvShutdownGrace:     "3s",
	}))
	require.NoError(t, err)
	require.Equal(t, "postgresql://u@db:5432/x", c.Postgres.URL)
	require.Equal(t, "node-a", c.Cluster.NodeID)
	require.Equal(t, 2*time.Second, c.Cluster.HeartbeatInterval)
	require.Equal(t, 3*time.Second, c.Shutdown.Grace)
	require.NotContains(t, c.Cluster.Endpoint, "0.0.0.0", "a wildcard listen address is not advertised")
	require.Contains(t, c.Cluster.Endpoint, ":7000")
}

func TestLoadSecretKey(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.True(t, c.Auth.DevSecretKey, "unset: the development key, flagged")
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	c, err = config.Load(env(map[string]string{config.EnvSecretKey: key}))
	require.NoError(t, err)
	require.False(t, c.Auth.DevSecretKey)
	require.Equal(t, "0123456789abcdef0123456789abcdef", string(c.Auth.SecretKey))
	require.Equal(t, 10*time.Second, c.Auth.CacheTTL)
}

func TestLoadRejectsBadValues(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		env  map[string]string
		want string
	}{
		"url scheme":      {map[string]string{config.EnvDatabaseURL: "mysql://x"}, config.EnvDatabaseURL + ": scheme"},
		"url syntax":      {map[string]string{config.EnvDatabaseURL: "postgres://%zz"}, config.EnvDatabaseURL + ": not a URL"},
		"grpc addr":       {map[string]string{config.EnvGRPCAddr: "9090"}, config.EnvGRPCAddr + `: "9090" is not host:port`},
		"http port":       {map[string]string{config.EnvHTTPAddr: "127.0.0.1:99999"}, config.EnvHTTPAddr + ": "},
		"log level":       {map[string]string{config.EnvLogLevel: "loud"}, config.EnvLogLevel + ": must be one of"},
		"log format":      {map[string]string{config.EnvLogFormat: "xml"}, config.EnvLogFormat + ": must be one of"},
		"duration":        {map[string]string{config.EnvHeartbeatInterval: "ten"}, config.EnvHeartbeatInterval + `: "ten" is not a duration`},
		"zero interval":   {map[string]string{config.EnvHeartbeatInterval: "0s"}, config.EnvHeartbeatInterval + ": must be greater than zero"},
		"stale too small": {map[string]string{config.EnvStaleThreshold: "15s"}, config.EnvStaleThreshold + ": must be at least twice"},
		"negative delay":  {map[string]string{config.EnvShutdownDelay: "-1s"}, config.EnvShutdownDelay + ": must not be negative"},
		"node id space":   {map[string]string{config.EnvNodeID: "a b"}, config.EnvNodeID + ": must not contain"},
		"endpoint":        {map[string]string{config.EnvEndpoint: "nohost"}, config.EnvEndpoint + ": "},
		"secret not b64":  {map[string]string{config.EnvSecretKey: "not base64!"}, config.EnvSecretKey + ": not base64"},
		"secret short":    {map[string]string{config.EnvSecretKey: "c2hvcnQ="}, config.EnvSecretKey + ": must decode to at least 32 bytes"},
		"bootstrap token": {map[string]string{config.EnvBootstrapToken: "hunter2"}, config.EnvBootstrapToken + ": not a Switchboard token"},
		"bootstrap email": {map[string]string{config.EnvBootstrapEmail: "root"}, config.EnvBootstrapEmail + ": "},
		"cache ttl":       {map[string]string{config.EnvAuthCacheTTL: "0s"}, config.EnvAuthCacheTTL + ": must be greater than zero"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(env(tc.env))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "errors are one line")
		})
	}
}
