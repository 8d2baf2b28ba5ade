package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/services/gateway"
)

// TestEveryGatewayServiceCanBePinned: config reads SWITCHBOARD_UPSTREAM_<S>
// for exactly the services the gateway fronts, so no pin is silently
// ignored and none is missing.
func TestEveryGatewayServiceCanBePinned(t *testing.T) {
	t.Parallel()
	require.ElementsMatch(t, gateway.Services(), config.UpstreamServices)
	for _, s := range gateway.Services() {
		require.True(t, modules[s].service, "%s is a service of `switchboard serve`", s)
	}
}
