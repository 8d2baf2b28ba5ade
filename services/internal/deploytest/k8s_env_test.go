package deploytest

import (
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
)

// k8sOnlyEnv are variables the manifests define for Kubernetes' own
// $(NAME) substitution, never read by the binary; runtimeEnv are the Go
// runtime's (GOGC is also read by the cli, see tuneGC).
var (
	k8sOnlyEnv = map[string]bool{"POD_IP": true}
	runtimeEnv = map[string]bool{"GOMEMLIMIT": true, "GOGC": true}
)

// configEnvNames parses pkg/config for its Env* constants: the variables the
// binary reads. Parsing (rather than listing them here) makes a rename or a
// removal in pkg/config fail the manifests' check.
func configEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "pkg", "config")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range spec.Names {
				if !strings.HasPrefix(id.Name, "Env") || i >= len(spec.Values) {
					continue
				}
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					names[v] = true
				}
			}
			return true
		})
	}
	require.Contains(t, names, config.EnvDatabaseURL, "the parse found pkg/config's constants")
	return names
}

func TestK8sEnvNamesAreOnesTheBinaryReads(t *testing.T) {
	t.Parallel()
	known := configEnvNames(t)
	check := func(where, name string) {
		switch {
		case known[name], k8sOnlyEnv[name], runtimeEnv[name], strings.HasPrefix(name, "OTEL_"):
		default:
			t.Errorf("%s sets %s, which the binary does not read (pkg/config's Env* constants)", where, name)
		}
	}
	for _, m := range buildAll(t) {
		for k := range m.configMap(t).Data {
			check(m.overlay+" ConfigMap", k)
		}
		for k := range m.secret(t).Data {
			check(m.overlay+" Secret", k)
		}
		for _, c := range containers(m) {
			for _, e := range c.Env {
				check(m.overlay+" container "+c.Name, e.Name)
			}
		}
	}
}

func containers(m *manifests) []corev1.Container {
	var out []corev1.Container
	for _, d := range m.deployments {
		out = append(out, d.Spec.Template.Spec.InitContainers...)
		out = append(out, d.Spec.Template.Spec.Containers...)
	}
	for _, j := range m.jobs {
		out = append(out, j.Spec.Template.Spec.Containers...)
	}
	return out
}

// podEnv is what the binary would see in a Deployment's pod: the ConfigMap,
// the Secret (secrets overrides its values), then the container's env with
// $(VAR) expanded and status.podIP as podIP.
func podEnv(t *testing.T, m *manifests, d *appsv1.Deployment, secrets map[string]string, podIP string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range m.configMap(t).Data {
		env[k] = v
	}
	for k, v := range m.secret(t).Data {
		env[k] = string(v)
		if s, ok := secrets[k]; ok {
			env[k] = s
		}
	}
	for _, e := range mainContainer(t, d).Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			env[e.Name] = podIP
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = d.Name + "-7d9c8b6f5-x2x4q"
		default:
			t.Fatalf("%s: env %s comes from a source this test does not model", d.Name, e.Name)
		}
	}
	return env
}

// expand does Kubernetes' $(VAR) substitution from earlier variables.
func expand(v string, env map[string]string) string {
	for k, val := range env {
		v = strings.ReplaceAll(v, "$("+k+")", val)
	}
	return v
}

// realSecrets are values an operator would put in the Secret.
func realSecrets(t *testing.T) map[string]string {
	t.Helper()
	tok, _, err := auth.NewToken()
	require.NoError(t, err)
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	return map[string]string{
		config.EnvSecretKey:      key,
		config.EnvSealingKeys:    "k1:" + key,
		config.EnvBootstrapToken: tok,
		config.EnvClusterSecret:  strings.Repeat("s", 32),
	}
}

// The environment each Deployment gets loads through pkg/config (with real
// secrets), advertises its pod IP, listens where its ports and probes say,
// and shuts down within the pod's grace period.
func TestK8sEnvironmentIsOneTheNodeAccepts(t *testing.T) {
	t.Parallel()
	secrets := realSecrets(t)
	for _, m := range buildAll(t) {
		for _, d := range m.deployments {
			c := mainContainer(t, d)
			env := podEnv(t, m, d, secrets, "10.1.2.3")
			cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			require.NoError(t, err, "%s: pkg/config rejects the pod's environment", d.Name)

			_, grpcPort, _ := net.SplitHostPort(cfg.GRPC.Addr)
			_, httpPort, _ := net.SplitHostPort(cfg.HTTP.Addr)
			require.Equal(t, strconv.Itoa(int(port(t, c, "grpc"))), grpcPort, "%s: grpc port", d.Name)
			require.Equal(t, strconv.Itoa(int(port(t, c, "http"))), httpPort, "%s: http port", d.Name)
			require.Equal(t, net.JoinHostPort("10.1.2.3", grpcPort), cfg.Cluster.Endpoint, "%s: CLUSTER_ENDPOINT is the pod IP", d.Name)
			require.Equal(t, d.Name+"-7d9c8b6f5-x2x4q", cfg.Cluster.NodeID, "%s: CLUSTER_NODE_ID is the pod name", d.Name)

			// Metrics: the port SWITCHBOARD_METRICS_ADDR names is declared
			// and is the one Prometheus is told to scrape.
			_, metricsPort, err := net.SplitHostPort(env["SWITCHBOARD_METRICS_ADDR"])
			require.NoError(t, err, "%s: SWITCHBOARD_METRICS_ADDR", d.Name)
			require.Equal(t, strconv.Itoa(int(port(t, c, "metrics"))), metricsPort, d.Name)
			ann := d.Spec.Template.Annotations
			require.Equal(t, "true", ann["prometheus.io/scrape"], d.Name)
			require.Equal(t, metricsPort, ann["prometheus.io/port"], d.Name)

			// The startup probe outlasts the node's own boot deadline.
			sp := c.StartupProbe
			require.Greater(t, time.Duration(sp.PeriodSeconds*sp.FailureThreshold)*time.Second, cfg.Postgres.StartupTimeout, d.Name)

			requireGracefulShutdown(t, d, c, cfg)
			requireSoftMemoryLimit(t, d, c, env)
		}
	}
}

