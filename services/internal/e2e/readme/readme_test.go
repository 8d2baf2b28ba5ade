//go:build e2e

package readme_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/node"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }

// shellLangs are the fence languages a reader pastes into a shell. Every
// fence must name a language, so a shell block cannot hide in a bare ```.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

// check is what one runnable block must print. find picks the block: a
// string that occurs in it and in no other shell block.
type check struct {
	name, find string
	want       []string
}

// checks lists every shell block of README.md that runs as pasted, with
// what its output must show. A block that is neither here nor marked as a
// template fails TestReadmeShellBlocks, so a new block cannot go unrun.
var checks = []check{
	{"the first hour", "# 1. A tenant (a human), its agent", []string{
		`"queue":"builds","state":"TODO_STATE_PENDING"`, // the enqueued todo
		`{"leaseExpiresAt":"`,                           // the heartbeat's new lease
		`"state":"TODO_STATE_COMPLETED","attempt":1`,    // the completion
		"401 for a wrong signature",
		`\"pull_request\": {\"number\": 7}`,                   // the event with its payload
		`"state":"TODO_STATE_PENDING","agent_id":"`,           // its todo, waiting for its agent
		`"channel":"builds","kind":"","payload":{"done":true`, // the durable replay after FIRST
	}},
	{"access", "RegistryService/ListNodes", []string{
		`"nodeId": "readme-node"`, // grpcurl's ListNodes
		`"node_id":"readme-node"`, // REST's cluster view
	}},
	{"schedules", `"name": "nightly-report"`, []string{
		`"name":"nightly-report"`, `"next_runs":[`, `"paused":true`, // create, list, pause
		`"name": "heartbeat"`, `"misfire": "MISFIRE_SKIP"`, // grpcurl's create
	}},
	{"endpoints", "VERIFICATION_SCHEME_STRIPE", []string{
		`"verification":"VERIFICATION_SCHEME_GITHUB"`, `"url_path":"/hooks/`, `"secret":"`,
		`"verification":"VERIFICATION_SCHEME_STRIPE"`,
	}},
	{"mcp inspector", "deploy/local/mcp-inspector.sh", []string{`"structuredContent": {`, `"todos": [`}},
	{"metrics", "switchboard_queue_todos_enqueued_total", []string{
		`switchboard_queue_todos_enqueued_total{queue="demo"} 1`, "\n401\n",
	}},
	{"alert rules", "promtool.sh", []string{"SUCCESS"}},
	{"split", "serve gateway &", []string{`"queue":"demo"`, `"pending_ready":"1"`}}, // the metrics block's todo
	{"kubernetes", "kubectl kustomize", []string{"6 kind: Deployment", "1 kind: Job"}},
	{"poking it", "grpc.health.v1.Health/Check", []string{
		"switchboard.queue.v1.QueueService\n", `"status": "SERVING"`, `"nodeId": "readme-node"`, "rpc Claim (",
		`"status":"healthy"`, `"node_id":"readme-node"`, "00001_tenancy.sql",
		`"members":[]`, `"payload":{"hello":"world"}`,
	}},
}

// block is one fenced code block of README.md.
type block struct {
	line     int    // of the opening fence
	lang     string // after the fence
	before   string // the last non-blank line before the fence
	body     string
	template string // the marker's text, "" when it is not a template
}

func (b block) String() string { return fmt.Sprintf("README.md:%d (```%s)", b.line, b.lang) }

const howToMark = "either make it run as pasted against a node (the test sets API, GRPC, ADMIN, TOKEN, an agent's " +
	"credential, and DATABASE_URL) and add it, with what its output must show, to checks in services/internal/e2e/readme/readme_test.go, " +
	"or mark it a template: `<!-- template: WHAT TO FILL IN -->` on the line before the fence and " +
	"`# template: WHAT TO FILL IN` (the same words) as the block's first line"

