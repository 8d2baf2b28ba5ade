package grpcserver

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchboard/switchboard/pkg/textcheck"
)

// checkMessage walks a decoded message (the guard's rules: guard.go). l is
// the level of the message that holds m.
//
// It reads fields by descriptor (Has, Get) rather than with Range, whose
// callback would be allocated for every message visited, and skips scalar
// fields without reading them. The JSON types are walked as their Go
// types: plain map and slice loops.
func checkMessage(m protoreflect.Message, l level) *violation {
	switch x := m.Interface().(type) {
	case *structpb.Struct:
		return checkStruct(x, l)
	case *structpb.ListValue:
		return checkList(x, l)
	case *structpb.Value:
		return checkValue(x, l)
	}
	md := m.Descriptor()
	k := kindOf(md) // plain, or a JSON type of another Go type (dynamicpb)
	l, v := l.enter(k)
	if v != nil {
		return v
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if v := checkField(m, fd, k, l); v != nil {
			return v.at(k, fieldSeg(k, fd))
		}
	}
	return nil
}

// checkField checks one field of m, a message of kind k at level l.
func checkField(m protoreflect.Message, fd protoreflect.FieldDescriptor, k kind, l level) *violation {
	switch {
	case fd.IsMap():
		return checkMap(m, fd, k, l)
	case fd.IsList():
		if !walked(fd.Kind()) || !m.Has(fd) {
			return nil
		}
		list := m.Get(fd).List()
		for i := range list.Len() {
			if v := checkElem(list.Get(i), fd.Kind(), l); v != nil {
				return v.at(k, indexSeg(i))
			}
		}
	case fd.Kind() == protoreflect.StringKind:
		return checkText(m.Get(fd).String(), "")
	case walked(fd.Kind()):
		if m.Has(fd) {
			return checkMessage(m.Get(fd).Message(), l)
		}
	}
	return nil
}

// walked reports whether values of kind fk can hold text.
func walked(fk protoreflect.Kind) bool {
	return fk == protoreflect.StringKind || fk == protoreflect.MessageKind || fk == protoreflect.GroupKind
}

func checkElem(v protoreflect.Value, fk protoreflect.Kind, l level) *violation {
	if fk == protoreflect.StringKind {
		return checkText(v.String(), "")
	}
	return checkMessage(v.Message(), l)
}

func checkMap(m protoreflect.Message, fd protoreflect.FieldDescriptor, k kind, l level) *violation {
	stringKeys := fd.MapKey().Kind() == protoreflect.StringKind
	vk := fd.MapValue().Kind()
	if (!stringKeys && !walked(vk)) || !m.Has(fd) {
		return nil
	}
	var found *violation
	m.Get(fd).Map().Range(func(key protoreflect.MapKey, val protoreflect.Value) bool {
		if stringKeys {
			found = checkText(key.String(), "key ")
		}
		if found == nil && walked(vk) {
			found = checkElem(val, vk, l)
		}
		if found != nil {
			found.at(k, mapKeySeg(k, key, stringKeys))
		}
		return found == nil
	})
	return found
}

// checkText applies the one text rule; what prefixes the reason ("key ").
func checkText(s, what string) *violation {
	if err := textcheck.Check(s); err != nil {
		return &violation{why: what + err.Error()}
	}
	return nil
}

func checkStruct(s *structpb.Struct, l level) *violation {
	l, v := l.enter(jsonStruct)
	if v != nil {
		return v
	}
	for key, val := range s.GetFields() {
		v := checkText(key, "key ")
		if v == nil {
			v = checkValue(val, l)
		}
		if v != nil {
			return v.at(jsonStruct, structKeySeg(key))
		}
	}
	return nil
}

func checkList(list *structpb.ListValue, l level) *violation {
	l, v := l.enter(jsonList)
	if v != nil {
		return v
	}
	for i, val := range list.GetValues() {
		if v := checkValue(val, l); v != nil {
			return v.at(jsonList, indexSeg(i))
		}
	}
	return nil
}

func checkValue(val *structpb.Value, l level) *violation {
	switch x := val.GetKind().(type) {
	case *structpb.Value_StringValue:
		return checkText(x.StringValue, "")
	case *structpb.Value_StructValue:
		return checkStruct(x.StructValue, l)
	case *structpb.Value_ListValue:
		return checkList(x.ListValue, l)
	}
	return nil
}
