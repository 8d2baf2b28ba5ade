package apierr_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// TestFromPostgres: every class of database error a store meets maps to the
// status the contract promises, and an unknown one stays internal.
func TestFromPostgres(t *testing.T) {
	t.Parallel()
	c := &apierr.Constraints{
		Checks: map[string]apierr.FieldViolation{"todos_priority_check": {Field: "priority", Description: "must be between 0 and 4"}},
		Uniques: map[string]string{
			"agents_human_id_name_key": "the human already has an agent with this name",
			"things_owner_excl":        "another owner has this thing",
		},
	}
	pg := func(code, constraint string) error {
		return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, ConstraintName: constraint, Message: "secret SQL detail"})
	}
	cases := []struct {
		name     string
		err      error
		code     codes.Code
		msg      string
		internal bool
	}{
		{"no rows", pgx.ErrNoRows, codes.NotFound, "todo 7 not found", false},
		{"foreign key", pg("23503", "todos_agent_id_fkey"), codes.NotFound, "todo 7 not found", false},
		{"known unique", pg("23505", "agents_human_id_name_key"), codes.AlreadyExists, "the human already has an agent with this name", false},
		{"unknown unique", pg("23505", "other_key"), codes.AlreadyExists, "todo 7 already exists", false},
		{"known exclusion", pg("23P01", "things_owner_excl"), codes.AlreadyExists, "another owner has this thing", false},
		{"unknown exclusion", pg("23P01", "other_excl"), codes.AlreadyExists, "todo 7 already exists", false},
		{"known check", pg("23514", "todos_priority_check"), codes.InvalidArgument, "invalid priority: must be between 0 and 4", false},
		{"unknown check", pg("23514", "other_check"), codes.Internal, "internal error", true},
		{"other sqlstate", pg("42P01", ""), codes.Internal, "internal error", true},
		{"NUL in jsonb", pg("22P05", ""), codes.InvalidArgument, "invalid request: holds text the database cannot store (NUL or invalid UTF-8)", false},
		{"NUL in text", pg("22021", ""), codes.InvalidArgument, "invalid request: holds text the database cannot store (NUL or invalid UTF-8)", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mapped := apierr.FromPostgres(tc.err, "get todo", "todo 7", c)
			st, internal := apierr.ToStatus(mapped)
			require.Equal(t, tc.code, st.Code())
			require.Equal(t, tc.msg, st.Message())
			require.Equal(t, tc.internal, internal)
			require.NotContains(t, st.Message(), "secret SQL detail")
		})
	}
	require.NoError(t, apierr.FromPostgres(nil, "op", "x", nil))
	st, _ := apierr.ToStatus(apierr.FromPostgres(pg("23505", "x"), "op", "slug", nil))
	require.Equal(t, codes.AlreadyExists, st.Code(), "nil Constraints falls back to generic answers")
}

func TestConstraintPredicates(t *testing.T) {
	t.Parallel()
	slug := fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505", ConstraintName: "endpoints_slug_key"})
	require.True(t, apierr.IsUniqueViolation(slug, "endpoints_slug_key"))
	require.False(t, apierr.IsUniqueViolation(slug, "other_key"))
	require.False(t, apierr.IsUniqueViolation(pgx.ErrNoRows, "endpoints_slug_key"))

	require.True(t, apierr.IsDataError(slug))
	require.True(t, apierr.IsDataError(&pgconn.PgError{Code: "22P02"}))
	require.False(t, apierr.IsDataError(&pgconn.PgError{Code: "57P01"}), "admin shutdown is a fault, not bad data")
	require.False(t, apierr.IsDataError(fmt.Errorf("dial: connection refused")))
}
