// Package tlstest issues throwaway certificates for tests: an in-memory CA
// and leaf certificates it signs, good for both server and client use, as
// PEM bytes or files. Nothing here is fit for production.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the CA certificate, PEM
	key  *ecdsa.PrivateKey
}

// Pair is a leaf certificate and its key.
type Pair struct {
	Cert    *x509.Certificate
	CertPEM []byte // the leaf, then the CA (a full chain, as cert-manager writes tls.crt)
	KeyPEM  []byte // PKCS #8
}

// Serial is the leaf's serial number, as a handshake's peer certificate shows it.
func (p Pair) Serial() *big.Int { return p.Cert.SerialNumber }

// NewCA creates a CA valid from an hour ago for a day.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("tlstest: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("tlstest: parse CA: %v", err)
	}
	return &CA{Cert: cert, PEM: pemBlock("CERTIFICATE", der), key: key}
}

// Pool is a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue signs a leaf for hosts (IP addresses or DNS names), usable for
// server and client authentication.
func (ca *CA) Issue(tb testing.TB, hosts ...string) Pair {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: "switchboard test node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatalf("tlstest: issue: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("tlstest: parse leaf: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("tlstest: marshal key: %v", err)
	}
	return Pair{
		Cert:    cert,
		CertPEM: append(pemBlock("CERTIFICATE", der), ca.PEM...),
		KeyPEM:  pemBlock("PRIVATE KEY", keyDER),
	}
}

// Files are where WriteFiles put a pair and its CA.
type Files struct{ Cert, Key, CA string }

// WriteFiles writes p as tls.crt and tls.key, and ca as ca.crt, in dir (as
// a Kubernetes TLS secret names them), replacing any earlier ones.
func (ca *CA) WriteFiles(tb testing.TB, dir string, p Pair) Files {
	tb.Helper()
	f := Files{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt")}
	WriteFile(tb, f.Cert, p.CertPEM)
	WriteFile(tb, f.Key, p.KeyPEM)
	WriteFile(tb, f.CA, ca.PEM)
	return f
}

// WriteFile replaces path's content atomically (a temporary file renamed
// over it), so a reader never sees half a file; mode 0600.
func WriteFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		tb.Fatalf("tlstest: write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatalf("tlstest: rename to %s: %v", path, err)
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("tlstest: key: %v", err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatalf("tlstest: serial: %v", err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
