package grpcserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// bad stands for the bad text in a case: a NUL for the decoded walk, and
// four bytes of invalid UTF-8 (same length) in the wire bytes the codec gets.
const bad = "BAD\x00"

func obj(kv ...any) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := 0; i < len(kv); i += 2 {
		s.Fields[kv[i].(string)] = val(kv[i+1])
	}
	return s
}

func val(x any) *structpb.Value {
	switch x := x.(type) {
	case *structpb.Value:
		return x
	case *structpb.Struct:
		return structpb.NewStructValue(x)
	case []*structpb.Value:
		return structpb.NewListValue(&structpb.ListValue{Values: x})
	case string:
		return structpb.NewStringValue(x)
	case float64:
		return structpb.NewNumberValue(x)
	}
	panic(x)
}

// nestedObj is JSON nested n levels: {"a":{"a":…{}}}.
func nestedObj(n int) *structpb.Struct {
	s := obj()
	for range n - 1 {
		s = obj("a", s)
	}
	return s
}

// nestedList is {"a":[[…[]]]}, n levels in all.
func nestedList(n int) *structpb.Struct {
	v := val([]*structpb.Value{})
	for range n - 2 {
		v = val([]*structpb.Value{v})
	}
	return obj("a", v)
}

func nestedDescriptor(n int) *descriptorpb.DescriptorProto {
	d := &descriptorpb.DescriptorProto{Name: proto.String("m")}
	for range n - 1 {
		d = &descriptorpb.DescriptorProto{Name: proto.String("m"), NestedType: []*descriptorpb.DescriptorProto{d}}
	}
	return d
}

func items(n int, at int, result *structpb.Struct) *queuev1.CompleteBatchRequest {
	req := &queuev1.CompleteBatchRequest{}
	for i := range n {
		it := &queuev1.CompleteRequest{Id: int64(i + 1), LeaseToken: 1, Result: obj("ok", "yes", "n", 3.0)}
		if i == at {
			it.Result = result
		}
		req.Items = append(req.Items, it)
	}
	return req
}

type guardCase struct {
	msg   proto.Message
	field string // "" when the message is acceptable
	why   string // part of the description
}

func guardCases() map[string]guardCase {
	const nul, utf, deep = "NUL", "UTF-8", "64 levels"
	return map[string]guardCase{
		"valid publish": {&realtimev1.PublishRequest{Channel: "c", Kind: "k", Payload: obj("a", "b")}, "", ""},
		"scalar field":  {&realtimev1.PublishRequest{Channel: "c", Kind: bad}, "kind", nul},
		"queue dedupe key": {&queuev1.EnqueueRequest{Queue: "q", DedupeKey: bad, Payload: obj()},
			"dedupe_key", nul},
		"repeated string":   {&realtimev1.SubscribeRequest{Channels: []string{"a", bad}}, "channels[1]", nul},
		"map value":         {&ingestv1.PublishEventRequest{Topic: "t", Headers: map[string]string{"x-id": bad}}, `headers["x-id"]`, nul},
		"map key":           {&ingestv1.PublishEventRequest{Topic: "t", Headers: map[string]string{bad: "v"}}, `headers["BAD\x00"]`, "key contains"},
		"struct value":      {&realtimev1.PublishRequest{Channel: "c", Payload: obj("a", obj("b", bad))}, "payload.a.b", nul},
		"struct key":        {&realtimev1.PublishRequest{Channel: "c", Payload: obj("a", obj(bad, 1.0))}, `payload.a["BAD\x00"]`, "key contains"},
		"odd struct key":    {&realtimev1.PublishRequest{Channel: "c", Payload: obj("x-y", bad)}, `payload["x-y"]`, nul},
		"list in struct":    {&realtimev1.PublishRequest{Channel: "c", Payload: obj("a", []*structpb.Value{val(1.0), val("ok"), val(bad)})}, "payload.a[2]", nul},
		"batch item result": {items(5, 3, obj("note", bad)), "items[3].result.note", nul},
		"nested repeated and map": {&ingestv1.ListEventsResponse{Events: []*ingestv1.Event{{}, {Headers: map[string]string{"k": bad}}}},
			`events[1].headers["k"]`, nul},
		"a Value as the request":       {structpb.NewStringValue(bad), "request", nul},
		"proto2 string":                {&descriptorpb.FileDescriptorProto{Name: proto.String(bad)}, "name", nul},
		"JSON 64 deep":                 {&realtimev1.PublishRequest{Channel: "c", Payload: nestedObj(MaxJSONDepth)}, "", ""},
		"JSON 65 deep":                 {&realtimev1.PublishRequest{Channel: "c", Payload: nestedObj(MaxJSONDepth + 1)}, "payload", deep},
		"JSON 65 deep in a batch item": {items(3, 2, nestedObj(MaxJSONDepth+1)), "items[2].result", deep},
		"lists 64 deep":                {&realtimev1.PublishRequest{Channel: "c", Payload: nestedList(MaxJSONDepth)}, "", ""},
		"lists 65 deep":                {&realtimev1.PublishRequest{Channel: "c", Payload: nestedList(MaxJSONDepth + 1)}, "payload", deep},
		"messages 32 deep":             {nestedDescriptor(MaxMessageDepth), "", ""},
		"messages 33 deep": {nestedDescriptor(MaxMessageDepth + 1), strings.Repeat("nested_type[0].", MaxMessageDepth-1) + "nested_type[0]",
			"32 levels"},
		"invalid UTF-8 is named too": {&realtimev1.PublishRequest{Channel: "c", Kind: "a\xed\xa0\x80"}, "kind", utf},
	}
}