// requireGracefulShutdown: the kubelet's SIGKILL comes after the node's own
// drain (delay + grace) and a margin to stop and deregister. The node keeps
// serving during the delay itself, so a preStop is optional; the image has
// no shell, so only the native sleep action could be one.
func requireGracefulShutdown(t *testing.T, d *appsv1.Deployment, c corev1.Container, cfg config.Config) {
	t.Helper()
	const margin = 10 * time.Second
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		h := c.Lifecycle.PreStop
		require.Nil(t, h.Exec, "%s: preStop exec needs a shell; the image has none", d.Name)
		if h.Sleep != nil {
			preStop = time.Duration(h.Sleep.Seconds) * time.Second
		}
	}
	require.Positive(t, cfg.Shutdown.Delay, "%s: SWITCHBOARD_SHUTDOWN_DELAY lets endpoints drop the pod before it drains", d.Name)
	tg := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	require.NotNil(t, tg, "%s: terminationGracePeriodSeconds", d.Name)
	require.GreaterOrEqual(t, time.Duration(*tg)*time.Second, preStop+cfg.Shutdown.Delay+cfg.Shutdown.Grace+margin,
		"%s: terminationGracePeriodSeconds must outlast preStop + SWITCHBOARD_SHUTDOWN_DELAY + SWITCHBOARD_SHUTDOWN_GRACE + %s", d.Name, margin)
}

// requireSoftMemoryLimit: GOMEMLIMIT (in MiB) is set below the container's
// memory limit, so the GC, not the OOM killer, answers a growing heap.
func requireSoftMemoryLimit(t *testing.T, d *appsv1.Deployment, c corev1.Container, env map[string]string) {
	t.Helper()
	mib, ok := strings.CutSuffix(env["GOMEMLIMIT"], "MiB")
	require.True(t, ok, "%s: GOMEMLIMIT in MiB, got %q", d.Name, env["GOMEMLIMIT"])
	n, err := strconv.ParseInt(mib, 10, 64)
	require.NoError(t, err, d.Name)
	limit := c.Resources.Limits[corev1.ResourceMemory]
	require.Less(t, n<<20, limit.Value(), "%s: GOMEMLIMIT below limits.memory", d.Name)
	require.Greater(t, n<<20, limit.Value()*3/4, "%s: GOMEMLIMIT close to limits.memory (it is what the GC aims under)", d.Name)
}

// The shipped Secret holds placeholders, and they cannot boot a node.
func TestK8sSecretPlaceholdersAreRejected(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		sec := m.secret(t)
		for _, k := range []string{config.EnvDatabaseURL, config.EnvBootstrapToken, config.EnvSecretKey, config.EnvSealingKeys, config.EnvClusterSecret} {
			require.Contains(t, string(sec.Data[k]), "CHANGE-ME", "%s: %s is a marked placeholder", m.overlay, k)
		}
		env := podEnv(t, m, m.deployments[0], nil, "10.1.2.3")
		_, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		require.Error(t, err, "%s: the placeholders must not boot a node", m.overlay)
	}
}

// Webhooks, REST and the dashboard reach the HTTP edge: the gateway's
// Service in split, the one Service in single.
func TestK8sIngressRoutesToTheEdge(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		require.Len(t, m.ingresses, 1, m.overlay)
		edge := "switchboard"
		if m.overlay == k8sSplit {
			edge = "switchboard-gateway"
		}
		var svc *corev1.Service
		for _, s := range m.services {
			if s.Name == edge {
				svc = s
			}
		}
		require.NotNil(t, svc, "%s: Service %s", m.overlay, edge)
		paths := map[string]bool{}
		for _, rule := range m.ingresses[0].Spec.Rules {
			require.NotNil(t, rule.HTTP)
			for _, p := range rule.HTTP.Paths {
				paths[p.Path] = true
				b := p.Backend.Service
				require.NotNil(t, b, "%s: %s", m.overlay, p.Path)
				require.Equal(t, edge, b.Name, "%s: %s goes to the edge", m.overlay, p.Path)
				require.Equal(t, "http", b.Port.Name, "%s: %s", m.overlay, p.Path)
			}
		}
		require.Equal(t, map[string]bool{"/hooks": true, "/api": true, "/": true}, paths, m.overlay)
		require.True(t, slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "http" }),
			"%s: Service %s has an http port", m.overlay, edge)
	}
}
