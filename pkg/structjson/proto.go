package structjson

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrSyntax is returned by AppendStructProto for input that is not JSON.
var ErrSyntax = errors.New("invalid JSON")

// Wire tags of google.protobuf.Struct, its map entry, Value and ListValue
// (google/protobuf/struct.proto; TestWireTagsMatchStructpb checks them
// against the generated descriptors). Every field number is below 16, so
// each tag is one byte.
const (
	tagStructFields = byte(1<<3) | byte(protowire.BytesType) // Struct.fields, one map entry
	tagEntryKey     = byte(1<<3) | byte(protowire.BytesType) // entry key (string)
	tagEntryValue   = byte(2<<3) | byte(protowire.BytesType) // entry value (Value)
	tagNullValue    = byte(1<<3) | byte(protowire.VarintType)
	tagNumberValue  = byte(2<<3) | byte(protowire.Fixed64Type)
	tagStringValue  = byte(3<<3) | byte(protowire.BytesType)
	tagBoolValue    = byte(4<<3) | byte(protowire.VarintType)
	tagStructValue  = byte(5<<3) | byte(protowire.BytesType)
	tagListValue    = byte(6<<3) | byte(protowire.BytesType)
	tagListValues   = byte(1<<3) | byte(protowire.BytesType) // ListValue.values
)

// AppendStructProto parses the JSON object raw and appends to b the
// protobuf encoding of the google.protobuf.Struct that FromJSON would
// return: the bytes proto.Marshal gives for it (its fields only, no outer
// tag or length), except that map entries come in the order of raw and a
// duplicated key is written twice (a protobuf decoder keeps the last entry,
// as encoding/json keeps the last value). It refuses what FromJSON refuses,
// with ErrTooDeep, ErrNotObject, ErrSyntax or a number out of range
// (wrapping strconv.ErrRange), and then returns b at its original length.
//
// It exists for the realtime hot path, which only needs the serialized
// Struct: parsing into map[string]any, converting to structpb.Value and
// marshaling cost dozens of allocations per event and a significant share
// of a busy node's CPU; this writes the wire format straight from the text
// and allocates nothing but the growth of b.
func AppendStructProto(b, raw []byte) ([]byte, error) {
	e := encoder{raw: raw, b: b}
	e.skipSpace()
	isObject := e.peek() == '{'
	var err error
	if isObject {
		err = e.object(1)
	} else {
		// Parsed as a Value anyway, so that a deep or invalid non-object
		// gets the error FromJSON gives it (ErrTooDeep, a syntax error)
		// rather than ErrNotObject.
		err = e.value(0)
	}
	if err == nil {
		e.skipSpace()
		if e.pos < len(raw) {
			err = e.syntaxErr()
		}
	}
	if err == nil && !isObject {
		err = ErrNotObject
	}
	if err != nil {
		return b, err
	}
	return e.finish(), nil
}

// encoder writes the wire format while it parses. A nested message needs
// its length before its content, which is not known until the content is
// written: open reserves one byte, enough for the usual value under 128
// bytes, and close fills it in. A longer message is recorded as a fixup and
// finish widens all of them in one backward pass, so that each byte moves
// at most once however deep the nesting (widening each message as it
// closed would move a deep value once per enclosing level).
type encoder struct {
	raw   []byte
	pos   int // next byte of raw to read
	b     []byte
	extra int // bytes the recorded fixups add to b

	// The messages of 128 bytes or more, in closing order: the first ones
	// in fix, inside the encoder (on the stack) because a long string
	// records three or more and a list per call would be the only
	// allocation left; all of them in more once fix is full. (A slice of
	// fix kept in the encoder would move it to the heap.)
	fix  [16]fixup
	nfix int
	more []fixup
}

// fixup is a length of n bytes to write at b[at], where one byte is
// reserved for it.
type fixup struct{ at, n int }

// mark is an open message: where its length goes and e.extra at that time.
type mark struct{ at, extra int }

// open appends tag and reserves a byte for the length of what follows.
func (e *encoder) open(tag byte) mark {
	e.b = append(e.b, tag)
	return e.reserve()
}

// reserve reserves a byte for the length of what follows.
func (e *encoder) reserve() mark {
	e.b = append(e.b, 0)
	return mark{at: len(e.b) - 1, extra: e.extra}
}

// close sets the length of the message opened at m to what was written
// since, counting the widening of fixups recorded inside it.
func (e *encoder) close(m mark) {
	n := len(e.b) - m.at - 1 + e.extra - m.extra
	if n < 0x80 {
		e.b[m.at] = byte(n)
		return
	}
	f := fixup{at: m.at, n: n}
	switch {
	case e.more != nil:
		e.more = append(e.more, f)
	case e.nfix < len(e.fix):
		e.fix[e.nfix] = f
		e.nfix++
	default:
		e.more = append(append(make([]fixup, 0, 4*len(e.fix)), e.fix[:]...), f)
	}
	e.extra += protowire.SizeVarint(uint64(n)) - 1
}

// finish widens the reserved byte of every fixup to its varint: from the
// last fixup to the first, the bytes after it move right by the widening
// of it and all fixups before it, then its varint goes in front of them.
func (e *encoder) finish() []byte {
	fix := e.more
	if fix == nil {
		fix = e.fix[:e.nfix]
	}
	if len(fix) == 0 {
		return e.b
	}
	// Closing order is post-order (inner before outer); the pass needs
	// positions, descending.
	slices.SortFunc(fix, func(x, y fixup) int { return y.at - x.at })
	end := len(e.b)
	b := slices.Grow(e.b, e.extra)[:end+e.extra]
	shift := e.extra
	for _, f := range fix {
		copy(b[f.at+1+shift:], b[f.at+1:end])
		size := protowire.SizeVarint(uint64(f.n))
		shift -= size - 1
		// Appending to an empty slice of b writes in place: it has room.
		protowire.AppendVarint(b[f.at+shift:f.at+shift], uint64(f.n))
		end = f.at
	}
	return b
}

func (e *encoder) peek() byte {
	if e.pos < len(e.raw) {
		return e.raw[e.pos]
	}
	return 0
}

// skipSpace skips the whitespace JSON allows between tokens.
func (e *encoder) skipSpace() {
	for e.pos < len(e.raw) {
		switch e.raw[e.pos] {
		case ' ', '\t', '\n', '\r':
			e.pos++
		default:
			return
		}
	}
}

// syntaxErr reports the byte at e.pos as unexpected.
func (e *encoder) syntaxErr() error {
	if e.pos >= len(e.raw) {
		return fmt.Errorf("%w: unexpected end of input", ErrSyntax)
	}
	return fmt.Errorf("%w: unexpected %q at offset %d", ErrSyntax, e.raw[e.pos], e.pos)
}