// parse returns README.md's fenced blocks, or an error naming a fence
// without a language or a template marked on one side only.
func parse(readme []byte) ([]block, error) {
	var (
		out    []block
		open   *block
		body   strings.Builder
		before string
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```") // in a list item too
		switch {
		case open == nil && fence:
			open = &block{line: n, lang: strings.TrimSpace(strings.TrimLeft(line, " `")), before: before}
			body.Reset()
		case open != nil && fence:
			open.body = body.String()
			out = append(out, *open)
			open = nil
		case open != nil:
			body.WriteString(line + "\n")
		case strings.TrimSpace(line) != "":
			before = line
		}
	}
	if open != nil {
		return nil, fmt.Errorf("%s is never closed", open)
	}
	for i, b := range out {
		if b.lang == "" {
			return nil, fmt.Errorf("%s names no language: give it one (```text for output, ```sh for commands)", b)
		}
		if !shellLangs[b.lang] {
			continue
		}
		html, htmlOK := strings.CutPrefix(strings.TrimSpace(b.before), "<!-- template:")
		html, _ = strings.CutSuffix(html, "-->")
		first, _, _ := strings.Cut(b.body, "\n")
		shell, shellOK := strings.CutPrefix(first, "# template:")
		switch {
		case htmlOK != shellOK:
			return nil, fmt.Errorf("%s is marked a template on one side only: %s", b, howToMark)
		case htmlOK && strings.TrimSpace(html) != strings.TrimSpace(shell):
			return nil, fmt.Errorf("%s: the template's two markers say different things (%q, %q)", b, html, shell)
		case htmlOK && strings.TrimSpace(html) == "":
			return nil, fmt.Errorf("%s: a template marker must say what to fill in or why it cannot run as pasted", b)
		case htmlOK:
			out[i].template = strings.TrimSpace(html)
		}
	}
	return out, nil
}

// run is a shell block to run and what it must print.
type run struct {
	block
	check
}

// plan pairs every runnable shell block with its check and counts the
// templates. It refuses a shell block that is neither, a check that finds
// no block or several, and a block two checks find.
func plan(all []block, checks []check) (runs []run, templates int, err error) {
	used := map[string]int{}
	for _, b := range all {
		if !shellLangs[b.lang] {
			continue
		}
		var found []check
		for _, c := range checks {
			if strings.Contains(b.body, c.find) {
				found = append(found, c)
				used[c.name]++
			}
		}
		switch {
		case len(found) > 1:
			return nil, 0, fmt.Errorf("%s is found by more than one check (%v): make their find strings unique", b, found)
		case b.template != "" && len(found) == 1:
			return nil, 0, fmt.Errorf("%s is a template, so check %q would never run: remove one or the other", b, found[0].name)
		case b.template != "":
			templates++
		case len(found) == 0:
			return nil, 0, fmt.Errorf("%s is neither checked nor a template: %s", b, howToMark)
		case len(found[0].want) == 0:
			return nil, 0, fmt.Errorf("%s (%s) runs, but its check wants nothing of its output", b, found[0].name)
		default:
			runs = append(runs, run{b, found[0]})
		}
	}
	for _, c := range checks {
		if used[c.name] != 1 {
			return nil, 0, fmt.Errorf("check %q must find exactly one shell block of README.md by %q, found %d", c.name, c.find, used[c.name])
		}
	}
	return runs, templates, nil
}

