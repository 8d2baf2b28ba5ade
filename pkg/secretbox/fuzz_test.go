package secretbox_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/pkg/secretbox"
)

// FuzzOpen checks that Open never panics and that the only input which opens
// is the untouched ciphertext with its own key id and aad: any mutation of
// the id, the sealed bytes or the aad must fail with ErrOpen.
func FuzzOpen(f *testing.F) {
	k, err := secretbox.NewKeyring("k2", map[string][]byte{"k1": testKey(1), "k2": testKey(2)})
	if err != nil {
		f.Fatal(err)
	}
	// The ciphertext must be the same in every fuzz worker process, so it
	// is built with a fixed nonce rather than by Seal.
	keyID, plaintext, aad := "k2", []byte("whsec_fuzz"), []byte("endpoint-1")
	sealed := sealFixedNonce(f, testKey(2), plaintext, aad)
	f.Add(keyID, sealed, aad)
	f.Add("k1", sealed, aad)
	f.Add(keyID, sealed[:len(sealed)-1], aad)
	f.Add(keyID, sealed[:12], aad)
	f.Add(keyID, []byte{}, []byte{})
	f.Add("", sealed, aad)
	f.Add(keyID, sealed, []byte("endpoint-2"))

	f.Fuzz(func(t *testing.T, id string, in, ad []byte) {
		got, err := k.Open(id, in, ad)
		untouched := id == keyID && bytes.Equal(in, sealed) && bytes.Equal(ad, aad)
		switch {
		case err != nil && !errors.Is(err, secretbox.ErrOpen):
			t.Fatalf("error does not wrap ErrOpen: %v", err)
		case err != nil && got != nil:
			t.Fatalf("plaintext returned alongside error %v", err)
		case err == nil && !untouched:
			t.Fatalf("mutated input opened: id=%q in=%x aad=%x", id, in, ad)
		case err != nil && untouched:
			t.Fatalf("original input failed to open: %v", err)
		case err == nil && !bytes.Equal(got, plaintext):
			t.Fatalf("opened to %q, want %q", got, plaintext)
		}
	})
}

// FuzzParseKeyring checks that ParseKeyring never panics, that a keyring it
// accepts works, and that its errors never echo a key-like part of the input.
func FuzzParseKeyring(f *testing.F) {
	for _, seed := range []string{
		"",
		"k1:" + std1,
		"k2:" + raw2 + ", k1:" + std1,
		"k1:" + std1 + ",k1:" + raw2,
		"k1" + std1,
		std1 + ":k1",
		"k1:" + std1[:20],
		"k1:" + std1 + ",",
		" , ",
		"k1:\n" + std1,
		":",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := secretbox.ParseKeyring(spec)
		if err != nil {
			if k != nil {
				t.Fatal("keyring returned alongside error")
			}
			// A run of 16 base64-alphabet characters cannot occur in the
			// fixed error texts, so finding one from the input is a leak.
			for _, part := range strings.FieldsFunc(spec, notBase64) {
				if len(part) >= 16 && strings.Contains(err.Error(), part) {
					t.Fatalf("error %q echoes input %q", err, part)
				}
			}
			return
		}
		id, sealed, err := k.Seal([]byte("s"), nil)
		if err != nil || id != k.PrimaryID() {
			t.Fatalf("Seal on parsed keyring: id=%q err=%v", id, err)
		}
		if _, err := k.Open(id, sealed, nil); err != nil {
			t.Fatalf("Open on parsed keyring: %v", err)
		}
		if want := "secretbox.Keyring{primary: " + id + ", keys: "; !strings.HasPrefix(k.String(), want) {
			t.Fatalf("String() = %q, want prefix %q", k.String(), want)
		}
	})
}

func notBase64(r rune) bool {
	isBase64 := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+/=_-", r)
	return !isBase64
}
