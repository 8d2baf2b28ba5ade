package archtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the checkout this test runs in (the folder holding go.work).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.work above the test")
		dir = parent
	}
}

// ownersDoc is where the ownership table lives.
const ownersDoc = "docs/architecture.md"

// ownerRow is a row of the ownership table: "| `table` | `owner/folder` | …".
var ownerRow = regexp.MustCompile("^\\|\\s*`([a-z_]+)`\\s*\\|\\s*`([a-z0-9_/]+)`\\s*\\|")

// readOwners parses the ownership table of the architecture doc: table →
// the folder whose queries.sql (or .sql files, one per table) alone may write it.
func readOwners(doc string) (map[string]string, error) {
	owners := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(doc))
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Table owners")
			continue
		}
		if m := ownerRow.FindStringSubmatch(line); in && m != nil {
			if prev, dup := owners[m[1]]; dup {
				return nil, fmt.Errorf("table %s is listed twice (%s, %s)", m[1], prev, m[2])
			}
			owners[m[1]] = m[2]
		}
	}
	if len(owners) == 0 {
		return nil, errors.New(`no "## Table owners" table with rows like | ` + "`table` | `folder` |")
	}
	return owners, nil
}

var (
	createTable = regexp.MustCompile(`(?i)\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)
	// A write names its table right after INSERT INTO, UPDATE [ONLY],
	// DELETE FROM [ONLY], TRUNCATE [TABLE] or MERGE INTO. "DO UPDATE SET"
	// and "FOR [NO KEY] UPDATE [SKIP LOCKED | OF … | NOWAIT]" are not
	// writes of a table and are told apart by the word that follows.
	writeStmt = regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO)\s+([a-z_][a-z0-9_.]*)`)
	notTable  = map[string]bool{"set": true, "skip": true, "of": true, "nowait": true}
	comment   = regexp.MustCompile(`--[^\n]*`)
	literal   = regexp.MustCompile(`'(?:[^']|'')*'`)
)

// tablesWritten returns the tables sql writes, comments and string literals
// aside.
func tablesWritten(sql string) []string {
	sql = literal.ReplaceAllString(comment.ReplaceAllString(sql, ""), "''")
	var out []string
	for _, m := range writeStmt.FindAllStringSubmatch(sql, -1) {
		table := strings.ToLower(m[1])
		if _, after, ok := strings.Cut(table, "."); ok {
			table = after // a schema-qualified name
		}
		if !notTable[table] && !slices.Contains(out, table) {
			out = append(out, table)
		}
	}
	return out
}

// queryBlocks splits a queries.sql into its named statements.
func queryBlocks(sql string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(sql, "\n") {
		if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
			name = strings.Fields(rest)[0]
			continue
		}
		if name != "" {
			out[name] += line + "\n"
		}
	}
	return out
}

// violations checks every queries.sql (folder → text) against owners: each
// block may write only tables its folder owns, and every table written
// must have an owner.
func violations(owners map[string]string, queries map[string]string) []string {
	var out []string
	for folder, sql := range queries {
		for name, block := range queryBlocks(sql) {
			for _, table := range tablesWritten(block) {
				switch owner, ok := owners[table]; {
				case !ok:
					out = append(out, fmt.Sprintf("%s/queries.sql %s writes %s, which has no owner in %s", folder, name, table, ownersDoc))
				case owner != folder:
					out = append(out, fmt.Sprintf("%s/queries.sql %s writes %s, which %s owns", folder, name, table, owner))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestEveryTableHasOneWriter: the repository's SQL keeps the ownership
// table of docs/architecture.md — every table of the migrations has
// exactly one owner there, and only the owner's queries.sql (or its .sql
// files, one per table) writes it.
func TestEveryTableHasOneWriter(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, ownersDoc))
	require.NoError(t, err)
	owners, err := readOwners(string(doc))
	require.NoError(t, err)

	tables := map[string]bool{}
	migrations, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, migrations)
	for _, m := range migrations {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		for _, c := range createTable.FindAllStringSubmatch(comment.ReplaceAllString(string(b), ""), -1) {
			tables[strings.ToLower(c[1])] = true
		}
	}
	for table := range tables {
		require.Contains(t, owners, table, "table %s (migrations) has no owner in %s", table, ownersDoc)
	}
	queries := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "third_party" || d.Name() == "node_modules" || d.Name() == ".local") {
			return filepath.SkipDir
		}
		if d.IsDir() && filepath.Base(path) == "migrations" {
			return filepath.SkipDir // the schema, not an owner's queries
		}
		// An owner's SQL is every .sql file in its folder: queries.sql, or
		// one file per table (the queue's): the check reads them as one.
		folder := filepath.Dir(path)
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".sql") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, folder)
			if err != nil {
				return err
			}
			queries[filepath.ToSlash(rel)] += string(b) + "\n"
		}
		return nil
	})
	require.NoError(t, err)
	for table, owner := range owners {
		require.True(t, tables[table], "%s lists %s, which no migration creates", ownersDoc, table)
		require.Contains(t, queries, owner, "%s: the owner of %s has no queries.sql", owner, table)
	}
	require.Empty(t, violations(owners, queries))
}

