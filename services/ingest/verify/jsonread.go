package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
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
// it was read).
func eachMember(raw []byte, fn func(key string, value json.RawMessage) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if !fn(key, v) {
			return true
		}
	}
	return true
}

// element returns the i-th element of the JSON array raw, or nil.
func element(raw []byte, i int) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	for n := 0; dec.More(); n++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if n == i {
			return v
		}
	}
	return nil
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
