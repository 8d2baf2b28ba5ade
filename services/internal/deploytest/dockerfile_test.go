package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Dockerfile checks are line based: enough of the syntax (continuations,
// comments, FROM … AS, COPY flags, ENV k=v) to check what the build must do,
// not a full parser.

type stage struct {
	base, name string
	runs       []string
	env        map[string]string
	copies     []copyInstr
	copyDests  []string
	user       string // the last USER, "" when the stage sets none
	entrypoint string
	expose     []string
}

type copyInstr struct {
	from    string // --from, "" for the build context
	sources []string
	dest    string
}

type dockerfileInfo struct{ stages []*stage }

func (d dockerfileInfo) final() *stage { return d.stages[len(d.stages)-1] }

// logicalLines joins continuation lines and drops comments and blank lines.
func logicalLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue // parser directives are comments too, for our purposes
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	require.NoError(t, sc.Err())
	require.Zero(t, cur.Len(), "%s ends inside a line continuation", path)
	return out
}

func parseDockerfile(t *testing.T, path string) dockerfileInfo {
	t.Helper()
	var d dockerfileInfo
	for _, line := range logicalLines(t, path) {
		cmd, rest, _ := strings.Cut(line, " ")
		cmd, rest = strings.ToUpper(cmd), strings.TrimSpace(rest)
		if cmd == "FROM" {
			f := withoutFlags(strings.Fields(rest))
			require.NotEmpty(t, f, "FROM without an image: %q", line)
			s := &stage{base: f[0], env: map[string]string{}}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			d.stages = append(d.stages, s)
			continue
		}
		if cmd == "ARG" && len(d.stages) == 0 {
			continue // global build arguments
		}
		require.NotEmpty(t, d.stages, "%s before the first FROM: %q", cmd, line)
		s := d.stages[len(d.stages)-1]
		switch cmd {
		case "RUN":
			s.runs = append(s.runs, rest)
		case "ENV":
			for kv := range strings.FieldsSeq(rest) {
				k, v, ok := strings.Cut(kv, "=")
				require.True(t, ok, "only ENV key=value is understood here: %q", line)
				s.env[k] = strings.Trim(v, `"`)
			}
		case "COPY":
			f := strings.Fields(rest)
			var c copyInstr
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				if v, ok := strings.CutPrefix(f[0], "--from="); ok {
					c.from = v
				}
				f = f[1:]
			}
			require.GreaterOrEqual(t, len(f), 2, "COPY needs a source and a destination: %q", line)
			c.sources, c.dest = f[:len(f)-1], f[len(f)-1]
			s.copies = append(s.copies, c)
			s.copyDests = append(s.copyDests, c.dest)
		case "USER":
			s.user = rest
		case "ENTRYPOINT":
			s.entrypoint = rest
		case "EXPOSE":
			s.expose = append(s.expose, strings.Fields(rest)...)
		}
	}
	require.NotEmpty(t, d.stages, "%s has no FROM", path)
	return d
}

func withoutFlags(fields []string) []string {
	return slices.DeleteFunc(fields, func(f string) bool { return strings.HasPrefix(f, "--") })
}

// goWork returns go.work's go version and its module directories.
func goWork(t *testing.T, root string) (version string, modules []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	inUse := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "go "):
			version = strings.TrimSpace(strings.TrimPrefix(line, "go "))
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			modules = append(modules, filepath.ToSlash(filepath.Clean(line)))
		case strings.HasPrefix(line, "use "):
			modules = append(modules, filepath.ToSlash(filepath.Clean(strings.TrimPrefix(line, "use "))))
		}
	}
	require.NotEmpty(t, version, "go.work has no go line")
	require.NotEmpty(t, modules, "go.work uses no modules")
	return version, modules
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	d := parseDockerfile(t, filepath.Join(root, dockerfile))
	goVersion, modules := goWork(t, root)

	// The stage that builds the binary, with the toolchain go.work asks for.
	var build *stage
	var buildCmd string
	for _, s := range d.stages {
		for _, r := range s.runs {
			if strings.Contains(r, "go build") && strings.Contains(r, "./services/cmd/switchboard") {
				build, buildCmd = s, r
			}
		}
	}
	require.NotNil(t, build, "no stage runs go build ./services/cmd/switchboard")
	require.Equal(t, "golang:"+goVersion+"-bookworm", build.base, "the build image must match go.work's go version")
	require.True(t, build.env["CGO_ENABLED"] == "0" || strings.Contains(buildCmd, "CGO_ENABLED=0"),
		"the binary must be static (CGO_ENABLED=0) for a distroless/static runtime")
	require.Contains(t, buildCmd, "-trimpath")
	require.Contains(t, buildCmd, "-X github.com/switchboard/switchboard/pkg/buildinfo.Version=")

	// Every workspace module's metadata and sources reach the build stage, and
	// every context path it copies exists.
	var sources []string
	for _, c := range build.copies {
		if c.from != "" {
			continue
		}
		for _, src := range c.sources {
			_, err := os.Stat(filepath.Join(root, filepath.FromSlash(src)))
			require.NoError(t, err, "COPY source %s does not exist in the repository", src)
			sources = append(sources, strings.TrimSuffix(src, "/"))
		}
	}
	require.Contains(t, sources, "go.work")
	require.Contains(t, sources, "go.work.sum")
	for _, m := range modules {
		require.Contains(t, sources, m+"/go.mod", "go.work module %s", m)
		require.Contains(t, sources, m, "go.work module %s: sources not copied", m)
		if _, err := os.Stat(filepath.Join(root, m, "go.sum")); err == nil {
			require.Contains(t, sources, m+"/go.sum", "go.work module %s", m)
		}
	}

	// The runtime: the binary as entrypoint, never root.
	final := d.final()
	require.NotSame(t, build, final, "the final stage must not be the build stage")
	require.Contains(t, final.copyDests, "/switchboard")
	require.JSONEq(t, `["/switchboard"]`, final.entrypoint)
	user, _, _ := strings.Cut(final.user, ":")
	if user == "" {
		require.True(t, strings.HasSuffix(final.base, ":nonroot"),
			"the final stage sets no USER and its base %s is not a nonroot image", final.base)
	} else {
		require.NotContains(t, []string{"root", "0"}, user, "the final stage runs as root")
	}
	require.Subset(t, final.expose, []string{"9090", "8080"})
	require.Equal(t, "0.0.0.0:9090", final.env["SWITCHBOARD_GRPC_ADDR"])
	require.Equal(t, "0.0.0.0:8080", final.env["SWITCHBOARD_HTTP_ADDR"])
}

// The Dockerfile-specific ignore file must admit every top-level path the
// Dockerfile copies from the context.
func TestDockerignoreAdmitsSources(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	d := parseDockerfile(t, filepath.Join(root, dockerfile))
	data, err := os.ReadFile(filepath.Join(root, dockerfile+".dockerignore"))
	require.NoError(t, err)
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimSuffix(line, "/"))
		}
	}
	require.Contains(t, patterns, "*", "the ignore file is an allow-list")
	for _, s := range d.stages {
		for _, c := range s.copies {
			if c.from != "" {
				continue
			}
			for _, src := range c.sources {
				top, _, _ := strings.Cut(src, "/")
				require.Contains(t, patterns, "!"+top, "COPY %s is excluded from the context", src)
			}
		}
	}
}
