package tlsconfig_test

import (
	"context"
	"crypto/tls"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/pkg/tlsconfig"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
)

// checkEvery is short so the tests' waits end quickly; they wait for the
// condition, never for this long.
const checkEvery = 5 * time.Millisecond

// serve runs a TLS listener with pair's certificate and returns its address.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).HandshakeContext(context.Background()) == nil {
					_, _ = c.Write([]byte("k")) // the client's read proves the server accepted it
					_, _ = c.Read(make([]byte, 1))
				}
			}()
		}
	}()
	return lis.Addr().String()
}

// dial handshakes with addr.
func dial(t *testing.T, addr string, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// servedSerial handshakes with addr and returns the certificate's serial.
func servedSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	c, err := dial(t, addr, cfg)
	require.NoError(t, err)
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// A new pair written over the files is what the next handshakes get.
func TestKeyPairServesTheRotatedCertificate(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "rotation CA")
	first, second := ca.Issue(t, "127.0.0.1"), ca.Issue(t, "127.0.0.1")
	f := ca.WriteFiles(t, t.TempDir(), first)
	pair, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, checkEvery)
	require.NoError(t, err)
	addr := serve(t, tlsconfig.Server(pair, nil))
	client := tlsconfig.Client(ca.Pool(), nil, "")
	require.Equal(t, first.Serial(), servedSerial(t, addr, client))

	ca.WriteFiles(t, filepath.Dir(f.Cert), second)
	require.Eventually(t, func() bool { return servedSerial(t, addr, client).Cmp(second.Serial()) == 0 },
		10*time.Second, checkEvery, "the rotated certificate was never served")
}

// A symlinked secret volume: the files are links into a folder that
// Kubernetes replaces whole by swapping a link. The swap is a change.
func TestKeyPairFollowsASwappedSymlink(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "symlink CA")
	first, second := ca.Issue(t, "127.0.0.1"), ca.Issue(t, "127.0.0.1")
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, v), 0o700))
	}
	ca.WriteFiles(t, filepath.Join(dir, "v1"), first)
	ca.WriteFiles(t, filepath.Join(dir, "v2"), second)
	require.NoError(t, os.Symlink("v1", filepath.Join(dir, "..data")))
	for _, name := range []string{"tls.crt", "tls.key"} {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	pair, err := tlsconfig.NewKeyPair(nil, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), checkEvery)
	require.NoError(t, err)
	require.Equal(t, first.Serial(), pair.Certificate().Leaf.SerialNumber)

	require.NoError(t, os.Symlink("v2", filepath.Join(dir, "..data.tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data.tmp"), filepath.Join(dir, "..data")))
	require.Eventually(t, func() bool { return pair.Certificate().Leaf.SerialNumber.Cmp(second.Serial()) == 0 },
		10*time.Second, checkEvery)
}

// A pair that does not load keeps the previous one in use, logged once per
// change; fixing the files is picked up.
func TestKeyPairKeepsThePreviousPairWhenTheNewOneIsBad(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "bad pair CA")
	first, second := ca.Issue(t, "127.0.0.1"), ca.Issue(t, "127.0.0.1")
	f := ca.WriteFiles(t, t.TempDir(), first)
	core, logs := observer.New(zapcore.InfoLevel)
	pair, err := tlsconfig.NewKeyPair(zap.New(core), f.Cert, f.Key, checkEvery)
	require.NoError(t, err)
	addr := serve(t, tlsconfig.Server(pair, nil))
	client := tlsconfig.Client(ca.Pool(), nil, "")
	failures := func() int { return logs.FilterLevelExact(zapcore.ErrorLevel).Len() }

	// Half a rotation: the new certificate, the old key.
	tlstest.WriteFile(t, f.Cert, second.CertPEM)
	require.Eventually(t, func() bool { servedSerial(t, addr, client); return failures() == 1 }, 10*time.Second, checkEvery)
	require.Equal(t, first.Serial(), servedSerial(t, addr, client), "the old pair is still served")
	require.Contains(t, logs.FilterLevelExact(zapcore.ErrorLevel).All()[0].ContextMap()["error"], "is not the key of the certificate")

	// A key file that is not PEM at all.
	tlstest.WriteFile(t, f.Key, []byte("not a key"))
	require.Eventually(t, func() bool { servedSerial(t, addr, client); return failures() == 2 }, 10*time.Second, checkEvery)
	require.Equal(t, first.Serial(), servedSerial(t, addr, client))
	for range 20 {
		servedSerial(t, addr, client) // unchanged files are not tried again
	}
	require.Equal(t, 2, failures(), "one error per change, not per handshake")

	tlstest.WriteFile(t, f.Key, second.KeyPEM)
	require.Eventually(t, func() bool { return servedSerial(t, addr, client).Cmp(second.Serial()) == 0 }, 10*time.Second, checkEvery)
	require.Equal(t, 1, logs.FilterMessage("TLS certificate reloaded").Len())
}

