package secretbox

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// ErrOpen is returned (wrapped) by [Keyring.Open] for every failure: unknown
// key id, short input, wrong key or additional data, or tampering. Callers
// should treat them alike; the wrapping message says which for operators.
var ErrOpen = errors.New("secretbox: cannot open sealed secret")

// Seal encrypts plaintext under the primary key with a fresh random 12-byte
// nonce and returns the primary key id and nonce||ciphertext||tag. aad binds
// the ciphertext to its row (e.g. the endpoint id): a ciphertext copied to
// another row, opened with that row's aad, does not open.
//
// Random 96-bit nonces keep the chance of a repeat negligible up to about
// 2^32 seals under one key (NIST SP 800-38D); secrets are sealed at human
// rate and keys rotate long before that.
func (k Keyring) Seal(plaintext, aad []byte) (keyID string, sealed []byte, err error) {
	aead, ok := k.aeads[k.primary]
	if !ok {
		// Only a zero Keyring gets here; constructors always set a primary.
		return "", nil, errors.New("secretbox: keyring has no primary key")
	}
	// The nonce argument must be nil: this AEAD draws a random nonce itself.
	return k.primary, aead.Seal(nil, nil, plaintext, aad), nil //nolint:gosec // G407 false positive, see above
}

// Open decrypts sealed (as returned by [Keyring.Seal]) with the key named
// keyID, using the aad it was sealed with. Any failure returns a nil
// plaintext and an error wrapping [ErrOpen]; success returns a non-nil slice.
func (k Keyring) Open(keyID string, sealed, aad []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		// The id is not secret and naming it tells an operator which key
		// was dropped from the configuration too early.
		return nil, fmt.Errorf("%w: key id %q is not in the keyring", ErrOpen, keyID)
	}
	// The AEAD checks the minimum length (nonce + tag) itself.
	plaintext, err := aead.Open(nil, nil, sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: under key %q: truncated, tampered with, or bound to other data", ErrOpen, keyID)
	}
	// An empty secret comes back as nil from the AEAD; return it non-nil so
	// that "nil means failure" holds for callers.
	if plaintext == nil {
		plaintext = []byte{}
	}
	return plaintext, nil
}

// GenerateKey returns a fresh random 32-byte key as standard base64, ready to
// be used as the key of a keyring entry ("id:" + key).
func GenerateKey() (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("secretbox: generate key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(key), nil
}
