package archtest

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Test tiers (docs/architecture.md, "Test tiers"): a test that builds or
// runs the switchboard binary, or needs one of these programs, is an e2e
// test and lives under e2eDir; everything else with a build tag is
// in-process (integration) or a fault test (chaos, its own tier).
const (
	e2eDir   = "services/internal/e2e/"
	chaosDir = "services/internal/chaos/"
)

// e2eTools are the programs only the e2e tier may run: the browser, the
// JavaScript and Python tool chains (the SDKs' suites) and the command-line
// clients whose installs deploy/local prepares for it.
var e2eTools = []string{"chromium", "chromium-browser", "npm", "npx", "node", "grpcurl", "jq", "promtool", "playwright", "python3", "pytest"}

// browserImports drive Chromium when a test imports them.
var browserImports = []string{"github.com/chromedp/chromedp", module + "services/internal/dashboardtest"}

// tierExceptions are test files outside e2eDir that may still do so, each
// with its reason (none today; an entry must name a file that breaks the
// rule, so a stale one fails the test).
var tierExceptions = map[string]string{}

// tierRule opens the failure message.
const tierRule = "A test that builds or runs the switchboard binary, or runs " +
	"chromium, npm, npx, node, grpcurl, jq, promtool or playwright, is an e2e test: " +
	"move it under " + e2eDir + " with //go:build e2e (" + ownersDoc + ", \"Test tiers\")"

// TestEndToEndTestsLiveInTheE2ETier: no _test.go file outside the e2e and
// chaos tiers execs the switchboard binary (or builds it) or one of
// e2eTools, or drives Chromium.
func TestEndToEndTestsLiveInTheE2ETier(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	// Files by folder: a package's test files share their variables (one
	// builds the binary into `binary`, another runs it).
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "node_modules" || name == ".local" || name == "third_party") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasPrefix(rel, e2eDir) && !strings.HasPrefix(rel, chaosDir) {
			byDir[path.Dir(rel)] = append(byDir[path.Dir(rel)], rel)
		}
		return nil
	})
	require.NoError(t, err)
	var found []string
	checked := 0
	for _, rels := range byDir {
		srcs := map[string][]byte{}
		for _, rel := range rels {
			src, err := os.ReadFile(filepath.Join(root, rel))
			require.NoError(t, err)
			srcs[rel] = src
		}
		got, err := tierViolations(srcs)
		require.NoError(t, err)
		checked += len(rels)
		for _, v := range got {
			if _, ok := tierExceptions[v.file]; !ok {
				found = append(found, v.String())
			}
		}
		for _, rel := range rels {
			if _, ok := tierExceptions[rel]; ok {
				require.True(t, slices.ContainsFunc(got, func(v tierViolation) bool { return v.file == rel }),
					"%s is listed in tierExceptions but breaks no rule: remove it", rel)
			}
		}
	}
	require.Greater(t, checked, 100, "the walk found the tests")
	for rel := range tierExceptions {
		_, err := os.Stat(filepath.Join(root, rel))
		require.NoError(t, err, "tierExceptions lists %s, which does not exist: remove it", rel)
	}
	slices.Sort(found)
	// One line per place, file:line first, so each is found at once.
	if len(found) > 0 {
		t.Fatalf("%s; in the wrong tier:\n  %s", tierRule, strings.Join(found, "\n  "))
	}
}

// TestTheTierCheckCanFail: the checker finds the binary built with go build
// or go run, the binary and the tools run by literal, by variable, by a
// path joined to their name and by a ranged list, and a browser import;
// and leaves bash, the in-process code and other programs alone.
func TestTheTierCheckCanFail(t *testing.T) {
	t.Parallel()
	src := `package x_test

import (
	"context"
	osexec "os/exec"
	"path/filepath"

	_ "github.com/chromedp/chromedp"
)

var binary string

func setup(dir string) {
	binary = filepath.Join(dir, "switchboard")
	_ = osexec.CommandContext(context.Background(), "go", "build", "-o", binary, "../../cmd/switchboard")
	_ = osexec.Command("go", "run", "github.com/switchboard/switchboard/services/cmd/switchboard", "serve")
	_ = osexec.Command(binary, "serve", "all")
	_ = osexec.Command("../../bin/switchboard", "version")
	_ = osexec.Command(filepath.Join(dir, "deploy", "promtool"), "check")
	jq := "jq"
	_ = osexec.Command(jq, "-r")
	for _, tool := range []string{"bash", "grpcurl"} {
		_, _ = osexec.LookPath(tool)
	}
	_ = osexec.Command("npx", "playwright")
	_ = osexec.Command(filepath.Join("..", "deploy", "local", "promtool.sh"))
	_ = osexec.Command("bash", "-c", "true")
	_ = osexec.Command("redis-server", "--port", "0")
	_ = osexec.Command("go", "env", "GOBIN")
	_ = osexec.Command("go", "build", "./pkg/other")
}
`
	// A second file of the package runs the binary the first one built.
	other := "package x_test\nimport \"os/exec\"\nvar _ = exec.Command(binary, \"version\")\n"
	got, err := tierViolations(map[string][]byte{"services/x/x_test.go": []byte(src), "services/x/y_test.go": []byte(other)})
	require.NoError(t, err)
	require.Equal(t, []string{
		"services/x/x_test.go:8: imports github.com/chromedp/chromedp, which drives Chromium",
		"services/x/x_test.go:15: builds the switchboard binary (go build)",
		"services/x/x_test.go:16: builds the switchboard binary (go run)",
		"services/x/x_test.go:17: runs the switchboard binary",
		"services/x/x_test.go:18: runs the switchboard binary",
		"services/x/x_test.go:19: runs promtool",
		"services/x/x_test.go:21: runs jq",
		"services/x/x_test.go:23: runs grpcurl",
		"services/x/x_test.go:25: runs npx",
		"services/x/x_test.go:26: runs promtool.sh, which provides promtool",
		"services/x/y_test.go:3: runs the switchboard binary",
	}, lines(got))

	// `go build .` is the binary only in its own folder.
	here := "package main_test\nimport \"os/exec\"\nvar _ = exec.Command(\"go\", \"build\", \"-o\", \"x\", \".\")\n"
	got, err = tierViolations(map[string][]byte{"services/cmd/switchboard/x_test.go": []byte(here)})
	require.NoError(t, err)
	require.Equal(t, []string{"services/cmd/switchboard/x_test.go:3: builds the switchboard binary (go build)"}, lines(got))
	got, err = tierViolations(map[string][]byte{"services/other/x_test.go": []byte(here)})
	require.NoError(t, err)
	require.Empty(t, got)
}