// The pair is read once and trusted for the check interval: handshakes in
// between do not look at the files.
func TestKeyPairLooksAtTheFilesAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "interval CA")
	first, second := ca.Issue(t, "127.0.0.1"), ca.Issue(t, "127.0.0.1")
	f := ca.WriteFiles(t, t.TempDir(), first)
	pair, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, time.Hour)
	require.NoError(t, err)
	ca.WriteFiles(t, filepath.Dir(f.Cert), second)
	for range 100 {
		require.Equal(t, first.Serial(), pair.Certificate().Leaf.SerialNumber)
	}
}

func TestNewKeyPairNeedsAGoodPair(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "new CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	_, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Cert, 0)
	require.ErrorContains(t, err, "holds no PEM PRIVATE KEY block")
}

// The node presents its own certificate when a server asks for one, and a
// server with client CAs verifies it, while still serving clients without.
func TestClientCertificates(t *testing.T) {
	t.Parallel()
	ca, other := tlstest.NewCA(t, "cluster CA"), tlstest.NewCA(t, "another CA")
	server := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	node := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	stranger := other.WriteFiles(t, t.TempDir(), other.Issue(t, "127.0.0.1"))
	load := func(f tlstest.Files) *tlsconfig.KeyPair {
		p, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, 0)
		require.NoError(t, err)
		return p
	}
	srv := tlsconfig.Server(load(server), ca.Pool())
	verified := make(chan bool, 3)
	srv.VerifyConnection = func(cs tls.ConnectionState) error {
		verified <- tlsconfig.VerifiedClient(cs)
		return nil
	}
	addr := serve(t, srv)

	handshake := func(cfg *tls.Config) error {
		c, err := dial(t, addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3: the server's verdict on a client certificate comes after
		// the client's handshake returns; reading the server's byte sees it.
		_, err = c.Read(make([]byte, 1))
		return err
	}
	require.NoError(t, handshake(tlsconfig.Client(ca.Pool(), load(node), "")))
	require.True(t, <-verified, "the node's certificate was verified")
	require.NoError(t, handshake(tlsconfig.Client(ca.Pool(), nil, "")), "a client without a certificate is served")
	require.False(t, <-verified)
	require.Error(t, handshake(tlsconfig.Client(ca.Pool(), load(stranger), "")), "a certificate from another CA is refused")
}

// The client verifies the server's chain and the name it dialed.
func TestClientVerifiesTheServer(t *testing.T) {
	t.Parallel()
	ca, other := tlstest.NewCA(t, "cluster CA"), tlstest.NewCA(t, "another CA")
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1", "node-a.internal"))
	pair, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, 0)
	require.NoError(t, err)
	addr := serve(t, tlsconfig.Server(pair, nil))

	for name, cfg := range map[string]*tls.Config{
		"dialed host": tlsconfig.Client(ca.Pool(), nil, ""),
		"named host":  tlsconfig.Client(ca.Pool(), nil, "node-a.internal"),
	} {
		c, err := dial(t, addr, cfg)
		require.NoError(t, err, name)
		require.Equal(t, uint16(tls.VersionTLS13), c.ConnectionState().Version)
		_ = c.Close()
	}
	_, err = dial(t, addr, tlsconfig.Client(ca.Pool(), nil, "node-b.internal"))
	require.ErrorContains(t, err, "certificate is valid for")
	_, err = dial(t, addr, tlsconfig.Client(other.Pool(), nil, ""))
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	_, err = dial(t, addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11}) //nolint:gosec // the old version is the point
	require.Error(t, err, "TLS 1.1 is refused")
}
