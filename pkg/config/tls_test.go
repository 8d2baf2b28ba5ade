package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
)

func TestLoadTLS(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.False(t, c.TLS.Enabled(), "plaintext is the local default")
	require.Equal(t, config.ClientAuthNone, c.TLS.ClientAuth)

	ca := tlstest.NewCA(t, "config CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	c, err = config.Load(env(map[string]string{
		config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key, config.EnvTLSCAFile: f.CA,
		config.EnvTLSClientAuth: "mesh",
	}))
	require.NoError(t, err)
	require.True(t, c.TLS.Enabled())
	require.True(t, c.TLS.MeshClientCerts())
	roots, err := c.TLS.RootCAs()
	require.NoError(t, err)
	require.True(t, roots.Equal(ca.Pool()))
	pair, err := c.TLS.KeyPair(nil)
	require.NoError(t, err)
	require.NotNil(t, pair.Certificate())

	c, err = config.Load(env(map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key}))
	require.NoError(t, err)
	roots, err = c.TLS.RootCAs()
	require.NoError(t, err)
	require.Nil(t, roots, "no CA bundle: the system roots")
}

// Each mistake is one line naming the variable to fix.
func TestLoadTLSErrors(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "config CA")
	dir := t.TempDir()
	f := ca.WriteFiles(t, dir, ca.Issue(t, "127.0.0.1"))
	notPEM := filepath.Join(dir, "not.pem")
	tlstest.WriteFile(t, notPEM, []byte("not PEM"))
	otherKey := filepath.Join(dir, "other.key")
	tlstest.WriteFile(t, otherKey, ca.Issue(t, "127.0.0.1").KeyPEM)
	missing := filepath.Join(dir, "missing.pem")

	for _, tc := range []struct {
		env  map[string]string
		want string // the error's start
		also string
	}{
		{map[string]string{config.EnvTLSCertFile: f.Cert}, config.EnvTLSKeyFile + ": must be set with", ""},
		{map[string]string{config.EnvTLSKeyFile: f.Key}, config.EnvTLSCertFile + ": must be set with", ""},
		{map[string]string{config.EnvTLSCAFile: f.CA}, config.EnvTLSCAFile + ": set without", ""},
		{map[string]string{config.EnvTLSCertFile: missing, config.EnvTLSKeyFile: f.Key}, config.EnvTLSCertFile + ": certificate " + missing, "cannot be read"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: missing}, config.EnvTLSKeyFile + ": private key " + missing, "cannot be read"},
		{map[string]string{config.EnvTLSCertFile: notPEM, config.EnvTLSKeyFile: f.Key}, config.EnvTLSCertFile + ":", "holds no PEM CERTIFICATE block"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: notPEM}, config.EnvTLSKeyFile + ":", "holds no PEM PRIVATE KEY block"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: otherKey}, config.EnvTLSKeyFile + ":", "is not the key of the certificate"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key, config.EnvTLSCAFile: notPEM}, config.EnvTLSCAFile + ": CA bundle", "holds no PEM CERTIFICATE block"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key, config.EnvTLSCAFile: missing}, config.EnvTLSCAFile + ":", "cannot be read"},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key, config.EnvTLSClientAuth: "require"}, config.EnvTLSClientAuth + ": must be one of", ""},
		{map[string]string{config.EnvTLSCertFile: f.Cert, config.EnvTLSKeyFile: f.Key, config.EnvTLSClientAuth: "mesh"}, config.EnvTLSClientAuth + `: "mesh" needs`, config.EnvTLSCAFile},
		{map[string]string{config.EnvTLSClientAuth: "mesh"}, config.EnvTLSClientAuth + `: "mesh" needs`, ""},
	} {
		_, err := config.Load(env(tc.env))
		require.Error(t, err, "%v", tc.env)
		require.True(t, strings.HasPrefix(err.Error(), tc.want), "%v: %v", tc.env, err)
		require.Contains(t, err.Error(), tc.also)
		require.NotContains(t, err.Error(), "\n")
	}
}

// DATABASE_URL's TLS settings are parsed as the pools will: a CA file that
// does not load fails the boot, saying why, without the password.
func TestLoadDatabaseURLTLSSettings(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "postgres CA")
	dir := t.TempDir()
	f := ca.WriteFiles(t, dir, ca.Issue(t, "127.0.0.1"))
	_, err := config.Load(env(map[string]string{
		config.EnvDatabaseURL: "postgres://u:hunter2@db.internal:5432/sb?sslmode=verify-full&sslrootcert=" + f.CA,
	}))
	require.NoError(t, err)

	missing := filepath.Join(dir, "missing.crt")
	_, err = config.Load(env(map[string]string{
		config.EnvDatabaseURL: "postgres://u:hunter2@db.internal:5432/sb?sslmode=verify-full&sslrootcert=" + missing,
	}))
	require.ErrorContains(t, err, config.EnvDatabaseURL+": its TLS settings")
	require.ErrorContains(t, err, "unable to read CA file")
	require.ErrorContains(t, err, missing)
	require.NotContains(t, err.Error(), "hunter2")

	_, err = config.Load(env(map[string]string{config.EnvDatabaseURL: "postgres://u:hunter2@db.internal:5432/sb?sslmode=sometimes"}))
	require.ErrorContains(t, err, config.EnvDatabaseURL+":")
	require.NotContains(t, err.Error(), "hunter2")
}

// A listener beyond loopback without TLS is reported (the node warns).
func TestPlaintextListeners(t *testing.T) {
	t.Parallel()
	c := config.Default()
	require.Empty(t, c.PlaintextListeners(), "the loopback defaults")
	for addr, exposed := range map[string]bool{
		"127.0.0.1:9090": false, "[::1]:9090": false, "localhost:9090": false, "127.8.0.1:1": false,
		"0.0.0.0:9090": true, ":9090": true, "[::]:9090": true, "10.1.2.3:9090": true, "node-a.internal:9090": true,
	} {
		c.GRPC.Addr = addr
		if exposed {
			require.Equal(t, []string{config.EnvGRPCAddr + "=" + addr}, c.PlaintextListeners(), addr)
		} else {
			require.Empty(t, c.PlaintextListeners(), addr)
		}
	}
	c.GRPC.Addr, c.HTTP.Addr = "0.0.0.0:9090", "0.0.0.0:8080"
	require.Len(t, c.PlaintextListeners(), 2)
	c.TLS.CertFile = "/tls.crt"
	require.Empty(t, c.PlaintextListeners(), "TLS on both listeners")
}
