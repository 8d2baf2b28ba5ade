package secretbox_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/secretbox"
)

const (
	nonceSize = 12
	tagSize   = 16
)

// testKey returns a deterministic 32-byte key distinct per seed.
func testKey(seed byte) []byte {
	return bytes.Repeat([]byte{seed}, secretbox.KeySize)
}

func mustKeyring(t *testing.T, primary string, keys map[string][]byte) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.NewKeyring(primary, keys)
	require.NoError(t, err)
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1), "k2": testKey(2)})
	tests := []struct {
		name      string
		plaintext []byte
		aad       []byte
	}{
		{name: "typical secret", plaintext: []byte("whsec_0123456789abcdef"), aad: []byte("endpoint-42")},
		{name: "empty plaintext", plaintext: []byte{}, aad: []byte("endpoint-42")},
		{name: "nil aad", plaintext: []byte("secret"), aad: nil},
		{name: "binary", plaintext: []byte{0, 1, 2, 0xff, 0xfe}, aad: []byte{0}},
		{name: "large", plaintext: bytes.Repeat([]byte("x"), 64<<10), aad: []byte("row")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keyID, sealed, err := k.Seal(tc.plaintext, tc.aad)
			require.NoError(t, err)
			require.Equal(t, "k1", keyID)
			require.Len(t, sealed, nonceSize+len(tc.plaintext)+tagSize)
			got, err := k.Open(keyID, sealed, tc.aad)
			require.NoError(t, err)
			require.NotNil(t, got)
			require.Equal(t, tc.plaintext, got)
			require.False(t, k.NeedsReseal(keyID))
		})
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1)})
	keyID, sealed, err := old.Seal([]byte("secret"), []byte("endpoint-1"))
	require.NoError(t, err)
	require.Equal(t, "k1", keyID)

	tests := []struct {
		name       string
		ring       *secretbox.Keyring
		wantOpen   bool
		wantReseal bool
	}{
		{name: "same keyring", ring: old, wantOpen: true, wantReseal: false},
		{
			name:     "rotated, old key kept",
			ring:     mustKeyring(t, "k2", map[string][]byte{"k1": testKey(1), "k2": testKey(2)}),
			wantOpen: true, wantReseal: true,
		},
		{
			name:     "old key dropped",
			ring:     mustKeyring(t, "k2", map[string][]byte{"k2": testKey(2)}),
			wantOpen: false, wantReseal: true,
		},
		{
			name:     "same id, different key",
			ring:     mustKeyring(t, "k1", map[string][]byte{"k1": testKey(9)}),
			wantOpen: false, wantReseal: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.wantReseal, tc.ring.NeedsReseal(keyID))
			got, err := tc.ring.Open(keyID, sealed, []byte("endpoint-1"))
			if !tc.wantOpen {
				require.ErrorIs(t, err, secretbox.ErrOpen)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []byte("secret"), got)

			// Re-sealing moves the secret to the primary key.
			newID, resealed, err := tc.ring.Seal(got, []byte("endpoint-1"))
			require.NoError(t, err)
			require.Equal(t, tc.ring.PrimaryID(), newID)
			require.False(t, tc.ring.NeedsReseal(newID))
			got, err = tc.ring.Open(newID, resealed, []byte("endpoint-1"))
			require.NoError(t, err)
			require.Equal(t, []byte("secret"), got)
		})
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1), "k2": testKey(2)})
	aad := []byte("endpoint-1")
	keyID, sealed, err := k.Seal([]byte("a webhook secret"), aad)
	require.NoError(t, err)

	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 0x01
		return b
	}
	tests := []struct {
		name   string
		keyID  string
		sealed []byte
		aad    []byte
	}{
		{name: "wrong aad", keyID: keyID, sealed: sealed, aad: []byte("endpoint-2")},
		{name: "missing aad", keyID: keyID, sealed: sealed, aad: nil},
		{name: "other key in ring", keyID: "k2", sealed: sealed, aad: aad},
		{name: "unknown key id", keyID: "k3", sealed: sealed, aad: aad},
		{name: "empty key id", keyID: "", sealed: sealed, aad: aad},
		{name: "flipped bit in nonce", keyID: keyID, sealed: flip(0), aad: aad},
		{name: "flipped bit in last nonce byte", keyID: keyID, sealed: flip(nonceSize - 1), aad: aad},
		{name: "flipped bit in ciphertext", keyID: keyID, sealed: flip(nonceSize), aad: aad},
		{name: "flipped bit in tag", keyID: keyID, sealed: flip(len(sealed) - 1), aad: aad},
		{name: "nil input", keyID: keyID, sealed: nil, aad: aad},
		{name: "nonce only", keyID: keyID, sealed: sealed[:nonceSize], aad: aad},
		{name: "one byte short of nonce and tag", keyID: keyID, sealed: sealed[:nonceSize+tagSize-1], aad: aad},
		{name: "last byte cut", keyID: keyID, sealed: sealed[:len(sealed)-1], aad: aad},
		{name: "extra byte", keyID: keyID, sealed: append(bytes.Clone(sealed), 0), aad: aad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := k.Open(tc.keyID, tc.sealed, tc.aad)
			require.ErrorIs(t, err, secretbox.ErrOpen)
			require.Nil(t, got)
		})
	}
}

func TestSealNoncesDiffer(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1)})
	_, a, err := k.Seal([]byte("same"), []byte("row"))
	require.NoError(t, err)
	_, b, err := k.Seal([]byte("same"), []byte("row"))
	require.NoError(t, err)
	require.NotEqual(t, a[:nonceSize], b[:nonceSize])
	require.NotEqual(t, a, b)
}

func TestZeroKeyringSealFails(t *testing.T) {
	t.Parallel()
	var k secretbox.Keyring
	_, _, err := k.Seal([]byte("x"), nil)
	require.Error(t, err)
	_, err = k.Open("k1", make([]byte, 64), nil)
	require.ErrorIs(t, err, secretbox.ErrOpen)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1)})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for range 50 {
				id, sealed, err := k.Seal([]byte("secret"), []byte("row"))
				if err == nil {
					_, err = k.Open(id, sealed, []byte("row"))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a, err := secretbox.GenerateKey()
	require.NoError(t, err)
	b, err := secretbox.GenerateKey()
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.Len(t, a, 44) // 32 bytes, standard padded base64

	k, err := secretbox.ParseKeyring("new:" + a + ",old:" + b)
	require.NoError(t, err)
	require.Equal(t, "new", k.PrimaryID())
}

// sealFixedNonce builds a sealed value with plain crypto/cipher and a fixed
// nonce: deterministic input for the fuzzer, and an independent check of the
// nonce||ciphertext||tag layout that stored secrets depend on.
func sealFixedNonce(tb testing.TB, key, plaintext, aad []byte) []byte {
	tb.Helper()
	block, err := aes.NewCipher(key)
	require.NoError(tb, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(tb, err)
	nonce := bytes.Repeat([]byte{0x42}, nonceSize)
	return aead.Seal(nonce, nonce, plaintext, aad)
}

func TestOpenStandardLayout(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, "k1", map[string][]byte{"k1": testKey(1)})
	sealed := sealFixedNonce(t, testKey(1), []byte("secret"), []byte("row"))
	got, err := k.Open("k1", sealed, []byte("row"))
	require.NoError(t, err)
	require.Equal(t, []byte("secret"), got)
}
