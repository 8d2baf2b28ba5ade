package auth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/auth"
)

func TestNewTokenParses(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		tok, display, err := auth.NewToken()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(tok, auth.TokenPrefix))
		require.Equal(t, tok[:auth.DisplayPrefixLen], display)
		require.NoError(t, auth.ParseToken(tok))
		require.False(t, seen[tok])
		seen[tok] = true
	}
}

func TestParseTokenRejectsDamage(t *testing.T) {
	t.Parallel()
	tok, _, err := auth.NewToken()
	require.NoError(t, err)
	flipped := []byte(tok)
	flipped[10] ^= 0x01
	for name, bad := range map[string]string{
		"empty":      "",
		"truncated":  tok[:len(tok)-1],
		"extended":   tok + "A",
		"prefix":     "xbt_" + tok[4:],
		"typo":       string(flipped),
		"bearer":     "Bearer " + tok,
		"whitespace": " " + tok[1:],
	} {
		require.Error(t, auth.ParseToken(bad), name)
	}
}

func TestHasherIsKeyed(t *testing.T) {
	t.Parallel()
	tok, _, err := auth.NewToken()
	require.NoError(t, err)
	a, b := auth.NewHasher([]byte("key-a")), auth.NewHasher([]byte("key-b"))
	require.Len(t, a.Hash(tok), 32)
	require.Equal(t, a.Hash(tok), auth.NewHasher([]byte("key-a")).Hash(tok), "deterministic for one key")
	require.NotEqual(t, a.Hash(tok), b.Hash(tok))
}

func FuzzParseToken(f *testing.F) {
	tok, _, err := auth.NewToken()
	require.NoError(f, err)
	f.Add(tok)
	f.Add("")
	f.Add(auth.TokenPrefix)
	f.Add(tok[:len(tok)-2] + "==")
	f.Fuzz(func(t *testing.T, s string) {
		if auth.ParseToken(s) != nil {
			return
		}
		// Anything accepted is exactly a well-formed token.
		require.Len(t, s, len(tok))
		require.True(t, strings.HasPrefix(s, auth.TokenPrefix))
	})
}
