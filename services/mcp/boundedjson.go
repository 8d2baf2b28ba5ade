package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// boundedJSON writes s as encoding/json writes s.AsMap() (keys sorted,
// the same escapes and numbers), but stops once more than limit bytes are
// written: over reports that it did, and out is then the start of the
// whole, more than limit bytes of it. A todo's payload or result may be a megabyte that
// the tool shows only the first kilobyte of, so the rest is never
// rendered.
func boundedJSON(s *structpb.Struct, limit int) (out []byte, over bool, err error) {
	w := &boundedWriter{limit: limit}
	if err := w.object(s); err != nil {
		return nil, false, err
	}
	return w.buf.Bytes(), w.full(), nil
}

type boundedWriter struct {
	buf   bytes.Buffer
	limit int
}

func (w *boundedWriter) full() bool { return w.buf.Len() > w.limit }

func (w *boundedWriter) object(s *structpb.Struct) error {
	w.buf.WriteByte('{')
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	slices.Sort(keys) // as encoding/json orders a map's keys
	for i, k := range keys {
		if w.full() {
			return nil
		}
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.string(k)
		if w.full() {
			return nil
		}
		w.buf.WriteByte(':')
		if err := w.value(s.GetFields()[k]); err != nil {
			return err
		}
	}
	w.close('}')
	return nil
}

// close ends an object or a list, unless the output was cut inside it.
func (w *boundedWriter) close(b byte) {
	if !w.full() {
		w.buf.WriteByte(b)
	}
}

func (w *boundedWriter) value(v *structpb.Value) error {
	if w.full() {
		return nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return w.object(k.StructValue)
	case *structpb.Value_ListValue:
		w.buf.WriteByte('[')
		for i, e := range k.ListValue.GetValues() {
			if w.full() {
				return nil
			}
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.value(e); err != nil {
				return err
			}
		}
		w.close(']')
	case *structpb.Value_StringValue:
		w.string(k.StringValue)
	case *structpb.Value_NumberValue:
		b, err := json.Marshal(k.NumberValue)
		if err != nil {
			return fmt.Errorf("render a number: %w", err) // NaN or ±Inf, which the API never stores
		}
		w.buf.Write(b)
	case *structpb.Value_BoolValue:
		w.buf.WriteString(strconv.FormatBool(k.BoolValue))
	default: // null, or no kind at all (AsInterface's nil)
		w.buf.WriteString("null")
	}
	return nil
}

// string writes s quoted and escaped as encoding/json does. Only as much
// of a long s as could still fit is escaped: escaping works rune by rune,
// so that is the start of the whole string's escaped form (its closing
// quote left off, as the output is cut anyway).
func (w *boundedWriter) string(s string) {
	// Enough that the quote and what is kept pass the limit, however many
	// bytes of a character the cut backs off.
	room := w.limit - w.buf.Len() + utf8.UTFMax + 1
	cut := len(s) > room
	if cut {
		n := room
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	b, _ := json.Marshal(s) // a string always encodes
	if cut {
		b = b[:len(b)-1]
	}
	w.buf.Write(b)
}
