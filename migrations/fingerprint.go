package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
)

// Fingerprint is a hash of every embedded migration's name and contents. Test
// helpers key their migrated template database on it, so editing a migration
// can never leave tests running against a stale schema.
func Fingerprint() string {
	h := sha256.New()
	names, _ := fs.Glob(files, "*.sql")
	for _, name := range names {
		b, _ := files.ReadFile(name)
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
