package node

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/switchboard/switchboard/pkg/config"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/tlsconfig"
)

// nodeTLS is the node's TLS (SWITCHBOARD_TLS_*): one certificate for both
// listeners and every node-to-node dial, re-read as its files change, and
// the CA bundle peers are verified with. The zero value is TLS off.
type nodeTLS struct {
	pair  *tlsconfig.KeyPair
	roots *x509.CertPool // nil: the system roots
	// clientCAs, with SWITCHBOARD_TLS_CLIENT_AUTH=mesh: the gRPC listener
	// verifies a client certificate when one is given, and the mesh
	// requires one.
	clientCAs *x509.CertPool
}

// buildTLS loads the node's TLS material, or warns once when a listener
// reaches beyond loopback without it.
func (a *assembly) buildTLS() error {
	c := a.cfg.TLS
	if !c.Enabled() {
		if exposed := a.cfg.PlaintextListeners(); len(exposed) > 0 {
			a.log.Warn("listening beyond loopback without TLS: requests, bearer tokens and the cluster secret "+
				"travel in clear; set "+config.EnvTLSCertFile+" and "+config.EnvTLSKeyFile,
				zap.Strings("listeners", exposed))
		}
		return nil
	}
	pair, err := c.KeyPair(a.log.With(sblog.Component("tls")))
	if err != nil {
		return err
	}
	roots, err := c.RootCAs()
	if err != nil {
		return err
	}
	a.tls = nodeTLS{pair: pair, roots: roots}
	if c.MeshClientCerts() {
		a.tls.clientCAs = roots
	}
	leaf := pair.Certificate().Leaf
	a.log.Info("TLS on every listener and node-to-node dial",
		zap.String("cert_file", c.CertFile), zap.String("serial", leaf.SerialNumber.String()),
		zap.Time("not_after", leaf.NotAfter), zap.Bool("ca_bundle", roots != nil),
		zap.String("client_auth", c.ClientAuth))
	return nil
}

// grpcServerTLS is the gRPC listener's TLS (nil: plaintext).
func (t nodeTLS) grpcServerTLS() *tls.Config {
	if t.pair == nil {
		return nil
	}
	return tlsconfig.Server(t.pair, t.clientCAs)
}

// httpServerTLS is the HTTP listener's TLS (nil: plaintext). It never asks
// for client certificates: browsers and webhook senders have none.
func (t nodeTLS) httpServerTLS() *tls.Config {
	if t.pair == nil {
		return nil
	}
	return tlsconfig.Server(t.pair, nil)
}

// dial is the transport of a node-to-node dial: nothing (the caller's
// plaintext default) without TLS; else TLS verifying the peer against the
// CA bundle and serverName (empty: the host dialed), presenting the node's
// certificate when the peer asks.
func (t nodeTLS) dial(serverName string) []grpc.DialOption {
	if t.pair == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tlsconfig.Client(t.roots, t.pair, serverName)))}
}

// upstreamServerName is the name the gateway verifies its upstream as. An
// explicit upstream is verified as the host it names; the node's own
// listener, which may be bound to a wildcard, as CLUSTER_ENDPOINT's host:
// the name peers reach this node by, which its certificate covers anyway.
func (a *assembly) upstreamServerName() string {
	if a.cfg.Gateway.Upstream != "" {
		return ""
	}
	host, _, err := net.SplitHostPort(a.cfg.Cluster.Endpoint)
	if err != nil {
		return ""
	}
	return host
}
