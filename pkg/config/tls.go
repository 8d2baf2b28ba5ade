package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/tlsconfig"
)

// TLS's variables. Plaintext is the default (a local node); a node that
// listens beyond loopback should set the first three.
const (
	// EnvTLSCertFile and EnvTLSKeyFile are the PEM certificate (chain) and
	// key every listener of the node serves (gRPC and HTTP) and its
	// node-to-node dials present. Both or neither. Re-read when the files
	// change (a rotated Kubernetes secret), no restart needed.
	EnvTLSCertFile = "SWITCHBOARD_TLS_CERT_FILE"
	EnvTLSKeyFile  = "SWITCHBOARD_TLS_KEY_FILE"
	// EnvTLSCAFile is the PEM bundle the node verifies its peers with (the
	// gateway's upstream, the realtime mesh) and, with client auth, the
	// certificates mesh links present. Unset: the system roots. Read at
	// start only.
	EnvTLSCAFile = "SWITCHBOARD_TLS_CA_FILE"
	// EnvTLSClientAuth is "none" (the default: the cluster secret alone
	// admits a mesh link) or "mesh": a mesh link must also come with a
	// client certificate from the CA. Other clients (bearer tokens) are
	// never asked for one.
	EnvTLSClientAuth = "SWITCHBOARD_TLS_CLIENT_AUTH"
)

// Values of EnvTLSClientAuth.
const (
	ClientAuthNone = "none"
	ClientAuthMesh = "mesh"
)

// TLS configures transport security for the node's listeners and dials.
type TLS struct {
	CertFile, KeyFile string
	CAFile            string
	ClientAuth        string
}

func defaultTLS() TLS { return TLS{ClientAuth: ClientAuthNone} }

// Enabled reports whether the node's listeners and node-to-node dials use TLS.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// MeshClientCerts reports whether mesh links must present a client certificate.
func (t TLS) MeshClientCerts() bool { return t.ClientAuth == ClientAuthMesh }

func (p *parser) tls(dst *TLS) {
	p.str(EnvTLSCertFile, &dst.CertFile)
	p.str(EnvTLSKeyFile, &dst.KeyFile)
	p.str(EnvTLSCAFile, &dst.CAFile)
	p.str(EnvTLSClientAuth, &dst.ClientAuth)
}

// validate reads the files, so a node with a missing, unreadable or
// mismatched one fails before any listener opens, naming the variable.
func (t TLS) validate() error {
	if err := oneOf(EnvTLSClientAuth, t.ClientAuth, ClientAuthNone, ClientAuthMesh); err != nil {
		return err
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return fmt.Errorf("%s: must be set with %s (both or neither)", EnvTLSKeyFile, EnvTLSCertFile)
	case t.CertFile == "" && t.KeyFile != "":
		return fmt.Errorf("%s: must be set with %s (both or neither)", EnvTLSCertFile, EnvTLSKeyFile)
	case t.CertFile == "" && t.CAFile != "":
		return fmt.Errorf("%s: set without %s and %s: a node dials its peers with TLS only when its own listeners use it",
			EnvTLSCAFile, EnvTLSCertFile, EnvTLSKeyFile)
	case t.MeshClientCerts() && (t.CertFile == "" || t.CAFile == ""):
		return fmt.Errorf("%s: %q needs %s, %s and %s (the CA that signs the nodes' certificates)",
			EnvTLSClientAuth, ClientAuthMesh, EnvTLSCertFile, EnvTLSKeyFile, EnvTLSCAFile)
	case !t.Enabled():
		return nil
	}
	if _, err := tlsconfig.ReadKeyPair(t.CertFile, t.KeyFile); err != nil {
		return tlsError(err)
	}
	_, err := t.RootCAs()
	return err
}

// KeyPair loads the node's certificate, re-read as its files change (see
// tlsconfig.KeyPair). Call only when Enabled.
func (t TLS) KeyPair(log *zap.Logger) (*tlsconfig.KeyPair, error) {
	p, err := tlsconfig.NewKeyPair(log, t.CertFile, t.KeyFile, tlsconfig.DefaultCheckInterval)
	if err != nil {
		return nil, tlsError(err)
	}
	return p, nil
}

// RootCAs is the CA bundle, or nil (the system roots) without one.
func (t TLS) RootCAs() (*x509.CertPool, error) {
	if t.CAFile == "" {
		return nil, nil //nolint:nilnil // nil is the system roots, as in tls.Config
	}
	pool, err := tlsconfig.ReadCAs(t.CAFile)
	if err != nil {
		return nil, tlsError(err)
	}
	return pool, nil
}

// tlsError names the variable of the file a tlsconfig error is about.
func tlsError(err error) error {
	var fe *tlsconfig.FileError
	if !errors.As(err, &fe) {
		return err
	}
	name := map[string]string{tlsconfig.FileCert: EnvTLSCertFile, tlsconfig.FileKey: EnvTLSKeyFile, tlsconfig.FileCA: EnvTLSCAFile}[fe.Which]
	return fmt.Errorf("%s: %w", name, err)
}

// PlaintextListeners lists the listeners ("VARIABLE=addr") that accept
// connections from beyond this machine without TLS: their traffic, bearer
// tokens and the cluster secret included, crosses the network in clear.
func (c Config) PlaintextListeners() []string {
	if c.TLS.Enabled() {
		return nil
	}
	var out []string
	for _, l := range []struct{ name, addr string }{{EnvGRPCAddr, c.GRPC.Addr}, {EnvHTTPAddr, c.HTTP.Addr}} {
		if !loopback(l.addr) {
			out = append(out, l.name+"="+l.addr)
		}
	}
	return out
}

// loopback reports whether addr's host is a loopback address or localhost.
// An empty host or a wildcard listens on every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