// tierViolation is one place a test file breaks the tier rule.
type tierViolation struct {
	file string
	line int
	what string
}

func (v tierViolation) String() string { return fmt.Sprintf("%s:%d: %s", v.file, v.line, v.what) }

// lines is each violation as its message.
func lines(vs []tierViolation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

// tierViolations parses the test files of one folder (path relative to the
// repository → source) and lists, in order, each place one builds or runs
// the binary, runs an e2e tool, or imports a browser driver. A variable
// naming the program is followed across the folder's files.
func tierViolations(srcs map[string][]byte) ([]tierViolation, error) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	values := map[string][]string{}
	for rel, src := range srcs {
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files[rel] = f
		for name, vs := range stringValues(f) {
			values[name] = append(values[name], vs...)
		}
	}
	var out []tierViolation
	for rel, f := range files {
		report := func(pos token.Pos, what string) {
			out = append(out, tierViolation{file: rel, line: fset.Position(pos).Line, what: what})
		}
		execName, err := checkImports(f, report)
		if err != nil {
			return nil, err
		}
		if execName != "" {
			checkExecs(rel, f, execName, values, report)
		}
	}
	slices.SortFunc(out, func(a, b tierViolation) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	return out, nil
}

// checkImports reports f's browser imports and returns the name f gives
// os/exec ("" when it does not import it).
func checkImports(f *ast.File, report func(token.Pos, string)) (string, error) {
	execName := ""
	for _, spec := range f.Imports {
		imp, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return "", err
		}
		if slices.Contains(browserImports, imp) {
			report(spec.Pos(), "imports "+imp+", which drives Chromium")
		}
		if imp == "os/exec" {
			execName = "exec"
			if spec.Name != nil {
				execName = spec.Name.Name
			}
		}
	}
	return execName, nil
}

// checkExecs reports each exec.Command, exec.CommandContext and
// exec.LookPath call of f whose program breaks the rule.
func checkExecs(rel string, f *ast.File, execName string, values map[string][]string, report func(token.Pos, string)) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != execName {
			return true
		}
		prog := 0
		switch sel.Sel.Name {
		case "Command", "LookPath":
		case "CommandContext":
			prog = 1
		default:
			return true
		}
		if len(call.Args) <= prog {
			return true
		}
		for _, name := range programs(call.Args[prog], values) {
			if what := runs(rel, name, literals(call.Args[prog+1:])); what != "" {
				report(call.Pos(), what)
				break
			}
		}
		return true
	})
}

// runs names what running program name with args does against the tier
// rule, or "" when it is allowed outside the e2e tier.
func runs(rel, name string, args []string) string {
	base := path.Base(name)
	tool, script := strings.CutSuffix(base, ".sh")
	switch {
	case base == "switchboard":
		return "runs the switchboard binary"
	case slices.Contains(e2eTools, base):
		return "runs " + base
	case script && (slices.Contains(e2eTools, tool) || tool == "mcp-inspector" || tool == "python-sdk"):
		// deploy/local's installers, which provide the tool they name.
		return "runs " + base + ", which provides " + tool
	case base == "go" && len(args) > 0 && (args[0] == "build" || args[0] == "run"):
		for _, a := range args[1:] {
			if strings.Contains(a, "cmd/switchboard") || (a == "." && path.Dir(rel) == "services/cmd/switchboard") {
				return "builds the switchboard binary (go " + args[0] + ")"
			}
		}
	}
	return ""
}

// stringValues maps each identifier of f given a string literal (a var or
// const, an assignment, a range over a literal list, or a path joined to
// a literal last element) to those strings.
func stringValues(f *ast.File) map[string][]string {
	values := map[string][]string{}
	add := func(lhs ast.Expr, rhs ast.Expr) {
		if id, ok := lhs.(*ast.Ident); ok {
			values[id.Name] = append(values[id.Name], programs(rhs, nil)...)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					add(name, n.Values[i])
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i := range n.Lhs {
					add(n.Lhs[i], n.Rhs[i])
				}
			}
		case *ast.RangeStmt:
			if list, ok := n.X.(*ast.CompositeLit); ok && n.Value != nil {
				for _, elt := range list.Elts {
					add(n.Value, elt)
				}
			}
		}
		return true
	})
	return values
}

// programs is what e may name: a string literal, an identifier's known
// strings (values), or the last element of a filepath.Join or path.Join.
func programs(e ast.Expr, values map[string][]string) []string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
			return []string{s}
		}
	case *ast.Ident:
		return values[e.Name]
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Join" && len(e.Args) > 0 {
			return programs(e.Args[len(e.Args)-1], values)
		}
	}
	return nil
}

// literals is the string literals among args, in order.
func literals(args []ast.Expr) []string {
	var out []string
	for _, a := range args {
		if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
	}
	return out
}
