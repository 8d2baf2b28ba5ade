//go:build integration

package mesh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	meshv1 "github.com/switchboard/switchboard/gen/switchboard/mesh/v1"
	"github.com/switchboard/switchboard/pkg/tlsconfig"
	"github.com/switchboard/switchboard/pkg/tlsconfig/tlstest"
	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
)

// tlsNode is a node's TLS as services/node builds it with
// SWITCHBOARD_TLS_CLIENT_AUTH=mesh: the listener verifies client
// certificates from the CA when given, the links present the node's own.
func tlsNode(t *testing.T, ca *tlstest.CA) nodeConfig {
	t.Helper()
	f := ca.WriteFiles(t, t.TempDir(), ca.Issue(t, "127.0.0.1"))
	pair, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, 0)
	require.NoError(t, err)
	return nodeConfig{
		serverTLS:         tlsconfig.Server(pair, ca.Pool()),
		dial:              []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tlsconfig.Client(ca.Pool(), pair, "")))},
		requireClientCert: true,
	}
}

// Mesh links over mutual TLS carry events both ways.
func TestLinksOverMutualTLS(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ca := tlstest.NewCA(t, "mesh CA")
	a := tb.startNode(t, "node-a", tlsNode(t, ca))
	b := tb.startNode(t, "node-b", tlsNode(t, ca))
	waitPeers(t, a, "node-b")
	waitPeers(t, b, "node-a")
	a.mesh.Broadcast(event("over-tls", 1))
	b.mesh.Broadcast(event("over-tls", 2))
	require.Eventually(t, func() bool {
		return len(b.inbox.from("node-a")) == 1 && len(a.inbox.from("node-b")) == 1
	}, waitFor, 5*time.Millisecond)
}

// With RequireClientCert, the secret alone no longer admits a link: the
// dialer must have presented a certificate from the CA. A dialer that
// cannot verify the node's certificate never sends the secret at all.
func TestLinksNeedAClientCertificateFromTheCA(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ca, other := tlstest.NewCA(t, "mesh CA"), tlstest.NewCA(t, "another CA")
	b := tb.startNode(t, "node-b", tlsNode(t, ca))
	withSecret := metadata.NewOutgoingContext(t.Context(), metadata.Pairs(mesh.SecretHeader, string(secret)))
	relay := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(b.addr, grpc.WithTransportCredentials(creds))
		require.NoError(t, err)
		defer conn.Close()
		stream, err := meshv1.NewMeshServiceClient(conn).Relay(withSecret)
		if err != nil {
			return err
		}
		_ = stream.Send(request("node-x", "sneaky"))
		_, err = stream.CloseAndRecv()
		return err
	}
	pair := func(c *tlstest.CA) *tlsconfig.KeyPair {
		f := c.WriteFiles(t, t.TempDir(), c.Issue(t, "127.0.0.1"))
		p, err := tlsconfig.NewKeyPair(nil, f.Cert, f.Key, 0)
		require.NoError(t, err)
		return p
	}

	err := relay(credentials.NewTLS(tlsconfig.Client(ca.Pool(), nil, "")))
	require.Equal(t, codes.Unauthenticated, status.Code(err), "TLS and the secret, no client certificate: %v", err)

	err = relay(credentials.NewTLS(tlsconfig.Client(ca.Pool(), pair(other), "")))
	require.Equal(t, codes.Unavailable, status.Code(err), "a certificate from another CA fails the handshake: %v", err)

	err = relay(insecure.NewCredentials())
	require.Equal(t, codes.Unavailable, status.Code(err), "plaintext to a TLS listener: %v", err)

	err = relay(credentials.NewTLS(tlsconfig.Client(other.Pool(), pair(ca), "")))
	require.Equal(t, codes.Unavailable, status.Code(err), "the node's certificate is not trusted: %v", err)
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	require.Empty(t, b.inbox.on("sneaky"))

	// The control: a certificate from the CA and the secret.
	require.NoError(t, relay(credentials.NewTLS(tlsconfig.Client(ca.Pool(), pair(ca), ""))))
	require.Len(t, b.inbox.on("sneaky"), 1)
}
