package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestUpstreamsDefaultToTheRegistry(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	for _, s := range config.UpstreamServices {
		require.Empty(t, c.Gateway.UpstreamOf(s), "%s: unpinned means routed by the registry", s)
	}
	require.Empty(t, c.Cluster.HTTPEndpoint)
}

func TestUpstreamPerServiceWinsOverTheGatewayUpstream(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{
		config.EnvGatewayUpstream:    "all.internal:9090",
		"SWITCHBOARD_UPSTREAM_QUEUE": "queue.internal:9090",
		config.EnvHTTPEndpoint:       "10.0.0.7:8080",
	}))
	require.NoError(t, err)
	require.Equal(t, "queue.internal:9090", c.Gateway.UpstreamOf("queue"))
	require.Equal(t, "all.internal:9090", c.Gateway.UpstreamOf("ingest"), "the older setting still covers the rest")
	require.Equal(t, "10.0.0.7:8080", c.Cluster.HTTPEndpoint)
}

func TestUpstreamRefusesWhatCannotBeDialed(t *testing.T) {
	t.Parallel()
	for name, bad := range map[string]string{
		"SWITCHBOARD_UPSTREAM_REALTIME": "realtime.internal",
		"SWITCHBOARD_UPSTREAM_ADMIN":    ":9090",
		"SWITCHBOARD_UPSTREAM_INGEST":   "ingest:0",
		config.EnvHTTPEndpoint:          "10.0.0.7",
	} {
		_, err := config.Load(env(map[string]string{name: bad}))
		require.ErrorContains(t, err, name, "%s=%q", name, bad)
	}
}
