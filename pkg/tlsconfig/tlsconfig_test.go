package tlsconfig_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/tlsconfig"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
)

// Every unusable file is a FileError saying which file and what is wrong,
// on one line.
func TestFileErrors(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "errors CA")
	dir := t.TempDir()
	good := ca.WriteFiles(t, dir, ca.Issue(t, "127.0.0.1"))
	other := ca.Issue(t, "127.0.0.1")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		tlstest.WriteFile(t, p, data)
		return p
	}
	missing := filepath.Join(dir, "missing.pem")
	notPEM := write("not.pem", []byte("hello"))
	badDER := write("bad-der.pem", []byte("-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n"))
	badKey := write("bad-key.pem", []byte("-----BEGIN PRIVATE KEY-----\naGVsbG8=\n-----END PRIVATE KEY-----\n"))
	otherKey := write("other.key", other.KeyPEM)

	for _, tc := range []struct {
		name, cert, key, which, want string
	}{
		{"missing certificate", missing, good.Key, tlsconfig.FileCert, "cannot be read: no such file or directory"},
		{"missing key", good.Cert, missing, tlsconfig.FileKey, "cannot be read: no such file or directory"},
		{"certificate not PEM", notPEM, good.Key, tlsconfig.FileCert, "holds no PEM CERTIFICATE block"},
		{"key file holds a certificate", good.Cert, good.Cert, tlsconfig.FileKey, "holds no PEM PRIVATE KEY block"},
		{"certificate does not parse", badDER, good.Key, tlsconfig.FileCert, "certificate 1 does not parse"},
		{"key does not parse", good.Cert, badKey, tlsconfig.FileKey, "PRIVATE KEY block does not parse"},
		{"key of another certificate", good.Cert, otherKey, tlsconfig.FileKey, "is not the key of the certificate in " + good.Cert},
	} {
		_, err := tlsconfig.ReadKeyPair(tc.cert, tc.key)
		var fe *tlsconfig.FileError
		require.ErrorAs(t, err, &fe, tc.name)
		require.Equal(t, tc.which, fe.Which, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.NotContains(t, err.Error(), "\n", tc.name)
	}
	_, err := tlsconfig.ReadKeyPair(good.Cert, good.Key)
	require.NoError(t, err)

	for path, want := range map[string]string{
		missing:  "cannot be read",
		notPEM:   "holds no PEM CERTIFICATE block",
		badDER:   "does not parse",
		good.Key: "holds no PEM CERTIFICATE block",
	} {
		_, err := tlsconfig.ReadCAs(path)
		var fe *tlsconfig.FileError
		require.ErrorAs(t, err, &fe, path)
		require.Equal(t, tlsconfig.FileCA, fe.Which)
		require.ErrorContains(t, err, want, path)
	}
	pool, err := tlsconfig.ReadCAs(good.CA)
	require.NoError(t, err)
	require.True(t, pool.Equal(ca.Pool()))
}
