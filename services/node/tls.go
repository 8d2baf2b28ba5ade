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
	cert := pair.Certificate()
	a.log.Info("TLS on every listener and node-to-node dial",
		zap.String("cert_file", c.CertFile), zap.String("serial", cert.Leaf.SerialNumber.String()),
		zap.Time("not_after", cert.Leaf.NotAfter), zap.Bool("ca_bundle", roots != nil),
		zap.String("client_auth", c.ClientAuth))
	if err := a.peersWillAccept(cert, roots); err != nil {
		a.log.Warn("this node's certificate will not verify for its peers (the mesh, the gateway's upstream): "+
			"it must chain to "+config.EnvTLSCAFile+" (or the system roots without it) and cover CLUSTER_ENDPOINT's host",
			zap.String("endpoint", a.cfg.Cluster.Endpoint), zap.Error(err))
	}
	return nil
}

// peersWillAccept checks the node's certificate as its peers will: chained
// to the CA bundle, valid for CLUSTER_ENDPOINT's host (the name they dial),
// and, with mesh client auth, for client use too. A mismatch breaks the
// mesh and the gateway quietly (their dials are refused and retried), so
// the boot says so once.
func (a *assembly) peersWillAccept(cert *tls.Certificate, roots *x509.CertPool) error {
	host, _, err := net.SplitHostPort(a.cfg.Cluster.Endpoint)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if a.cfg.TLS.MeshClientCerts() {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	for _, u := range usages {
		opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: host, KeyUsages: []x509.ExtKeyUsage{u}}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			return err
		}
	}
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
