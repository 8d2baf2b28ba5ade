package structjson

import (
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The parser below accepts exactly the JSON encoding/json accepts and
// decodes it to the same values (FuzzAppendStructProto compares them).

// object parses the object at e.pos, at nesting level depth (the top-level
// object is 1), and writes its members as Struct.fields entries.
func (e *encoder) object(depth int) error {
	if depth > MaxReadDepth {
		return ErrTooDeep
	}
	e.pos++ // '{'
	e.skipSpace()
	if e.peek() == '}' {
		e.pos++
		return nil
	}
	for {
		if e.peek() != '"' {
			return e.syntaxErr()
		}
		entry := e.open(tagStructFields)
		e.b = append(e.b, tagEntryKey)
		if err := e.str(); err != nil {
			return err
		}
		e.skipSpace()
		if e.peek() != ':' {
			return e.syntaxErr()
		}
		e.pos++
		e.skipSpace()
		val := e.open(tagEntryValue)
		if err := e.value(depth); err != nil {
			return err
		}
		e.close(val)
		e.close(entry)
		e.skipSpace()
		switch e.peek() {
		case ',':
			e.pos++
			e.skipSpace()
		case '}':
			e.pos++
			return nil
		default:
			return e.syntaxErr()
		}
	}
}

// array parses the array at e.pos, at nesting level depth, and writes its
// elements as ListValue.values.
func (e *encoder) array(depth int) error {
	if depth > MaxReadDepth {
		return ErrTooDeep
	}
	e.pos++ // '['
	e.skipSpace()
	if e.peek() == ']' {
		e.pos++
		return nil
	}
	for {
		elem := e.open(tagListValues)
		if err := e.value(depth); err != nil {
			return err
		}
		e.close(elem)
		e.skipSpace()
		switch e.peek() {
		case ',':
			e.pos++
			e.skipSpace()
		case ']':
			e.pos++
			return nil
		default:
			return e.syntaxErr()
		}
	}
}

// value parses any JSON value at e.pos, inside depth levels of objects and
// arrays, and writes it as the fields of a Value. Every kind is written
// even when zero: oneof members are always present on the wire.
func (e *encoder) value(depth int) error {
	switch c := e.peek(); c {
	case '{':
		m := e.open(tagStructValue)
		if err := e.object(depth + 1); err != nil {
			return err
		}
		e.close(m)
	case '[':
		m := e.open(tagListValue)
		if err := e.array(depth + 1); err != nil {
			return err
		}
		e.close(m)
	case '"':
		e.b = append(e.b, tagStringValue)
		return e.str()
	case 't':
		return e.literal("true", tagBoolValue, 1)
	case 'f':
		return e.literal("false", tagBoolValue, 0)
	case 'n':
		return e.literal("null", tagNullValue, 0) // NullValue.NULL_VALUE
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return e.number()
		}
		return e.syntaxErr()
	}
	return nil
}

// literal consumes word and writes tag with the one-byte varint v.
func (e *encoder) literal(word string, tag, v byte) error {
	if len(e.raw)-e.pos < len(word) || string(e.raw[e.pos:e.pos+len(word)]) != word {
		return e.syntaxErr()
	}
	e.pos += len(word)
	e.b = append(e.b, tag, v)
	return nil
}

// number parses a JSON number and writes it as number_value. The value is
// strconv.ParseFloat's, as encoding/json gives for an interface{}, and
// like it refuses a number beyond the range of a double.
func (e *encoder) number() error {
	raw, start := e.raw, e.pos
	i := start
	if raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && '1' <= raw[i] && raw[i] <= '9':
		i = skipDigits(raw, i)
	default:
		e.pos = i
		return e.syntaxErr()
	}
	if i < len(raw) && raw[i] == '.' {
		if i = skipDigits(raw, i+1); raw[i-1] == '.' {
			e.pos = i
			return e.syntaxErr()
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		if j := skipDigits(raw, i); j > i {
			i = j
		} else {
			e.pos = i
			return e.syntaxErr()
		}
	}
	// string(…) in a call that does not keep it: no allocation for the
	// usual short number.
	f, err := strconv.ParseFloat(string(raw[start:i]), 64)
	if err != nil {
		return fmt.Errorf("number %s does not fit a double: %w", raw[start:i], err)
	}
	e.pos = i
	e.b = append(e.b, tagNumberValue)
	e.b = protowire.AppendFixed64(e.b, math.Float64bits(f))
	return nil
}

func skipDigits(raw []byte, i int) int {
	for i < len(raw) && '0' <= raw[i] && raw[i] <= '9' {
		i++
	}
	return i
}
