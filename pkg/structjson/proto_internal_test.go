package structjson

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestWireTagsMatchStructpb checks the encoder's tags against the
// descriptors of the generated structpb: field numbers and wire types.
func TestWireTagsMatchStructpb(t *testing.T) {
	t.Parallel()
	wireType := map[protoreflect.Kind]protowire.Type{
		protoreflect.EnumKind: protowire.VarintType, protoreflect.BoolKind: protowire.VarintType,
		protoreflect.DoubleKind: protowire.Fixed64Type, protoreflect.StringKind: protowire.BytesType,
		protoreflect.MessageKind: protowire.BytesType,
	}
	tag := func(fd protoreflect.FieldDescriptor) byte {
		t.Helper()
		typ := wireType[fd.Kind()]
		if fd.IsMap() || fd.IsList() {
			typ = protowire.BytesType
		}
		b := protowire.AppendTag(nil, fd.Number(), typ)
		require.Len(t, b, 1, fd.FullName())
		return b[0]
	}
	fields := (&structpb.Struct{}).ProtoReflect().Descriptor().Fields().ByName("fields")
	require.Equal(t, tagStructFields, tag(fields))
	require.Equal(t, tagEntryKey, tag(fields.MapKey()))
	require.Equal(t, tagEntryValue, tag(fields.MapValue()))
	value := (&structpb.Value{}).ProtoReflect().Descriptor().Fields()
	for name, want := range map[protoreflect.Name]byte{
		"null_value": tagNullValue, "number_value": tagNumberValue, "string_value": tagStringValue,
		"bool_value": tagBoolValue, "struct_value": tagStructValue, "list_value": tagListValue,
	} {
		require.Equal(t, want, tag(value.ByName(name)), name)
	}
	values := (&structpb.ListValue{}).ProtoReflect().Descriptor().Fields().ByName("values")
	require.Equal(t, tagListValues, tag(values))
	require.Equal(t, protoreflect.Name("NULL_VALUE"), value.ByName("null_value").Enum().Values().ByNumber(0).Name())
}