// A shell block added without a check or a template marker, a marker on one
// side only, and a fence without a language are refused with how to fix
// them; a marked template and a checked block pass.
func TestEveryShellBlockIsRunOrATemplate(t *testing.T) {
	t.Parallel()
	ok := []check{{"hello", "echo hello", []string{"hello"}}}
	for name, tc := range map[string]struct {
		readme, refusal string
	}{
		"checked":             {"```sh\necho hello\n```\n", ""},
		"template":            {"```sh\necho hello\n```\n<!-- template: fill in X -->\n```bash\n# template: fill in X\nrm -rf X\n```\n", ""},
		"not shell":           {"```sh\necho hello\n```\n```json\n{}\n```\n", ""},
		"unmarked":            {"```sh\necho hello\n```\n```console\nmake run\n```\n", "neither checked nor a template: either make it run"},
		"html only":           {"```sh\necho hello\n```\n<!-- template: fill in X -->\n```sh\nrm -rf X\n```\n", "on one side only"},
		"comment only":        {"```sh\necho hello\n```\n```sh\n# template: fill in X\nrm -rf X\n```\n", "on one side only"},
		"different":           {"```sh\necho hello\n```\n<!-- template: X -->\n```sh\n# template: Y\n```\n", "say different things"},
		"no language":         {"```sh\necho hello\n```\n```\nmake run\n```\n", "names no language"},
		"unclosed":            {"```sh\necho hello\n", "never closed"},
		"check on a template": {"<!-- template: X -->\n```sh\n# template: X\necho hello\n```\n", `check "hello" would never run`},
		"check missing":       {"<!-- template: X -->\n```sh\n# template: X\nmake run\n```\n", `check "hello" must find exactly one`},
	} {
		blocks, err := parse([]byte(tc.readme))
		if err == nil {
			_, _, err = plan(blocks, ok)
		}
		if tc.refusal == "" {
			require.NoError(t, err, name)
		} else {
			require.ErrorContains(t, err, tc.refusal, name)
		}
	}
}

// README.md's shell blocks, each run as pasted (bash -e) against a live node
// from the repository root, so they cannot rot: only API, GRPC and ADMIN (and
// TOKEN, an agent's credential, for the block that asks for one) point them
// at this node instead of make run's, and DATABASE_URL at its database. A
// block that cannot run so is marked as a template, visibly. It needs curl,
// jq, openssl, grpcurl (deploy/local/tools.sh grpcurl), node and npm (the MCP
// Inspector), kubectl (kustomize) and promtool (deploy/local/promtool.sh
// installs it as root on Debian).
func TestReadmeShellBlocks(t *testing.T) { //nolint:tparallel // its blocks run in order, as a reader pastes them
	t.Parallel()
	root, err := filepath.Abs("../../../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	all, err := parse(readme)
	require.NoError(t, err)

	// Pair every shell block with its check before anything starts, so a
	// README edit fails here with the fix in the message.
	runs, templates, err := plan(all, checks)
	require.NoError(t, err)
	t.Logf("README.md: %d shell blocks run, %d templates", len(runs), templates)

	gobin := goBin(t)
	path := gobin + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, tool := range []string{"bash", "curl", "jq", "openssl", "go", "grpcurl", "node", "npm", "kubectl"} {
		_, err := lookPath(tool, path)
		require.NoError(t, err, "the README's blocks need %s (grpcurl: deploy/local/tools.sh grpcurl)", tool)
	}
	admin, _, err := auth.NewToken()
	require.NoError(t, err)
	sandbox := sandbox(t, root, admin)

	dbURL := pgtest.NewEmptyDatabase(t) // the node migrates it as it boots, as make run's does
	api, grpcAddr := startNode(t, dbURL, admin)
	agent := agentToken(t, api, admin)

	// One after another, in the README's order, as a reader pastes them
	// (the metrics block counts the "demo" queue's first enqueue).
	for _, r := range runs { //nolint:paralleltest // in order, as above
		t.Run(r.name, func(t *testing.T) {
			out := runBlock(t, sandbox, r.body, append(os.Environ(),
				"PATH="+path, "API="+api, "GRPC="+grpcAddr, "ADMIN="+admin, "TOKEN="+agent, "DATABASE_URL="+dbURL))
			for _, want := range r.want {
				require.Contains(t, out, want, "%s (%s) printed:\n%s", r.block, r.name, out)
			}
		})
	}
}

// runBlock runs body with bash -e in dir and returns what it printed. The
// block runs in a process group of its own, killed when it ends, so a
// background job it started cannot outlive it.
func runBlock(t *testing.T, dir, body string, env []string) string {
	t.Helper()
	// Generous: the MCP Inspector's first npm ci and a promtool install
	// happen inside blocks on a fresh machine.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", body)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	// A file, not a pipe: a background job (the split block's nodes) keeps
	// its output open, and Wait would wait for a pipe to close.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer func() { _ = out.Close() }()
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its background jobs, if any
	printed, rerr := os.ReadFile(out.Name())
	require.NoError(t, rerr)
	require.NoError(t, err, "the block failed when pasted:\n%s\n--- it printed:\n%s", body, printed)
	return string(printed)
}

// sandbox is the repository as the blocks see it after make run: every
// top-level entry of root linked in, except bin/, which holds a switchboard
// built from this tree, and .local/, which holds the node's administrator
// token as dev-admin-token. So the test never writes into the checkout's
// own bin/ and never reads a developer's token.
func sandbox(t *testing.T, root, admin string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != "bin" && e.Name() != ".local" {
			require.NoError(t, os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())))
		}
	}
	local := filepath.Join(dir, ".local")
	require.NoError(t, os.Mkdir(local, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(local, "dev-admin-token"), []byte(admin+"\n"), 0o600))
	// The MCP Inspector is installed once, into the checkout's .local;
	// linked, the blocks share it instead of installing into a temp dir.
	inspector := filepath.Join(root, ".local", "mcp-inspector")
	require.NoError(t, os.MkdirAll(inspector, 0o755))
	require.NoError(t, os.Symlink(inspector, filepath.Join(local, "mcp-inspector")))
	build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, "bin", "switchboard"), "./cmd/switchboard")
	build.Dir = filepath.Join(root, "services")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build switchboard:\n%s", out)
	return dir
}