// goWrite is a table write inside a Go string literal.
var goWrite = regexp.MustCompile("(?is)[`\"][^`\"]*\\b(?:INSERT\\s+INTO|DELETE\\s+FROM|UPDATE\\s+[a-z_]+\\s+SET)\\b")

// TestNoHandWrittenWrites: outside tests, generated code and migrations, no
// Go file carries SQL that writes a table, so every write is in an owner's
// queries.sql, where the check above sees it. A file of a test-only package
// (build tags of the test tiers only, which no build of the binary sets:
// pkg/pgtest's benchmark harness) is a test's.
func TestNoHandWrittenWrites(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "gen" || name == "dbsqlc" || name == "third_party" || name == "node_modules" ||
			name == ".local" || name == "migrations") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if testOnly(b) {
			return nil
		}
		if goWrite.Match(b) {
			rel, _ := filepath.Rel(root, path)
			found = append(found, rel)
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "hand-written table writes; move them into the owner's queries.sql")
}

// testTiers are the build tags of the test tiers; no build of the binary
// sets them.
var testTiers = []string{"integration", "e2e", "chaos"}

// testOnly reports whether src's //go:build line keeps it out of every
// build without a test tier's tag (a file of a test-only package).
func testOnly(src []byte) bool {
	line, _, _ := bytes.Cut(src, []byte("\n"))
	expr, err := constraint.Parse(string(line))
	if err != nil {
		return false // no build line
	}
	return !expr.Eval(func(tag string) bool { return !slices.Contains(testTiers, tag) })
}

// TestTheCheckCanFail: the checker finds a write by a non-owner, a write
// of an unowned table, and tells writes from look-alikes.
func TestTheCheckCanFail(t *testing.T) {
	t.Parallel()
	owners := map[string]string{"todos": "services/queue/internal/store", "events": "services/ingest/internal/store"}
	queries := map[string]string{
		"services/ingest/internal/store": `-- name: EventInsert :one
INSERT INTO events (x) VALUES (1) ON CONFLICT DO UPDATE SET x = 2 RETURNING id;
-- name: Sneaky :exec
WITH ev AS (INSERT INTO events (x) VALUES (1) RETURNING id) INSERT INTO todos (event_id) SELECT id FROM ev;
-- name: Reads :many
SELECT * FROM todos FOR UPDATE SKIP LOCKED; -- DELETE FROM todos in a comment
-- name: Literal :one
SELECT 'UPDATE todos SET x' AS s;
-- name: Unowned :exec
DELETE FROM public.widgets;`,
	}
	require.Equal(t, []string{
		"services/ingest/internal/store/queries.sql Sneaky writes todos, which services/queue/internal/store owns",
		"services/ingest/internal/store/queries.sql Unowned writes widgets, which has no owner in docs/architecture.md",
	}, violations(owners, queries))
	require.Equal(t, []string{"events"}, tablesWritten(`UPDATE ONLY events SET a = 1 WHERE id IN (SELECT id FROM todos FOR NO KEY UPDATE OF todos)`))

	_, err := readOwners("# Doc\nno table here\n")
	require.Error(t, err)
	_, err = readOwners("## Table owners\n| `a` | `x` |\n| `a` | `y` |\n")
	require.ErrorContains(t, err, "listed twice")
}

// TestOneListenConnection: a node's one LISTEN connection is pkg/pgnotify's;
// no other non-test Go file, generated code included, issues LISTEN (or
// talks of it), so no component grows a listen loop of its own again.
func TestOneListenConnection(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "third_party" || d.Name() == "node_modules" || d.Name() == ".local") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") || strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "LISTEN") {
			rel, _ := filepath.Rel(root, path)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"pkg/pgnotify/listen.go"}, found)
}

// TestTestOnlyIsWhatNoBinaryBuilds: a file tagged with test tiers alone is
// a test's; an untagged file, or one a plain build can include, is not.
func TestTestOnlyIsWhatNoBinaryBuilds(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"//go:build integration\n\npackage p":        true,
		"//go:build integration || e2e\n\npackage p": true,
		"//go:build e2e\n\npackage p":                true,
		"//go:build !integration\n\npackage p":       false,
		"//go:build linux\n\npackage p":              false,
		"// Package p does things.\npackage p":       false,
	} {
		require.Equal(t, want, testOnly([]byte(src)), src)
	}
}
