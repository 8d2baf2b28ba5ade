package grpcserver

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// The request guard refuses, for every RPC and before any handler or
// protovalidate rule runs, what would otherwise fail deep inside a handler
// or poison later reads:
//
//   - text PostgreSQL cannot store: every string of the request (fields,
//     repeated elements, map keys and values, and the keys and string
//     values inside google.protobuf.Struct/Value/ListValue) must pass
//     textcheck.Check (valid UTF-8, no NUL);
//   - JSON nested deeper than MaxJSONDepth in any Struct/Value/ListValue
//     field (payload, result, metadata, realtime payloads…);
//   - request messages nested deeper than MaxMessageDepth.
//
// A refusal is INVALID_ARGUMENT with a google.rpc.BadRequest naming the
// field by its proto path (items[3].dedupe_key, headers["x-id"],
// payload.a.b) and nothing is written. Requests that the codec could not
// decode at all (codec.go) are refused here too, with the same path.
//
// The guard runs on every request, the hot Heartbeat and Complete paths
// included, so the all-valid case allocates (nearly) nothing: it reads the
// fields through protoreflect without building a path, walks Structs as Go
// maps, and builds the path of a violation only on the way back up.

// MaxJSONDepth is the deepest JSON nesting a request may carry in any
// google.protobuf.Struct, Value or ListValue field ({} is one level,
// {"a":[1]} two). Payloads are read back as protobuf, where each JSON level
// costs up to three message levels: 64 levels keep every stored value far
// inside the 10,000 levels any protobuf decoder accepts and the 1,000 that
// pkg/structjson renders (a margin for rows written before this cap).
const MaxJSONDepth = 64

// MaxMessageDepth is the deepest nesting of request messages outside JSON
// values (the request itself is level 1). No contract nests more than a
// few levels; the cap only bounds what a hand-made message could do.
const MaxMessageDepth = 32

func unaryGuard(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := guard(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func streamGuard(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, guardedStream{ss})
}

// guardedStream guards each message the client sends on a stream.
type guardedStream struct{ grpc.ServerStream }

func (g guardedStream) RecvMsg(m any) error {
	if err := g.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return guard(m)
}

// guard is nil for an acceptable request, else its INVALID_ARGUMENT.
func guard(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	r := pm.ProtoReflect()
	if v := decodeFault(r); v != nil {
		return v.err()
	}
	if v := checkMessage(r, level{}); v != nil {
		return v.err()
	}
	return nil
}

// level is how deep a walk is: request messages, and JSON levels.
type level struct{ msg, json int }

// kind is how the guard treats a message type: the JSON types have their
// own depth and path rules.
type kind int

const (
	plain kind = iota
	jsonStruct
	jsonList
	jsonValue
)

func kindOf(md protoreflect.MessageDescriptor) kind {
	switch md.FullName() {
	case "google.protobuf.Struct":
		return jsonStruct
	case "google.protobuf.ListValue":
		return jsonList
	case "google.protobuf.Value":
		return jsonValue
	}
	return plain
}

// enter is the level inside a message of kind k, or a violation when that
// is past a limit.
func (l level) enter(k kind) (level, *violation) {
	switch k {
	case plain:
		if l.msg++; l.msg > MaxMessageDepth {
			return l, &violation{why: "nests messages more than " + strconv.Itoa(MaxMessageDepth) + " levels deep"}
		}
	case jsonStruct, jsonList:
		if l.json++; l.json > MaxJSONDepth {
			return l, &violation{why: "nests JSON more than " + strconv.Itoa(MaxJSONDepth) + " levels deep (the limit)", deep: true}
		}
	case jsonValue: // a Value is no level of its own: the Struct or list inside it is
	}
	return l, nil
}

// violation is the first bad field a walk found. Its path is built only
// once found, innermost segment first, as the walk returns.
type violation struct {
	segs []string
	why  string
	// deep marks a JSON depth violation: its path stops at the field that
	// holds the JSON (payload, not payload.a.a.a…).
	deep bool
}

// at adds the segment that leads to the violation from the level above;
// inside JSON values a depth violation takes none.
func (v *violation) at(k kind, seg string) *violation {
	if seg != "" && (!v.deep || k == plain) {
		v.segs = append(v.segs, seg)
	}
	return v
}

func (v *violation) field() string {
	var b strings.Builder
	for i := len(v.segs) - 1; i >= 0; i-- {
		b.WriteString(v.segs[i])
	}
	if f := strings.TrimPrefix(b.String(), "."); f != "" {
		return f
	}
	return "request"
}

func (v *violation) err() error {
	return apierr.Invalid(apierr.FieldViolation{Field: v.field(), Description: v.why})
}

// Path segments. A field of an ordinary message is ".name"; Struct keys
// and list indexes read like JSON paths (payload.a[2].b); a Value adds
// nothing of its own.

func fieldSeg(k kind, fd protoreflect.FieldDescriptor) string {
	if k != plain {
		return "" // Struct.fields, ListValue.values, Value's kinds
	}
	return "." + string(fd.Name())
}

func indexSeg(i int) string { return "[" + strconv.Itoa(i) + "]" }

// mapKeySeg names a map entry like protovalidate does: headers["x-id"],
// counts[3]; a Struct key is .key when it reads as an identifier.
func mapKeySeg(k kind, key protoreflect.MapKey, isString bool) string {
	if !isString {
		return "[" + key.String() + "]"
	}
	if k == jsonStruct {
		return structKeySeg(key.String())
	}
	return "[" + quote(key.String()) + "]"
}

func structKeySeg(key string) string {
	if identifier(key) {
		return "." + key
	}
	return "[" + quote(key) + "]"
}

func identifier(s string) bool {
	if s == "" || len(s) > maxShownKey {
		return false
	}
	for i, c := range []byte(s) {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// maxShownKey bounds how much of a key an error repeats.
const maxShownKey = 64

// quote shows a key safely: escaped (a NUL or a stray byte becomes \x00 or
// \xff, so the error itself is valid UTF-8) and cut at maxShownKey bytes.
func quote(s string) string {
	if len(s) > maxShownKey {
		return strconv.Quote(s[:maxShownKey]) + "…"
	}
	return strconv.Quote(s)
}
