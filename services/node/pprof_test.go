//go:build integration

package node_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/services/node"
)

// getAt GETs path at addr and returns the status and body.
func getAt(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// With SWITCHBOARD_PPROF_ADDR Go's profiler is served there, and on no
// other listener.
func TestPprofOnItsOwnListener(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Pprof.Addr = "127.0.0.1:0" })
	require.NotEmpty(t, b.node.PprofAddr())
	require.NotEqual(t, b.node.HTTPAddr(), b.node.PprofAddr())
	code, body := getAt(t, b.node.PprofAddr(), node.PprofPath+"goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine profile:")
	code, body = getAt(t, b.node.HTTPAddr(), node.PprofPath+"goroutine?debug=1")
	require.NotEqual(t, http.StatusOK, code, "not on the public HTTP listener")
	require.NotContains(t, body, "goroutine profile:")
}

// Off by default: no listener, and nothing on the HTTP listener.
func TestPprofOffByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	require.Empty(t, b.node.PprofAddr())
	code, _ := getAt(t, b.node.HTTPAddr(), node.PprofPath)
	require.Equal(t, http.StatusNotFound, code)
}
