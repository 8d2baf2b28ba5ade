package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConfigurePool applies what every Switchboard pool needs on each new
// connection. Call it on a parsed config before pgxpool.NewWithConfig; an
// AfterConnect already set still runs, after it.
func ConfigurePool(pc *pgxpool.Config) {
	next := pc.AfterConnect
	pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerJSON(conn.TypeMap())
		if next != nil {
			return next(ctx, conn)
		}
		return nil
	}
}

// registerJSON makes json and jsonb values scan into *json.RawMessage by
// copying the bytes. pgx's codec sends any target other than *[]byte and
// *string through json.Unmarshal, which for a RawMessage only validates and
// copies: the server already guarantees valid JSON, and on the queue's hot
// path (every claimed payload) that validation was 6% of a node's CPU.
// Every other target keeps pgx's behaviour.
func registerJSON(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "json", OID: pgtype.JSONOID,
		Codec: &pgtype.JSONCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
	m.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID,
		Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
}

func unmarshalJSON(data []byte, v any) error {
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = append(json.RawMessage(nil), data...)
		return nil
	}
	return json.Unmarshal(data, v)
}
