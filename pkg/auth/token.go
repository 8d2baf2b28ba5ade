// Package auth is who may call what: minted bearer tokens (format, hashing,
// parsing), the principal a verified token stands for, the scope policy for
// every RPC, and the gRPC interceptor that enforces it.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash/crc32"
	"strings"
)

// Token format: "sbt_" + base64url(32 random bytes) + base64url(CRC-32 of
// the random part). The fixed prefix lets secret scanners find leaked tokens;
// the checksum lets them (and us) reject a mistyped or truncated token without
// a database lookup. 32 bytes is 256 bits of randomness.
const (
	TokenPrefix = "sbt_"
	randomBytes = 32
	// DisplayPrefixLen is how much of a token listings show (prefix + 8).
	DisplayPrefixLen = len(TokenPrefix) + 8
)

var (
	encoding       = base64.RawURLEncoding
	randomLen      = encoding.EncodedLen(randomBytes) // 43
	checksumLen    = encoding.EncodedLen(4)           // 6
	tokenLen       = len(TokenPrefix) + randomLen + checksumLen
	errMalformed   = errors.New("malformed token")
	crcTable       = crc32.MakeTable(crc32.Castagnoli)
	tokenHashLabel = []byte("switchboard token v1")
)

// NewToken returns a fresh token and its display prefix (what listings show).
func NewToken() (token, display string, err error) {
	b := make([]byte, randomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = formatToken(b)
	return token, token[:DisplayPrefixLen], nil
}

func formatToken(random []byte) string {
	var sum [4]byte
	c := crc32.Checksum(random, crcTable)
	sum[0], sum[1], sum[2], sum[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	return TokenPrefix + encoding.EncodeToString(random) + encoding.EncodeToString(sum[:])
}

// ParseToken checks a presented token's shape and checksum. It says nothing
// about whether the token exists: that is the store's job.
func ParseToken(s string) error {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return errMalformed
	}
	body := s[len(TokenPrefix):]
	random, err := encoding.DecodeString(body[:randomLen])
	if err != nil || len(random) != randomBytes {
		return errMalformed
	}
	// Compare in constant time like everything else about tokens.
	if !hmac.Equal([]byte(formatToken(random)), []byte(s)) {
		return errMalformed
	}
	return nil
}

// Hasher turns tokens into the value stored in credentials.token_hash.
//
// A fast keyed hash (HMAC-SHA-256) is the right tool here, not a password
// hash such as bcrypt or argon2: a token carries 256 bits of randomness, so
// guessing is hopeless however fast each guess is, and a slow hash would cost
// milliseconds of CPU on every uncached request. The key (derived from
// SWITCHBOARD_SECRET_KEY) means a leaked credentials table alone cannot even
// be used to test candidate tokens offline.
type Hasher struct {
	key []byte
}

// NewHasher derives the token-hashing key from the deployment's secret key.
func NewHasher(secretKey []byte) *Hasher {
	mac := hmac.New(sha256.New, secretKey)
	mac.Write(tokenHashLabel)
	return &Hasher{key: mac.Sum(nil)}
}

// Hash returns the 32-byte stored form of token.
func (h *Hasher) Hash(token string) []byte {
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(token))
	return mac.Sum(nil)
}
