package textcheck_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		in   string
		want error
	}{
		"empty":                     {"", nil},
		"ascii":                     {"dedupe-42", nil},
		"multibyte":                 {"naïve 日本 🎉", nil},
		"tab and newline":           {"a\tb\nc", nil},
		"U+FFFD itself":             {"\uFFFD", nil},
		"a paired surrogate (🎉)":    {"\U0001F389", nil},
		"NUL alone":                 {"\x00", textcheck.ErrNUL},
		"NUL inside":                {"ab\x00cd", textcheck.ErrNUL},
		"NUL after 64 ASCII bytes":  {strings.Repeat("a", 64) + "\x00", textcheck.ErrNUL},
		"stray continuation byte":   {"a\x80b", textcheck.ErrNotUTF8},
		"0xff":                      {"\xff", textcheck.ErrNotUTF8},
		"truncated rune":            {"日"[:2], textcheck.ErrNotUTF8},
		"unpaired high surrogate":   {"\xed\xa0\x80", textcheck.ErrNotUTF8},
		"unpaired low surrogate":    {"x\xed\xbf\xbfy", textcheck.ErrNotUTF8},
		"overlong encoding of '/'":  {"\xc0\xaf", textcheck.ErrNotUTF8},
		"overlong NUL (modified 8)": {"\xc0\x80", textcheck.ErrNotUTF8},
		"beyond U+10FFFF":           {"\xf4\x90\x80\x80", textcheck.ErrNotUTF8},
		"both: NUL is named first":  {"\x00\xff", textcheck.ErrNUL},
	} {
		if c.want == nil {
			require.NoError(t, textcheck.Check(c.in), name)
		} else {
			require.ErrorIs(t, textcheck.Check(c.in), c.want, name)
		}
	}
}

//nolint:paralleltest // AllocsPerRun counts the allocations of every goroutine
func TestCheckAllocatesNothing(t *testing.T) {
	good, bad := strings.Repeat("ok text ", 64), strings.Repeat("ok text ", 64)+"\x00"
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = textcheck.Check(good) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = textcheck.Check(bad) }))
}

func BenchmarkCheck(b *testing.B) {
	s := strings.Repeat("a typical dedupe key ", 4)
	for b.Loop() {
		_ = textcheck.Check(s)
	}
}
