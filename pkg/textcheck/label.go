package textcheck

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Labels are the text a person reads to decide what something is: display
// names, realtime kinds, event topics, credential and endpoint names. Check
// keeps them storable; Label also keeps them honest. A character that
// renders as nothing, or that reorders the characters around it, lets one
// label pass for another: "invoice.paid" followed by U+202E and a reversed
// tail reads as something else in the console (the Trojan Source trick), a
// zero-width space makes "admin" and "ad\u200bmin" two different names that
// look the same, and the Unicode tag characters (U+E0000…) carry hidden
// ASCII that a language model reads and a person does not. Letters, marks,
// digits, punctuation, symbols and spaces of every script stay valid:
// "Zoë", "東京" and "build ✓" are labels.
//
// Refused, with the reason in the error:
//
//   - control characters (Cc: C0, DEL, C1), tab and line breaks included;
//   - format characters (Cf): the bidi embeddings, overrides and isolates
//     (U+202A–U+202E, U+2066–U+2069), the marks U+200E, U+200F and U+061C,
//     zero-width space and joiners (U+200B–U+200D), the word joiner
//     U+2060, U+FEFF, the soft hyphen, the tags U+E0000–U+E007F; except a
//     zero-width joiner between two emoji, which is how "👩‍💻" is written
//     and joins visibly or not at all;
//   - the line and paragraph separators U+2028 and U+2029 (Zl, Zp);
//   - private-use characters (Co): they show as whatever a font chooses;
//   - the other default-ignorable characters (Hangul fillers such as
//     U+3164, the combining grapheme joiner U+034F): letters by category,
//     but blank, the usual way to make a name look empty;
//   - noncharacters (U+FFFE, U+FFFF, U+FDD0…), never meant for interchange.
//
// Prose (a description) is held to the same rule except that it may break
// lines and indent: tab, line feed and carriage return pass.

// ErrInvisible is what Label and Prose refuse (errors.Is matches it); the
// error itself names the character.
var ErrInvisible = errors.New("contains a character that is invisible or controls layout")

// Label returns nil when s is acceptable text (Check) that a person can
// read as it is: see the rule above. It allocates only to report a refusal.
func Label(s string) error { return visible(s, false) }

// Prose is Label for multi-line free text: tab, line feed and carriage
// return are accepted as well.
func Prose(s string) error { return visible(s, true) }

func visible(s string, prose bool) error {
	if err := Check(s); err != nil {
		return err
	}
	var prev rune
	for i, r := range s {
		if r >= ' ' && r <= '~' { // printable ASCII, the common case
			prev = r
			continue
		}
		if prose && (r == '\t' || r == '\n' || r == '\r') {
			prev = r
			continue
		}
		what := refused(r)
		if what != "" && (r != zeroWidthJoiner || !joinsEmoji(prev, s[i+utf8.RuneLen(r):])) {
			return &InvisibleError{Rune: r, what: what}
		}
		prev = r
	}
	return nil
}

// refused says what kind of character r is when a label may not hold it,
// else "".
func refused(r rune) string {
	switch {
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Cf, r):
		return "an invisible formatting character (bidi control, zero-width or tag)"
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "a line or paragraph separator"
	case unicode.Is(unicode.Co, r):
		return "a private-use character"
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return "a blank filler character"
	case unicode.Is(unicode.Noncharacter_Code_Point, r):
		return "a noncharacter"
	}
	return ""
}

const (
	zeroWidthJoiner = '\u200D'
	// emojiPresentation (VS16) makes the character before it an emoji; it
	// often sits right before a joiner ("🏳️‍🌈").
	emojiPresentation = '\uFE0F'
)

// joinsEmoji reports whether a zero-width joiner after prev and before rest
// sits inside an emoji sequence: an emoji (a symbol, a skin-tone modifier,
// or VS16) before it and an emoji symbol after it.
func joinsEmoji(prev rune, rest string) bool {
	next, _ := utf8.DecodeRuneInString(rest)
	before := unicode.In(prev, unicode.So, unicode.Sk) || prev == emojiPresentation
	return before && unicode.Is(unicode.So, next)
}

// InvisibleError is a refusal of Label or Prose: the character and what
// kind it is. Its text completes "<field> …" in a client's error.
type InvisibleError struct {
	Rune rune
	what string
}

func (e *InvisibleError) Error() string {
	return fmt.Sprintf("contains %U, %s; only visible characters are accepted", e.Rune, e.what)
}

// Is makes errors.Is(err, ErrInvisible) true.
func (e *InvisibleError) Is(target error) bool { return target == ErrInvisible }
