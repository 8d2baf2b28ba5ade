package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// KeySize is the length of a master key in bytes (AES-256).
const KeySize = 32

// maxIDLen bounds key ids: they are stored next to every ciphertext, so they
// should stay short.
const maxIDLen = 32

// Keyring holds the master keys: the primary seals, all of them open.
//
// A Keyring is immutable after construction and safe for concurrent use. It
// keeps only the AES-GCM instances, never the raw key bytes, and its String,
// GoString and Format methods print the primary id and the key count only, so
// a stray %v or log field cannot leak key material. Its methods have value
// receivers so that a dereferenced Keyring formats just as safely as a
// pointer.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// entry is one id/key pair, in configuration order.
type entry struct {
	id  string
	key []byte
}

// ParseKeyring parses the configuration value: comma-separated "id:base64key"
// entries, the first of which is the primary. Whitespace around entries is
// ignored. An id is 1–32 characters of [A-Za-z0-9_-]; a key is standard or
// raw-URL base64 of exactly 32 bytes. Duplicate ids are rejected.
//
// Errors name the offending entry by its position (counting from 1) and never
// quote the entry itself, since it may hold key material.
func ParseKeyring(spec string) (*Keyring, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("secretbox: keyring is empty")
	}
	parts := strings.Split(spec, ",")
	entries := make([]entry, 0, len(parts))
	for i, part := range parts {
		n := i + 1
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("secretbox: keyring entry %d is empty", n)
		}
		id, encoded, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("secretbox: keyring entry %d: want id:base64key", n)
		}
		if err := validateID(id); err != nil {
			return nil, fmt.Errorf("secretbox: keyring entry %d: %w", n, err)
		}
		key, err := decodeKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("secretbox: keyring entry %d: %w", n, err)
		}
		// Name the earlier entry by position rather than echoing the id:
		// the message stays free of anything taken from the value.
		if j := slices.IndexFunc(entries, func(e entry) bool { return e.id == id }); j >= 0 {
			return nil, fmt.Errorf("secretbox: keyring entry %d: duplicate key id (same as entry %d)", n, j+1)
		}
		entries = append(entries, entry{id: id, key: key})
	}
	return newKeyring(entries)
}

// NewKeyring builds a keyring from raw keys, for tests and programmatic use.
// primaryID must be one of the ids in keys; ids and keys are validated as in
// [ParseKeyring]. The key slices are not retained.
func NewKeyring(primaryID string, keys map[string][]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secretbox: keyring is empty")
	}
	if _, ok := keys[primaryID]; !ok {
		return nil, errors.New("secretbox: primary key id is not among the keys")
	}
	// Sorted so that, with several bad keys, the error is deterministic.
	entries := []entry{{id: primaryID, key: keys[primaryID]}}
	for _, id := range slices.Sorted(maps.Keys(keys)) {
		if id != primaryID {
			entries = append(entries, entry{id: id, key: keys[id]})
		}
	}
	for _, e := range entries {
		if err := validateID(e.id); err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		if len(e.key) != KeySize {
			// The id is valid here, so it is safe to name.
			return nil, fmt.Errorf("secretbox: key %q is %d bytes, want %d", e.id, len(e.key), KeySize)
		}
	}
	return newKeyring(entries)
}

// newKeyring builds the AEADs for already validated entries; the first entry
// is the primary.
func newKeyring(entries []entry) (*Keyring, error) {
	k := &Keyring{primary: entries[0].id, aeads: make(map[string]cipher.AEAD, len(entries))}
	for _, e := range entries {
		block, err := aes.NewCipher(e.key)
		if err != nil {
			return nil, fmt.Errorf("secretbox: key %q: %w", e.id, err)
		}
		// The random-nonce variant draws the nonce itself and prepends it,
		// which is exactly the nonce||ciphertext layout we store, and leaves
		// no way to reuse a nonce by mistake.
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: key %q: %w", e.id, err)
		}
		k.aeads[e.id] = aead
	}
	return k, nil
}

// validateID checks a key id. It never quotes the id: a malformed id may be
// key material typed in the wrong place (e.g. "base64key:id").
func validateID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("key id must be 1-%d characters long", maxIDLen)
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return errors.New("key id may contain only A-Z, a-z, 0-9, '_' and '-'")
		}
	}
	return nil
}

// decodeKey decodes a 32-byte key from standard (padded) or raw-URL base64.
// The decoder's own errors are dropped because they describe the input.
func decodeKey(s string) ([]byte, error) {
	// The base64 decoders skip CR and LF even in strict mode; a key with a
	// line break in it is a configuration mistake, so reject it.
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("key is not valid base64")
	}
	key, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		key, err = base64.RawURLEncoding.Strict().DecodeString(s)
	}
	if err != nil {
		return nil, errors.New("key is not valid base64 (standard or raw URL)")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(key), KeySize)
	}
	return key, nil
}

// PrimaryID returns the id of the key that seals new secrets.
func (k Keyring) PrimaryID() string { return k.primary }

// NeedsReseal reports whether a ciphertext sealed under keyID should be
// re-sealed, i.e. keyID is not the primary.
func (k Keyring) NeedsReseal(keyID string) bool { return keyID != k.primary }

// String describes the keyring without key material.
func (k Keyring) String() string {
	return fmt.Sprintf("secretbox.Keyring{primary: %s, keys: %d}", k.primary, len(k.aeads))
}

// GoString is the same as String, so %#v cannot dump the fields.
func (k Keyring) GoString() string { return k.String() }

// Format makes every verb, including %x and %d which would otherwise walk
// the struct fields, print the String form.
func (k Keyring) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, k.String())
}