func goBin(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOPATH").Output()
	require.NoError(t, err)
	return filepath.Join(strings.TrimSpace(string(out)), "bin")
}

// lookPath is exec.LookPath over path instead of this process's PATH.
func lookPath(tool, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, tool)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH", tool)
}

// startNode runs `serve all` in this process, as make run does, on free
// loopback ports, storing admin as the administrator's token at boot (make
// run's .local/dev-admin-token), and returns its REST base URL and gRPC
// address.
func startNode(t *testing.T, dbURL, admin string) (api, grpcAddr string) {
	t.Helper()
	cfg := config.Default()
	cfg.Postgres.URL = pgtest.NodeURL(dbURL) // the suite's connection bounds
	cfg.Cluster.NodeID = "readme-node"
	cfg.GRPC.Addr, cfg.HTTP.Addr, cfg.Cluster.Endpoint = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Shutdown.Grace = 5 * time.Second
	cfg.Auth.BootstrapToken = admin
	services, err := node.ParseServices("all")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.New(ctx, cfg, zap.NewNop(), services)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	ended := make(chan error, 1)
	go func() { ended <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ended:
			if err != nil {
				t.Errorf("node: %v", err)
			}
		case <-time.After(cfg.Shutdown.Delay + cfg.Shutdown.Grace + time.Minute):
			t.Errorf("the node did not stop")
		}
	})

	conn, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	// Watch reports each change of the status, so this waits for SERVING
	// (migrated, Postgres answering) without polling.
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	for {
		resp, err := watch.Recv()
		require.NoError(t, err, "the node never reported SERVING")
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	return "http://" + n.HTTPAddr(), n.GRPCAddr()
}

// agentToken mints what the MCP block asks for, an agent's credential,
// the way "The first hour" step 1 does.
func agentToken(t *testing.T, api, admin string) string {
	t.Helper()
	post := func(path string, body map[string]any) map[string]any {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, api+path, bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	id := func(m map[string]any, key string) string {
		obj, _ := m[key].(map[string]any)
		s, _ := obj["id"].(string)
		require.NotEmpty(t, s, "%s has no id: %v", key, m)
		return s
	}
	human := id(post("/api/admin/humans", map[string]any{"email": "mcp@example.com"}), "human")
	agent := id(post("/api/admin/agents", map[string]any{"human_id": human, "name": "mcp"}), "agent")
	cred := post("/api/admin/credentials", map[string]any{"human_id": human, "agent_id": agent, "scopes": []string{"agent"}})
	tok, _ := cred["token"].(string)
	require.NotEmpty(t, tok)
	return tok
}
