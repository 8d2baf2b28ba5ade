package structjson

import (
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// str parses the JSON string at e.pos and writes its length and content
// (the tag is the caller's). A string with no escapes, control bytes or
// invalid UTF-8 is copied as it is, with its length known up front.
func (e *encoder) str() error {
	raw := e.raw
	start := e.pos + 1
	ascii := true
	for i := start; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			s := raw[start:i]
			if !ascii && !utf8.Valid(s) {
				return e.strSlow(start)
			}
			e.b = protowire.AppendBytes(e.b, s)
			e.pos = i + 1
			return nil
		case c == '\\' || c < 0x20:
			return e.strSlow(start)
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	e.pos = len(raw)
	return e.syntaxErr()
}

// strSlow decodes the string whose content starts at raw[start] as
// encoding/json does: escapes including \uXXXX surrogate pairs, an unpaired
// surrogate or a byte of invalid UTF-8 as U+FFFD.
func (e *encoder) strSlow(start int) error {
	raw := e.raw
	m := e.reserve()
	plain := start // first byte not yet copied
	for i := start; ; {
		if i >= len(raw) {
			e.pos = i
			return e.syntaxErr()
		}
		c := raw[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		e.b = append(e.b, raw[plain:i]...)
		switch {
		case c == '"':
			e.pos = i + 1
			e.close(m)
			return nil
		case c < 0x20:
			e.pos = i
			return e.syntaxErr()
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				e.b = utf8.AppendRune(e.b, utf8.RuneError)
			} else {
				e.b = append(e.b, raw[i:i+size]...)
			}
			i += size
		default: // '\\'
			n, err := e.escape(i)
			if err != nil {
				return err
			}
			i += n
		}
		plain = i
	}
}

// escape decodes the escape sequence at raw[i] and returns its length.
func (e *encoder) escape(i int) (int, error) {
	raw := e.raw
	if i+1 >= len(raw) {
		e.pos = len(raw)
		return 0, e.syntaxErr()
	}
	switch c := raw[i+1]; c {
	case '"', '\\', '/':
		e.b = append(e.b, c)
	case 'b':
		e.b = append(e.b, '\b')
	case 'f':
		e.b = append(e.b, '\f')
	case 'n':
		e.b = append(e.b, '\n')
	case 'r':
		e.b = append(e.b, '\r')
	case 't':
		e.b = append(e.b, '\t')
	case 'u':
		r := hex4(raw[i:])
		if r < 0 {
			e.pos = i
			return 0, e.syntaxErr()
		}
		n := 6
		if utf16.IsSurrogate(r) {
			// A valid pair is one rune; anything else leaves the
			// next escape to be read on its own.
			if dec := utf16.DecodeRune(r, hex4(raw[i+6:])); dec != utf8.RuneError {
				r, n = dec, 12
			} else {
				r = utf8.RuneError
			}
		}
		e.b = utf8.AppendRune(e.b, r)
		return n, nil
	default:
		e.pos = i + 1
		return 0, e.syntaxErr()
	}
	return 2, nil
}

// hex4 is the rune of the \uXXXX escape at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
