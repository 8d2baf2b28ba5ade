package grpcserver

import (
	"bytes"
	"crypto/rand"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A request that fails to decode never reaches an interceptor on its own:
// grpc-go decodes a unary request before the interceptor chain, and when
// the codec fails it writes INTERNAL "grpc: failed to unmarshal the received
// message" at once, whatever error the codec returned (server.go
// wrapUnaryHandler → stream.go serverStream.RecvMsg → rpc_util.go recv).
// protobuf decoding fails on invalid UTF-8 in a proto3 string and on
// messages nested past its 10,000-level limit, both the caller's fault.
//
// So the codec, on a decode error, finds the first offending field in the
// wire bytes (wireViolation, the guard's rules over the same descriptors),
// resets the message and marks it with the violation; it then reports
// success, and the guard, which runs before any handler, answers
// INVALID_ARGUMENT naming the field. The mark is one unknown field whose
// value starts with a random token of this process, so a client cannot
// forge it, and it lives and dies with the message (no side table to leak).

// faultField is the field number of the mark: the largest there is.
const faultField protowire.Number = protowire.MaxValidNumber

var faultToken = func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return b
}()

// markFault replaces m's content with the mark of v.
func markFault(m proto.Message, v *violation) {
	proto.Reset(m)
	val := append(append(append(append([]byte{}, faultToken...), v.field()...), 0), v.why...)
	mark := protowire.AppendBytes(protowire.AppendTag(nil, faultField, protowire.BytesType), val)
	m.ProtoReflect().SetUnknown(mark)
}

// decodeFault is the violation markFault left on m, if any.
func decodeFault(m protoreflect.Message) *violation {
	u := m.GetUnknown()
	if len(u) == 0 {
		return nil
	}
	num, typ, n := protowire.ConsumeTag(u)
	if n < 0 || num != faultField || typ != protowire.BytesType {
		return nil
	}
	val, n := protowire.ConsumeBytes(u[n:])
	if n < 0 || !bytes.HasPrefix(val, faultToken) {
		return nil
	}
	field, why, _ := bytes.Cut(val[len(faultToken):], []byte{0})
	return &violation{segs: []string{string(field)}, why: string(why)}
}

// undecodable is the violation of a message that failed to decode for a
// reason wireViolation does not name (broken wire bytes).
var undecodable = violation{why: "is not a well-formed protobuf message"}

// wireViolation is the first field of the encoded message b (of type md,
// held at level l) that breaks the guard's rules, or nil. It reads only
// what it needs: strings, and the messages that may hold them.
func wireViolation(b []byte, md protoreflect.MessageDescriptor, l level) *violation {
	k := kindOf(md)
	l, v := l.enter(k)
	if v != nil {
		return v
	}
	var seen map[protowire.Number]int // occurrences so far: a repeated field's index
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType || (!fd.IsMap() && !walked(fd.Kind())) {
			// Unknown, a scalar, or a wire type the decoder keeps as unknown.
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		val, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		var index int
		if fd.IsList() {
			if seen == nil {
				seen = map[protowire.Number]int{}
			}
			index = seen[num]
			seen[num]++
		}
		if v := wireField(val, fd, l); v != nil {
			if fd.IsList() {
				v.at(k, indexSeg(index))
			}
			return v.at(k, fieldSeg(k, fd))
		}
	}
	return nil
}

// wireField checks one occurrence of fd: a string, a message, or a map entry.
func wireField(val []byte, fd protoreflect.FieldDescriptor, l level) *violation {
	switch {
	case fd.IsMap():
		return wireMapEntry(val, fd, l)
	case fd.Kind() == protoreflect.StringKind:
		return checkText(string(val), "")
	default:
		return wireViolation(val, fd.Message(), l)
	}
}

// wireMapEntry checks a map entry (key = 1, value = 2), with its key's
// segment when something in it is wrong.
func wireMapEntry(b []byte, fd protoreflect.FieldDescriptor, l level) *violation {
	var key, val []byte
	var haveVal bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			if num == 1 {
				key = v
			} else {
				val, haveVal = v, true
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil
		}
		b = b[n:]
	}
	stringKeys := fd.MapKey().Kind() == protoreflect.StringKind
	var v *violation
	if stringKeys {
		v = checkText(string(key), "key ")
	}
	if vfd := fd.MapValue(); v == nil && haveVal && walked(vfd.Kind()) {
		v = wireField(val, vfd, l)
	}
	if v == nil {
		return nil
	}
	// The entry's container decides the style: Struct.fields reads as a key.
	k := kindOf(fd.ContainingMessage())
	seg := "[?]"
	if stringKeys {
		seg = mapKeySeg(k, protoreflect.ValueOfString(string(key)).MapKey(), true)
	}
	return v.at(k, seg)
}
