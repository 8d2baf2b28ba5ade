package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/node"
)

func TestParseServices(t *testing.T) {
	t.Parallel()
	all, err := node.ParseServices("all")
	require.NoError(t, err)
	require.Equal(t, node.All, all)
	got, err := node.ParseServices("gateway, queue,queue")
	require.NoError(t, err)
	require.Equal(t, []string{"gateway", "queue"}, got, "sorted, no duplicates")
	_, err = node.ParseServices("queue,billing")
	require.ErrorContains(t, err, `unknown service "billing"`)
}
