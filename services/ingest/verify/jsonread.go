package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The readers below take what Describe needs from a body without decoding
// all of it into Go values: each walks one object or array level, keeping
// only the raw bytes of the members it was asked for. Anything that is not
// the expected JSON yields nothing, never an error: the request already
// verified, and a missing topic is not a reason to refuse it. The body is
// bounded by the endpoint's max_body_bytes before it gets here.

// maxPointerSegments bounds a pointer's walk (a pointer is at most 255
// characters, so this is never the binding limit for a valid one).
const maxPointerSegments = 64

// topLevel returns the members named by keys of the JSON object raw (the
// last of a repeated key), or nil when raw is not an object.
func topLevel(raw []byte, keys ...string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	ok := eachMember(raw, func(k string, v json.RawMessage) bool {
		for _, want := range keys {
			if k == want {
				out[k] = v
			}
		}
		return true
	})
	if !ok {
		return nil
	}
	return out
}

// eachMember calls fn for the members of the JSON object raw in order,
// until fn returns false; it reports whether raw was an object (as far as
// it was read). It runs on every delivery of a JSON provider, so it walks
// the bytes itself: each value is found by skipping over it (strings,
// nesting) and checked with json.Valid, with no decoder state or
// allocation per member, and keys are unescaped only when they need it.
func eachMember(raw []byte, fn func(key string, value json.RawMessage) bool) bool {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return false
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return true
	}
	for {
		end, ok := stringEnd(raw, i)
		if !ok {
			return false
		}
		key, ok := jsonString(raw[i:end])
		if !ok {
			return false
		}
		if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
			return false
		}
		start := skipSpace(raw, i+1)
		if end, ok = valueEnd(raw, start); !ok || !json.Valid(raw[start:end]) {
			return false
		}
		if !fn(key, raw[start:end:end]) {
			return true
		}
		if i = skipSpace(raw, end); i == len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
}

// element returns the i-th element of the JSON array raw, or nil (also when
// raw is not an array or is malformed before that element ends).
func element(raw []byte, i int) json.RawMessage {
	j := skipSpace(raw, 0)
	if j == len(raw) || raw[j] != '[' {
		return nil
	}
	if j = skipSpace(raw, j+1); j < len(raw) && raw[j] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		end, ok := valueEnd(raw, j)
		if !ok || !json.Valid(raw[j:end]) {
			return nil
		}
		if n == i {
			return raw[j:end:end]
		}
		if j = skipSpace(raw, end); j == len(raw) || raw[j] != ',' {
			return nil
		}
		j = skipSpace(raw, j+1)
	}
}

// skipSpace is the index of the first byte at or after i that is not JSON
// whitespace (len(raw) if none).
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string starting at raw[i]
// (its closing quote; escapes skipped, not checked).
func stringEnd(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// valueEnd is the index just past the JSON value starting at raw[i]: a
// string, an object or array (brackets counted outside strings, not
// matched: json.Valid checks the value afterwards), or a literal running to
// the next delimiter.
func valueEnd(raw []byte, i int) (int, bool) {
	if i >= len(raw) {
		return 0, false
	}
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, ok := stringEnd(raw, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for ; j < len(raw); j++ {
		switch raw[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j, j > i
		}
	}
	return j, j > i
}

// jsonString is the text of the quoted JSON string q, unescaped as
// encoding/json does (invalid UTF-8 becomes U+FFFD); only a string with an
// escape, a control character or non-ASCII bytes is handed to it.
func jsonString(q []byte) (string, bool) {
	inner := q[1 : len(q)-1]
	for _, c := range inner {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			var s string
			if json.Unmarshal(q, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// scalar is a JSON string's text, a number's or boolean's literal, and ""
// for anything else (an object, an array, null, nothing).
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return s
	case c == 't' || c == 'f' || c == '-' || (c >= '0' && c <= '9'):
		if !json.Valid(raw) {
			return ""
		}
		return string(raw)
	}
	return ""
}

// firstKeySuffix is the first member name of the JSON object raw that ends
// in suffix, or "".
func firstKeySuffix(raw []byte, suffix string) string {
	found := ""
	eachMember(raw, func(k string, _ json.RawMessage) bool {
		if strings.HasSuffix(k, suffix) {
			found = k
			return false
		}
		return true
	})
	return found
}

// formPayload is the "payload" field of a form-encoded body (Slack's
// interactive requests), or nil.
func formPayload(r Request) []byte {
	v, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return nil
	}
	return []byte(v.Get("payload"))
}

// errPointer is returned by ParsePointer for a malformed pointer.
var errPointer = errors.New(`must be a JSON pointer (RFC 6901): "/" then reference tokens separated by "/", "~" only as "~0" or "~1"`)

// ParsePointer splits an RFC 6901 JSON pointer into its unescaped reference
// tokens. The empty pointer (the whole document) is refused: a topic is
// never a whole body.
func ParsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, errPointer
	}
	parts := strings.Split(p[1:], "/")
	if len(parts) > maxPointerSegments {
		return nil, errPointer
	}
	for i, s := range parts {
		for j := 0; j < len(s); j++ {
			if s[j] != '~' {
				continue
			}
			if j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1') {
				return nil, errPointer
			}
			j++
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// pointerTopic is the scalar at pointer p in body ("" when p is malformed
// or leads nowhere). A token indexes an array when it is a decimal index
// without leading zeros.
func pointerTopic(body []byte, p string) string {
	tokens, err := ParsePointer(p)
	if err != nil {
		return ""
	}
	cur := json.RawMessage(body)
	for _, tok := range tokens {
		cur = bytes.TrimSpace(cur)
		if len(cur) == 0 {
			return ""
		}
		switch cur[0] {
		case '{':
			cur = topLevel(cur, tok)[tok]
		case '[':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || (len(tok) > 1 && tok[0] == '0') || tok[0] == '+' {
				return ""
			}
			cur = element(cur, i)
		default:
			return ""
		}
	}
	return scalar(cur)
}
