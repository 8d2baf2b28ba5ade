package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultCheckInterval is how long a KeyPair trusts its last look at the
// files: handshakes within it use the loaded certificate without a stat.
const DefaultCheckInterval = 2 * time.Second

// KeyPair is a certificate and key read from two PEM files and read again
// when they change: cert-manager (or any rotation) rewrites a Kubernetes
// secret's files in place, and new handshakes should get the new
// certificate without a restart.
//
// A handshake that finds the last look older than the check interval
// stats both files (cheap) and re-reads them only when one changed (mtime,
// size, or the file itself, as when a secret volume swaps its symlink). A
// pair that does not load (half written, a key that is not the
// certificate's) is logged at error once per change and the previous pair
// stays in use; the next change is tried again. Nothing runs in the
// background: an idle listener looks at nothing.
type KeyPair struct {
	certFile, keyFile string
	every             time.Duration
	log               *zap.Logger

	current   atomic.Pointer[loaded]
	lastCheck atomic.Int64 // unix nanoseconds of the last stat
	checking  sync.Mutex   // one goroutine looks at the files; the others go on

	// Touched only under checking: what the last attempt saw on disk.
	certStat, keyStat os.FileInfo
}

// loaded is one successfully read pair and the bytes it came from.
type loaded struct {
	cert            *tls.Certificate
	certPEM, keyPEM []byte
}

// NewKeyPair reads the pair, which must load. every is the check interval
// (DefaultCheckInterval when ≤ 0); log may be nil.
func NewKeyPair(log *zap.Logger, certFile, keyFile string, every time.Duration) (*KeyPair, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if every <= 0 {
		every = DefaultCheckInterval
	}
	k := &KeyPair{certFile: certFile, keyFile: keyFile, every: every, log: log}
	k.certStat, k.keyStat = stat(certFile), stat(keyFile)
	certPEM, keyPEM, cert, err := k.read()
	if err != nil {
		return nil, err
	}
	k.current.Store(&loaded{cert: cert, certPEM: certPEM, keyPEM: keyPEM})
	k.lastCheck.Store(time.Now().UnixNano())
	return k, nil
}

// Certificate is the pair in use, after looking at the files if the check
// interval has passed.
func (k *KeyPair) Certificate() *tls.Certificate {
	k.maybeReload()
	return k.current.Load().cert
}

// GetCertificate implements tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

// GetClientCertificate implements tls.Config.GetClientCertificate: a node
// dialing a peer presents the same certificate its listeners serve.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

func (k *KeyPair) maybeReload() {
	now := time.Now()
	if now.UnixNano()-k.lastCheck.Load() < int64(k.every) {
		return
	}
	if !k.checking.TryLock() {
		return // another handshake is looking; use the current pair meanwhile
	}
	defer k.checking.Unlock()
	k.lastCheck.Store(now.UnixNano())
	certStat, keyStat := stat(k.certFile), stat(k.keyFile)
	if same(certStat, k.certStat) && same(keyStat, k.keyStat) {
		return
	}
	k.certStat, k.keyStat = certStat, keyStat // try each change once
	certPEM, keyPEM, cert, err := k.read()
	if err != nil {
		k.log.Error("TLS certificate files changed but do not load; still serving the previous certificate",
			zap.Error(err))
		return
	}
	cur := k.current.Load()
	if bytes.Equal(cur.certPEM, certPEM) && bytes.Equal(cur.keyPEM, keyPEM) {
		return // touched, not changed
	}
	k.current.Store(&loaded{cert: cert, certPEM: certPEM, keyPEM: keyPEM})
	k.log.Info("TLS certificate reloaded", zap.String("cert_file", k.certFile),
		zap.String("serial", cert.Leaf.SerialNumber.String()), zap.Time("not_after", cert.Leaf.NotAfter))
}

func (k *KeyPair) read() (certPEM, keyPEM []byte, cert *tls.Certificate, err error) {
	if certPEM, err = readPEM(FileCert, k.certFile, "CERTIFICATE"); err != nil {
		return nil, nil, nil, err
	}
	if keyPEM, err = readPEM(FileKey, k.keyFile, "PRIVATE KEY"); err != nil {
		return nil, nil, nil, err
	}
	cert, err = parseKeyPair(k.certFile, k.keyFile, certPEM, keyPEM)
	return certPEM, keyPEM, cert, err
}

// stat follows symlinks (a secret volume's files are links into a folder
// that is swapped whole); nil when the file is missing.
func stat(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

func same(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}
