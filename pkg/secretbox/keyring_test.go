package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/secretbox"
)

// Distinctive keys, so that a leak of any encoding of them is easy to spot.
var (
	key1 = bytes.Repeat([]byte{0xA1, 0xB2, 0xC3, 0xD4}, 8)
	key2 = bytes.Repeat([]byte{0x5E, 0x6F, 0x70, 0x81}, 8)
	std1 = base64.StdEncoding.EncodeToString(key1)
	raw2 = base64.RawURLEncoding.EncodeToString(key2)
)

func TestParseKeyringValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    string
		primary string
		keys    int
	}{
		{name: "single standard", spec: "k1:" + std1, primary: "k1", keys: 1},
		{name: "single raw url", spec: "k2:" + raw2, primary: "k2", keys: 1},
		{name: "first is primary", spec: "k2:" + raw2 + ",k1:" + std1, primary: "k2", keys: 2},
		{name: "whitespace around entries", spec: "  k1:" + std1 + " ,\n\tk2:" + raw2 + "\n", primary: "k1", keys: 2},
		{name: "id charset", spec: "Key_2024-01:" + std1, primary: "Key_2024-01", keys: 1},
		{name: "32-char id", spec: strings.Repeat("a", 32) + ":" + std1, primary: strings.Repeat("a", 32), keys: 1},
		{name: "same key under two ids", spec: "a:" + std1 + ",b:" + std1, primary: "a", keys: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := secretbox.ParseKeyring(tc.spec)
			require.NoError(t, err)
			require.Equal(t, tc.primary, k.PrimaryID())
			require.Equal(t, fmt.Sprintf("secretbox.Keyring{primary: %s, keys: %d}", tc.primary, tc.keys), k.String())
			id, sealed, err := k.Seal([]byte("s"), []byte("row"))
			require.NoError(t, err)
			require.Equal(t, tc.primary, id)
			got, err := k.Open(id, sealed, []byte("row"))
			require.NoError(t, err)
			require.Equal(t, []byte("s"), got)
		})
	}
}

func TestParseKeyringParsesKeys(t *testing.T) {
	t.Parallel()
	// A secret sealed under a NewKeyring key opens under the parsed keyring,
	// so both base64 forms decode to the intended bytes.
	for _, tc := range []struct {
		name, spec string
		key        []byte
	}{
		{name: "standard", spec: "k:" + std1, key: key1},
		{name: "raw url", spec: "k:" + raw2, key: key2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := mustKeyring(t, "k", map[string][]byte{"k": tc.key})
			parsed, err := secretbox.ParseKeyring(tc.spec)
			require.NoError(t, err)
			id, sealed, err := direct.Seal([]byte("s"), nil)
			require.NoError(t, err)
			got, err := parsed.Open(id, sealed, nil)
			require.NoError(t, err)
			require.Equal(t, []byte("s"), got)
		})
	}
}

func TestParseKeyringInvalid(t *testing.T) {
	t.Parallel()
	std16 := base64.StdEncoding.EncodeToString(key1[:16])
	std31 := base64.StdEncoding.EncodeToString(key1[:31])
	std33 := base64.StdEncoding.EncodeToString(append(bytes.Clone(key1), 0))
	tests := []struct {
		name    string
		spec    string
		wantMsg string
	}{
		{name: "empty", spec: "", wantMsg: "empty"},
		{name: "blank", spec: "  \n", wantMsg: "empty"},
		{name: "empty entry", spec: "k1:" + std1 + ",", wantMsg: "entry 2 is empty"},
		{name: "missing colon", spec: "k1" + std1, wantMsg: "entry 1: want id:base64key"},
		{name: "key and id swapped", spec: std1 + ":k1", wantMsg: "entry 1: key id"},
		{name: "empty id", spec: ":" + std1, wantMsg: "entry 1: key id must be 1-32"},
		{name: "33-char id", spec: strings.Repeat("a", 33) + ":" + std1, wantMsg: "entry 1: key id must be 1-32"},
		{name: "bad id chars", spec: "k1:" + std1 + ",k.2:" + raw2, wantMsg: "entry 2: key id may contain only"},
		{name: "space in id", spec: "k 1:" + std1, wantMsg: "entry 1: key id may contain only"},
		{name: "empty key", spec: "k1:", wantMsg: "entry 1: key is not valid base64"},
		{name: "bad base64", spec: "k1:" + std1[:20] + "!" + std1[21:], wantMsg: "entry 1: key is not valid base64"},
		{name: "space after colon", spec: "k1: " + std1, wantMsg: "entry 1: key is not valid base64"},
		{name: "line break in key", spec: "k1:" + std1[:22] + "\n" + std1[22:], wantMsg: "entry 1: key is not valid base64"},
		{name: "raw std without padding is accepted only as url", spec: "k1:" + strings.TrimRight(std1, "="), wantMsg: ""},
		{name: "16-byte key", spec: "k1:" + std16, wantMsg: "entry 1: key is 16 bytes, want 32"},
		{name: "31-byte key", spec: "k1:" + std31, wantMsg: "entry 1: key is 31 bytes, want 32"},
		{name: "33-byte key", spec: "k1:" + std33, wantMsg: "entry 1: key is 33 bytes, want 32"},
		{name: "duplicate id", spec: "k1:" + std1 + ",k2:" + raw2 + ",k1:" + raw2, wantMsg: "entry 3: duplicate key id (same as entry 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := secretbox.ParseKeyring(tc.spec)
			if tc.wantMsg == "" {
				// Documents a boundary rather than a failure: see the case name.
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Nil(t, k)
			require.Contains(t, err.Error(), tc.wantMsg)
			requireNoKeyMaterial(t, err.Error())
		})
	}
}

func TestNewKeyringInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		primary string
		keys    map[string][]byte
		wantMsg string
	}{
		{name: "no keys", primary: "k1", keys: nil, wantMsg: "empty"},
		{name: "primary missing", primary: "k3", keys: map[string][]byte{"k1": key1}, wantMsg: "primary key id is not among"},
		{name: "bad id", primary: "k1", keys: map[string][]byte{"k1": key1, "k/2": key2}, wantMsg: "key id may contain only"},
		{name: "bad primary id", primary: "", keys: map[string][]byte{"": key1}, wantMsg: "key id must be 1-32"},
		{name: "16-byte key", primary: "k1", keys: map[string][]byte{"k1": key1[:16]}, wantMsg: `key "k1" is 16 bytes, want 32`},
		{name: "31-byte secondary key", primary: "k1", keys: map[string][]byte{"k1": key1, "k2": key2[:31]}, wantMsg: `key "k2" is 31 bytes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := secretbox.NewKeyring(tc.primary, tc.keys)
			require.Error(t, err)
			require.Nil(t, k)
			require.Contains(t, err.Error(), tc.wantMsg)
			requireNoKeyMaterial(t, err.Error())
		})
	}
}

func TestFormatHidesKeys(t *testing.T) {
	t.Parallel()
	k, err := secretbox.ParseKeyring("k1:" + std1 + ",k2:" + raw2)
	require.NoError(t, err)
	const want = "secretbox.Keyring{primary: k1, keys: 2}"
	for _, tc := range []struct {
		name string
		arg  any
	}{
		{name: "pointer", arg: k},
		{name: "value", arg: *k},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := fmt.Sprintf("%v %+v %#v %s", tc.arg, tc.arg, tc.arg, tc.arg)
			require.Equal(t, strings.Repeat(want+" ", 3)+want, out)
			// Verbs that would otherwise dump struct fields or bytes.
			out = fmt.Sprintf("%x %X %d %q %T", tc.arg, tc.arg, tc.arg, tc.arg, tc.arg)
			requireNoKeyMaterial(t, out)
			require.Contains(t, out, want)
		})
	}
}

// requireNoKeyMaterial fails if s contains any test key in a common
// encoding.
func requireNoKeyMaterial(t *testing.T, s string) {
	t.Helper()
	for _, key := range [][]byte{key1, key2} {
		for _, enc := range []string{
			base64.StdEncoding.EncodeToString(key),
			base64.RawURLEncoding.EncodeToString(key),
			base64.StdEncoding.EncodeToString(key[:16]),
			fmt.Sprintf("%x", key[:8]),
			fmt.Sprintf("%d", key[:4]),
			string(key[:4]),
		} {
			require.NotContains(t, s, enc)
		}
		// Any 8-character run of the key's base64 is enough to flag a leak.
		b64 := base64.StdEncoding.EncodeToString(key)
		for i := 0; i+8 <= len(b64); i += 4 {
			require.NotContains(t, s, b64[i:i+8])
		}
	}
}
