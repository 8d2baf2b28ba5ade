// Package tlsconfig owns a node's TLS material and the tls.Configs built
// from it: the certificate its listeners serve and its node-to-node dials
// present (a KeyPair, re-read when its files change, so a secret that
// cert-manager rotates in place takes effect without a restart), the CA
// bundle peers are verified with (ReadCAs), and the server and client
// configurations (Server, Client).
//
// Defaults: TLS 1.2 at least, Go's cipher suites and curves (forward secret,
// AEAD first), the server's preference order. A client verifies the
// server's certificate against the CA bundle, or the system roots without
// one, and the host it dialed (ServerName); there is no way to skip it.
//
// File errors are *FileError, saying which file was wrong, so pkg/config
// can name the variable that pointed to it.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Which file of a TLS setting a FileError is about.
const (
	FileCert = "certificate"
	FileKey  = "private key"
	FileCA   = "CA bundle"
)

// FileError is a TLS file that cannot be used: unreadable, not PEM, or a key
// that does not match its certificate.
type FileError struct {
	Which string // FileCert, FileKey or FileCA
	Path  string
	Err   error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s %s: %v", e.Which, e.Path, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }

// ReadKeyPair reads a PEM certificate chain and its PEM private key.
func ReadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readPEM(FileCert, certFile, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEM(FileKey, keyFile, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	return parseKeyPair(certFile, keyFile, certPEM, keyPEM)
}

func parseKeyPair(certFile, keyFile string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if _, err := parseCerts(certPEM); err != nil {
		return nil, &FileError{Which: FileCert, Path: certFile, Err: err}
	}
	if err := parseKey(keyPEM); err != nil {
		return nil, &FileError{Which: FileKey, Path: keyFile, Err: err}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// Both parsed: the key is not the certificate's.
		return nil, &FileError{Which: FileKey, Path: keyFile, Err: fmt.Errorf("is not the key of the certificate in %s", certFile)}
	}
	return &pair, nil
}

// parseKey checks that the first private key block of data parses (PKCS #8,
// PKCS #1 or SEC 1, as tls.X509KeyPair accepts).
func parseKey(data []byte) error {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return errors.New("holds no PEM PRIVATE KEY block")
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return nil
		}
		return fmt.Errorf("%s block does not parse (encrypted keys are not supported)", b.Type)
	}
}

// ReadCAs reads a PEM bundle of CA certificates into a pool. Every block
// must be a certificate that parses: a bundle half of which is silently
// ignored would fail later, at some peer's handshake.
func ReadCAs(file string) (*x509.CertPool, error) {
	data, err := readPEM(FileCA, file, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	certs, err := parseCerts(data)
	if err != nil {
		return nil, &FileError{Which: FileCA, Path: file, Err: err}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// readPEM reads file and checks it holds at least one PEM block whose type
// ends with want ("PRIVATE KEY" matches "EC PRIVATE KEY", "RSA PRIVATE
// KEY"…).
func readPEM(which, file, want string) ([]byte, error) {
	data, err := os.ReadFile(file) //nolint:gosec // the operator's own configured path
	if err != nil {
		return nil, &FileError{Which: which, Path: file, Err: errors.New("cannot be read: " + errText(err))}
	}
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, &FileError{Which: which, Path: file, Err: fmt.Errorf("holds no PEM %s block", want)}
		}
		if strings.HasSuffix(b.Type, want) {
			return data, nil
		}
	}
}

// parseCerts parses every CERTIFICATE block of data (other blocks, such as
// a key in a combined file, are skipped).
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM CERTIFICATE block")
	}
	return out, nil
}

// errText is an os error without the path, which FileError already names.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Server is the tls.Config of a listener serving pair's certificate. With
// clientCAs, a client may present a certificate, and one that does must
// chain to clientCAs or its handshake fails; clients without one (bearer
// tokens) are served as before, and the services that want a certificate
// check for one (see VerifiedClient). Without clientCAs none is asked for.
func Server(pair *KeyPair, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: pair.GetCertificate,
	}
	if clientCAs != nil {
		c.ClientAuth = tls.VerifyClientCertIfGiven
		c.ClientCAs = clientCAs
	}
	return c
}

// Client is the tls.Config of a dial: it verifies the server against roots
// (the system roots when nil) and serverName (when empty, the dialed host,
// which gRPC fills in from the target). With pair, it presents pair's
// certificate when the server asks for one.
func Client(roots *x509.CertPool, pair *KeyPair, serverName string) *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    roots,
		ServerName: serverName,
	}
	if pair != nil {
		c.GetClientCertificate = pair.GetClientCertificate
	}
	return c
}

// VerifiedClient reports whether the connection's client presented a
// certificate that the server verified (against Server's clientCAs).
func VerifiedClient(state tls.ConnectionState) bool {
	return len(state.VerifiedChains) > 0
}
