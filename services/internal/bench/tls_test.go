package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
)

// --cacert and --tls turn TLS on for the gRPC benchmarks; ingest follows
// its URL's scheme and refuses them with http://.
func TestParseTLSFlags(t *testing.T) {
	t.Parallel()
	lookup := env(EnvToken, "sb_tok")
	ca := tlstest.NewCA(t, "bench CA")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	tlstest.WriteFile(t, caFile, ca.PEM)
	missing := filepath.Join(t.TempDir(), "missing.crt")

	q, err := parseBench([]string{"--todos", "1", "--workers", "1"}, lookup)
	require.NoError(t, err)
	require.Nil(t, q.tls, "plaintext by default")
	q, err = parseBench([]string{"--todos", "1", "--workers", "1", "--cacert", caFile}, lookup)
	require.NoError(t, err)
	require.NotNil(t, q.tls)
	require.True(t, q.tls.RootCAs.Equal(ca.Pool()))
	q, err = parseBench([]string{"--todos", "1", "--workers", "1", "--tls"}, lookup)
	require.NoError(t, err)
	require.NotNil(t, q.tls)
	require.Nil(t, q.tls.RootCAs, "the system roots")
	_, err = parseBench([]string{"--todos", "1", "--workers", "1", "--cacert", missing}, lookup)
	var u *UsageError
	require.ErrorAs(t, err, &u)
	require.ErrorContains(t, err, "--cacert: CA bundle "+missing+": cannot be read")

	r, err := parseBenchRealtime([]string{"--publishers", "1", "--subscribers", "1", "--rate", "1", "--cacert", caFile}, lookup)
	require.NoError(t, err)
	require.True(t, r.tls.RootCAs.Equal(ca.Pool()))

	i, err := parseBenchIngest([]string{"--requests", "1", "--concurrency", "1"}, lookup)
	require.NoError(t, err)
	require.Nil(t, i.tls)
	i, err = parseBenchIngest([]string{"--requests", "1", "--concurrency", "1", "--url", "https://node:8443"}, lookup)
	require.NoError(t, err)
	require.NotNil(t, i.tls)
	require.Nil(t, i.tls.RootCAs)
	i, err = parseBenchIngest([]string{"--requests", "1", "--concurrency", "1", "--url", "https://node:8443", "--cacert", caFile}, lookup)
	require.NoError(t, err)
	require.True(t, i.tls.RootCAs.Equal(ca.Pool()))
	_, err = parseBenchIngest([]string{"--requests", "1", "--concurrency", "1", "--cacert", caFile}, lookup)
	require.ErrorAs(t, err, &u)
	require.ErrorContains(t, err, "need an https:// URL")
}