// refusal is the one field violation of err, which must be INVALID_ARGUMENT.
func refusal(t *testing.T, err error) *errdetails.BadRequest_FieldViolation {
	t.Helper()
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			require.Len(t, br.GetFieldViolations(), 1)
			return br.GetFieldViolations()[0]
		}
	}
	t.Fatalf("no BadRequest detail in %v", err)
	return nil
}

func TestGuardNamesTheField(t *testing.T) {
	t.Parallel()
	for name, c := range guardCases() {
		err := guard(c.msg)
		if c.field == "" {
			require.NoError(t, err, name)
			continue
		}
		fv := refusal(t, err)
		require.Equal(t, c.field, fv.GetField(), name)
		require.Contains(t, fv.GetDescription(), c.why, name)
	}
}

// The codec gets the same requests as wire bytes, with invalid UTF-8 where
// the walk saw a NUL: protobuf refuses to decode them, and the codec's
// mark makes the guard name the same field. JSON nested past protobuf's
// own decoding limit is named too.
func TestUndecodableRequestsAreNamedByTheGuard(t *testing.T) {
	t.Parallel()
	cases := guardCases()
	deeper := obj("a", nestedObj(3500)) // 3,500 levels: past protobuf's 10,000-message decode limit
	checked := 0
	cases["JSON past the decoder's limit"] = guardCase{&realtimev1.PublishRequest{Channel: "c", Payload: deeper}, "payload", "64 levels"}
	for name, c := range cases {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
		if err != nil || c.field == "" || (!bytes.Contains(b, []byte(bad)) && c.why != "64 levels") {
			continue // not encodable, or nothing protobuf's decoder would refuse
		}
		b = bytes.ReplaceAll(b, []byte(bad), []byte("BAD\xff"))
		got := c.msg.ProtoReflect().New().Interface()
		if proto.Unmarshal(b, got) == nil {
			require.Contains(t, []string{"name", "payload", "items[2].result"}, c.field, "%s: only proto2 strings and JSON within the decoder's limit decode", name)
			continue
		}
		got = c.msg.ProtoReflect().New().Interface()
		require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got), name)
		fv := refusal(t, guard(got))
		require.Equal(t, strings.ReplaceAll(c.field, `\x00`, `\xff`), fv.GetField(), name)
		if c.why == "NUL" || c.why == "key contains" {
			require.Contains(t, fv.GetDescription(), "UTF-8", name)
		} else {
			require.Contains(t, fv.GetDescription(), c.why, name)
		}
		checked++
	}
	require.GreaterOrEqual(t, checked, 11)
}

func TestBrokenBytesAreInvalidArgument(t *testing.T) {
	t.Parallel()
	var m realtimev1.PublishRequest
	require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x05, 'a'})}, &m))
	fv := refusal(t, guard(&m))
	require.Equal(t, "request", fv.GetField())
	require.Contains(t, fv.GetDescription(), "well-formed")
}

// A client cannot forge the codec's mark: without this process's token it
// is an ordinary unknown field, which the guard ignores.
func TestTheMarkCannotBeForged(t *testing.T) {
	t.Parallel()
	var marked realtimev1.PublishRequest
	markFault(&marked, &violation{segs: []string{".kind"}, why: "x"})
	require.Error(t, guard(&marked))
	mark := bytes.Clone(marked.ProtoReflect().GetUnknown())
	i := bytes.Index(mark, faultToken)
	require.Positive(t, i)
	copy(mark[i:], make([]byte, len(faultToken))) // a guessed token
	var forged realtimev1.PublishRequest
	require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(mark)}, &forged))
	require.NotEmpty(t, forged.ProtoReflect().GetUnknown(), "decoded as an unknown field")
	require.NoError(t, guard(&forged))
}

func TestRefusalIsAValidStatus(t *testing.T) {
	t.Parallel()
	err := guard(&ingestv1.PublishEventRequest{Headers: map[string]string{"\xff" + strings.Repeat("k", 100): "v"}})
	st, _ := apierr.ToStatus(err)
	// The BadRequest detail is protobuf: its texts must be valid UTF-8 to be sent.
	_, merr := proto.Marshal(st.Proto())
	require.NoError(t, merr)
	require.Contains(t, status.Convert(st.Err()).Message(), `headers["\xffkkk`)
	require.Contains(t, st.Message(), `…]`, "a long key is cut")
}

//nolint:paralleltest // AllocsPerRun counts the allocations of every goroutine
func TestGuardOfAValidBatchAllocatesAlmostNothing(t *testing.T) {
	req := items(500, -1, nil)
	allocs := testing.AllocsPerRun(20, func() { _ = guard(req) })
	require.LessOrEqual(t, allocs, 1.0, "one list view of items; nothing per item")
}

// BenchmarkGuardCompleteBatch500 is the guard on a typical CompleteBatch:
// 500 items, each with a small result object.
func BenchmarkGuardCompleteBatch500(b *testing.B) {
	req := items(500, -1, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := guard(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardHeartbeat is the guard on a one-field request.
func BenchmarkGuardHeartbeat(b *testing.B) {
	req := &queuev1.CompleteRequest{Id: 1, LeaseToken: 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := guard(req); err != nil {
			b.Fatal(err)
		}
	}
}
