package archtest

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the project's import path prefix.
const module = "github.com/switchboard/switchboard/"

// roomRow is a row of the rooms table: "| `folder` | what | `a` `b` |".
var roomRow = regexp.MustCompile("^\\|\\s*`([a-z0-9_/]+)`\\s*\\|[^|]*\\|(.*)\\|\\s*$")

// readRooms parses the rooms table: folder → the folders it may import.
func readRooms(doc string) (map[string][]string, error) {
	rooms := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(doc))
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Rooms")
			continue
		}
		m := roomRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		if _, dup := rooms[m[1]]; dup {
			return nil, fmt.Errorf("folder %s is listed twice", m[1])
		}
		var allowed []string
		for _, f := range strings.Fields(m[2]) {
			if f = strings.Trim(f, "`"); f != "—" {
				allowed = append(allowed, f)
			}
		}
		rooms[m[1]] = allowed
	}
	if len(rooms) == 0 {
		return nil, errors.New(`no "## Rooms" table`)
	}
	return rooms, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// roomOf is the deepest listed folder holding dir ("" when none does).
func roomOf(rooms map[string][]string, dir string) string {
	best := ""
	for room := range rooms {
		if within(dir, room) && len(room) > len(best) {
			best = room
		}
	}
	return best
}

// mayImport reports whether code in room may import imp (both relative to
// the module).
func mayImport(rooms map[string][]string, room, imp string) bool {
	if strings.HasPrefix(imp, "gen/") || (room != "" && within(imp, room)) {
		return true
	}
	for _, a := range rooms[room] {
		if within(imp, a) || (strings.HasSuffix(a, "/*") && strings.HasPrefix(imp, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// importViolations lists the project imports of files (folder → imports)
// that their room does not allow.
func importViolations(rooms map[string][]string, files map[string][]string) []string {
	var out []string
	for file, imps := range files {
		room := roomOf(rooms, filepath.ToSlash(filepath.Dir(file)))
		for _, imp := range imps {
			if !mayImport(rooms, room, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: %s", file, imp, why(room)))
			}
		}
	}
	slices.Sort(out)
	return out
}

func why(room string) string {
	if room == "" {
		return "the file is in no room of " + ownersDoc
	}
	return "the room " + room + " does not list it"
}

// TestImportsStayInTheirRooms: every non-test Go file imports only what its
// room in docs/architecture.md allows (generated code aside), and every
// listed folder exists.
func TestImportsStayInTheirRooms(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, ownersDoc))
	require.NoError(t, err)
	rooms, err := readRooms(string(doc))
	require.NoError(t, err)
	for room := range rooms {
		info, err := os.Stat(filepath.Join(root, room))
		require.NoError(t, err, "%s lists %s", ownersDoc, room)
		require.True(t, info.IsDir(), room)
	}
	files := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "gen" || name == "dbsqlc" || name == "third_party" || name == "node_modules" || name == ".local") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if p, ok := strings.CutPrefix(imp, module); ok {
				files[filepath.ToSlash(rel)] = append(files[filepath.ToSlash(rel)], p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	require.Empty(t, importViolations(rooms, files))
}

// TestTheImportCheckCanFail: a service importing another service it does
// not list, and pkg importing a service, are caught; a folder's own
// subfolders, gen and wildcards are allowed.
func TestTheImportCheckCanFail(t *testing.T) {
	t.Parallel()
	rooms, err := readRooms("## Rooms\n| folder | owns | may import |\n|---|---|---|\n" +
		"| `pkg/auth` | x | `pkg/apierr` |\n| `services/queue` | x | `pkg/apierr` |\n| `services/node` | x | `pkg/*` `services/queue` |\n")
	require.NoError(t, err)
	require.Equal(t, []string{
		"pkg/auth/a.go imports services/queue: the room pkg/auth does not list it",
		"services/queue/q.go imports services/ingest: the room services/queue does not list it",
		"tools/x.go imports pkg/apierr: the file is in no room of docs/architecture.md",
	}, importViolations(rooms, map[string][]string{
		"pkg/auth/a.go":           {"pkg/apierr", "services/queue", "gen/switchboard/admin/v1"},
		"services/queue/q.go":     {"services/queue/internal/store", "services/ingest"},
		"services/node/n.go":      {"pkg/lifecycle", "services/queue"},
		"services/queue/sub/x.go": {"pkg/apierr"},
		"tools/x.go":              {"pkg/apierr"},
	}))
}
