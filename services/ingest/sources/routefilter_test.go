package sources

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompileTopicGlob: "*" stays within a dot-separated segment, "**"
// crosses dots, everything else (regexp metacharacters included) is
// literal, and the whole topic must match.
func TestCompileTopicGlob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, topic string
		match       bool
	}{
		{"github.*", "github.push", true},
		{"github.*", "github.pull_request.opened", false},
		{"github.**", "github.pull_request.opened", true},
		{"github.**", "github.", true},
		{"github.**", "gitlab.push", false},
		{"*.created", "invoice.created", true},
		{"*.created", "a.invoice.created", false},
		{"**.created", "a.invoice.created", true},
		{"inv*", "invoice", true},
		{"invoice", "invoice.paid", false},
		{"a+b", "a+b", true},
		{"a+b", "aab", false},
		{"a.b", "axb", false},
		{"**", "", true},
		{"*", "", true},
		{"*", "a.b", false},
	} {
		require.Equal(t, tc.match, CompileTopicGlob(tc.glob).MatchString(tc.topic), "%q ~ %q", tc.glob, tc.topic)
	}
}

// TestCompileFilter: a filter must type-check to bool over topic, headers
// and body (what it may cost is checked apart: routebudget_test.go).
func TestCompileFilter(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`true`, `topic.startsWith("github.")`, `headers["x-a"] == "1"`, `body.a.b == 1`, `has(body.x) && body.x > 2.5`} {
		_, err := CompileFilter(ok)
		require.NoError(t, err, ok)
	}
	for src, msg := range map[string]string{
		`1 + 1`:            "must evaluate to bool, not int",
		`topic`:            "must evaluate to bool, not string",
		`headers.x == 1`:   "no matching overload",
		`nobody == 1`:      "undeclared reference",
		`body.a ==`:        "Syntax error",
		`body.a == "1" &&`: "Syntax error",
	} {
		_, err := CompileFilter(src)
		require.ErrorContains(t, err, msg, src)
	}
}
