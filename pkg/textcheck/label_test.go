package textcheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

func TestLabelAcceptsVisibleTextOfEveryScript(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"",
		"message",
		"build.finished",
		"Zoë",
		"東京",
		"Ελληνικά",
		"עברית",          // right-to-left letters are text, not controls
		"مرحبا",          // Arabic, with its joining forms
		"नमस्ते",         // Devanagari: the virama is a mark (Mn), not a format character
		"a b\u00a0c",     // spaces, the no-break one included
		"\u3000",         // the ideographic space is a space
		"build ✓ 🎉",      // symbols and emoji
		"👍🏽",             // a skin-tone modifier
		"e\u0301",        // a combining accent
		"❤\ufe0f",        // an emoji variation selector
		"👩\u200d💻",       // a zero-width joiner inside an emoji sequence
		"👩🏽\u200d💻",      // … after a skin tone
		"🏳\ufe0f\u200d🌈", // … after VS16
		"\uFFFD",
	} {
		require.NoError(t, textcheck.Label(ok), "%+q", ok)
		require.NoError(t, textcheck.Prose(ok), "%+q", ok)
	}
}

func TestLabelRefusesInvisibleAndControlCharacters(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]rune{
		"tab":                               '\t',
		"line feed":                         '\n',
		"carriage return":                   '\r',
		"bell":                              '\a',
		"escape (terminal sequences)":       '\x1b',
		"DEL":                               '\x7f',
		"C1 next line":                      '\u0085',
		"C1 CSI":                            '\u009b',
		"soft hyphen":                       '\u00ad',
		"Arabic letter mark":                '\u061c',
		"Mongolian vowel separator":         '\u180e',
		"zero-width space":                  '\u200b',
		"zero-width non-joiner":             '\u200c',
		"zero-width joiner between letters": '\u200d',
		"left-to-right mark":                '\u200e',
		"right-to-left mark":                '\u200f',
		"line separator":                    '\u2028',
		"paragraph separator":               '\u2029',
		"left-to-right embedding":           '\u202a',
		"right-to-left embedding":           '\u202b',
		"pop directional formatting":        '\u202c',
		"left-to-right override":            '\u202d',
		"right-to-left override":            '\u202e',
		"word joiner":                       '\u2060',
		"invisible times":                   '\u2062',
		"left-to-right isolate":             '\u2066',
		"right-to-left isolate":             '\u2067',
		"first strong isolate":              '\u2068',
		"pop directional isolate":           '\u2069',
		"byte order mark":                   '\ufeff',
		"interlinear annotation anchor":     '\ufff9',
		"language tag":                      '\U000e0001',
		"tag latin small a (hidden ASCII)":  '\U000e0061',
		"cancel tag":                        '\U000e007f',
		"private use":                       '\ue000',
		"supplementary private use":         '\U000f0000',
		"Hangul filler":                     '\u3164',
		"Hangul choseong filler":            '\u115f',
		"halfwidth Hangul filler":           '\uffa0',
		"combining grapheme joiner":         '\u034f',
		"noncharacter U+FFFF":               '\uffff',
		"noncharacter U+FDD0":               '\ufdd0',
	} {
		for _, s := range []string{string(r), "ad" + string(r) + "min", "invoice.paid" + string(r)} {
			err := textcheck.Label(s)
			require.ErrorIs(t, err, textcheck.ErrInvisible, "%s in %+q", name, s)
			var ie *textcheck.InvisibleError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, r, ie.Rune, name)
			require.Contains(t, err.Error(), fmt.Sprintf("%U", r), "the error names the character")
		}
	}
}

func TestLabelErrorNamesTheCharacter(t *testing.T) {
	t.Parallel()
	err := textcheck.Label("ok\u202Etxt.exe")
	require.EqualError(t, err, "contains U+202E, an invisible formatting character (bidi control, zero-width or tag); only visible characters are accepted")
	require.EqualError(t, textcheck.Label("a\tb"), "contains U+0009, a control character; only visible characters are accepted")
}

func TestLabelKeepsCheckRules(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, textcheck.Label("a\x00b"), textcheck.ErrNUL)
	require.ErrorIs(t, textcheck.Label("a\xffb"), textcheck.ErrNotUTF8)
	require.ErrorIs(t, textcheck.Prose("a\x00b"), textcheck.ErrNUL)
}

func TestZeroWidthJoinerOnlyInsideEmoji(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"\u200d", "a\u200d", "\u200d💻", "a\u200db", "💻\u200da", "a\u200d💻", "👩\u200d\u200d💻"} {
		require.ErrorIs(t, textcheck.Label(bad), textcheck.ErrInvisible, "%+q", bad)
	}
}

func TestProseAcceptsLineBreaksAndTabsOnly(t *testing.T) {
	t.Parallel()
	require.NoError(t, textcheck.Prose("Handles invoices.\r\n\tThen pays them.\n"))
	for _, bad := range []string{"a\u2028b", "a\u202eb", "a\x1b[31mb", "a\u200bb", "a\vb", "a\fb"} {
		require.ErrorIs(t, textcheck.Prose(bad), textcheck.ErrInvisible, "%+q", bad)
	}
}

//nolint:paralleltest // AllocsPerRun counts the allocations of every goroutine
func TestLabelAllocatesNothingWhenValid(t *testing.T) {
	ascii, mixed := strings.Repeat("build.finished ", 16), strings.Repeat("Zoë 東京 👩\u200d💻 ", 8)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = textcheck.Label(ascii) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = textcheck.Label(mixed) }))
}
