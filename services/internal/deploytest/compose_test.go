package deploytest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

const (
	composeFile = "deploy/compose/compose.yaml"
	dockerfile  = "deploy/docker/Dockerfile"
	// minGracePeriod is the default SWITCHBOARD_SHUTDOWN_GRACE: Docker must not
	// SIGKILL a node sooner than the binary's own drain deadline.
	minGracePeriod = 25 * time.Second
)

var nodeNames = []string{"node1", "node2", "node3"}

// repoRoot walks up from the test's working directory to the go.work file.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.work above the test's working directory")
		dir = parent
	}
}

// loadProject loads compose.yaml as `docker compose` would, from its own
// directory and with an empty environment, so only the file's defaults count.
// Nothing here talks to a Docker engine or the network.
func loadProject(t *testing.T) (*types.Project, string) {
	t.Helper()
	root := repoRoot(t)
	path := filepath.Join(root, composeFile)
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	project, err := loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: content}},
		Environment: types.Mapping{},
	})
	require.NoError(t, err, "compose-go rejects %s", composeFile)
	return project, root
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, err := p.GetService(name)
	require.NoError(t, err)
	return svc
}

// env returns a service's environment as plain strings (empty when unset).
func env(svc types.ServiceConfig) map[string]string {
	out := make(map[string]string, len(svc.Environment))
	for k, v := range svc.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// nodeConfig is the configuration the binary would load inside the container:
// the service's environment over the image's ENV defaults, through the same
// pkg/config the binary uses, so a bad value fails here instead of at boot.
func nodeConfig(t *testing.T, svc types.ServiceConfig, image map[string]string) config.Config {
	t.Helper()
	e := env(svc)
	cfg, err := config.Load(func(name string) (string, bool) {
		if v, ok := e[name]; ok {
			return v, true
		}
		v, ok := image[name]
		return v, ok
	})
	require.NoError(t, err, "%s: environment rejected by pkg/config", svc.Name)
	return cfg
}

func TestComposeServices(t *testing.T) {
	t.Parallel()
	p, _ := loadProject(t)
	names := p.ServiceNames()
	slices.Sort(names)
	require.Equal(t, []string{"node1", "node2", "node3", "postgres"}, names)
}

func TestComposePostgres(t *testing.T) {
	t.Parallel()
	p, _ := loadProject(t)
	pg := service(t, p, "postgres")
	require.Equal(t, "postgres:15", pg.Image)
	require.NotNil(t, pg.HealthCheck, "postgres needs a healthcheck for depends_on: service_healthy")
	require.False(t, pg.HealthCheck.Disable)
	require.Contains(t, pg.HealthCheck.Test, "pg_isready")

	var named bool
	for _, v := range pg.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == "/var/lib/postgresql/data" {
			require.Contains(t, p.Volumes, v.Source, "volume %q is not declared", v.Source)
			named = true
		}
	}
	require.True(t, named, "postgres data must live in a named volume")

	// Every node's DATABASE_URL names this server, user, password and database.
	pgEnv := env(pg)
	for _, name := range nodeNames {
		u, err := url.Parse(env(service(t, p, name))[config.EnvDatabaseURL])
		require.NoError(t, err)
		require.Equal(t, "postgres:5432", u.Host, name)
		require.Equal(t, pgEnv["POSTGRES_USER"], u.User.Username(), name)
		pw, _ := u.User.Password()
		require.Equal(t, pgEnv["POSTGRES_PASSWORD"], pw, name)
		require.Equal(t, "/"+pgEnv["POSTGRES_DB"], u.Path, name)
	}
}

func TestComposeNodes(t *testing.T) {
	t.Parallel()
	p, root := loadProject(t)
	df := parseDockerfile(t, filepath.Join(root, dockerfile))
	final := df.final()

	nodeIDs := map[string]string{}
	published := map[string]string{} // host ip:port -> service
	for _, svc := range p.Services {
		for _, port := range svc.Ports {
			if port.Published == "" {
				continue
			}
			key := net.JoinHostPort(port.HostIP, port.Published)
			require.NotContains(t, published, key, "%s and %s both publish %s", published[key], svc.Name, key)
			published[key] = svc.Name
		}
	}

	for _, name := range nodeNames {
		svc := service(t, p, name)
		cfg := nodeConfig(t, svc, final.env)

		require.Contains(t, svc.DependsOn, "postgres", name)
		require.Equal(t, types.ServiceConditionHealthy, svc.DependsOn["postgres"].Condition, name)

		// Set explicitly: the default (hostname-PID) would change on every restart.
		require.NotEmpty(t, env(svc)[config.EnvNodeID], "%s: CLUSTER_NODE_ID", name)
		require.NotContains(t, nodeIDs, cfg.Cluster.NodeID, "%s reuses %s's CLUSTER_NODE_ID", name, nodeIDs[cfg.Cluster.NodeID])
		nodeIDs[cfg.Cluster.NodeID] = name

		// Peers dial CLUSTER_ENDPOINT: the service name (the compose DNS name)
		// and the port the node actually listens on.
		_, grpcPort, err := net.SplitHostPort(cfg.GRPC.Addr)
		require.NoError(t, err)
		_, httpPort, err := net.SplitHostPort(cfg.HTTP.Addr)
		require.NoError(t, err)
		require.Equal(t, net.JoinHostPort(name, grpcPort), cfg.Cluster.Endpoint, "%s: CLUSTER_ENDPOINT", name)
		for _, addr := range []string{cfg.GRPC.Addr, cfg.HTTP.Addr} {
			host, _, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			require.True(t, host == "0.0.0.0" || host == "" || host == "::",
				"%s: %s must listen on every interface, not %q", name, addr, host)
		}

		// Both container ports reach the host.
		var targets []string
		for _, port := range svc.Ports {
			require.NotEmpty(t, port.Published, "%s: port %d has no host port", name, port.Target)
			targets = append(targets, strconv.FormatUint(uint64(port.Target), 10))
		}
		require.ElementsMatch(t, []string{grpcPort, httpPort}, targets, "%s: published container ports", name)

		// The healthcheck probes this node's gRPC port with the probe the image ships.
		hc := svc.HealthCheck
		require.NotNil(t, hc, "%s: healthcheck", name)
		require.False(t, hc.Disable, name)
		require.GreaterOrEqual(t, len(hc.Test), 2, name)
		require.Equal(t, "CMD", hc.Test[0], "%s: exec form (the image has no shell)", name)
		require.Contains(t, final.copyDests, hc.Test[1], "%s: healthcheck binary %s is not in the image", name, hc.Test[1])
		require.Contains(t, hc.Test, "-addr=127.0.0.1:"+grpcPort, name)

		// Self-eviction exits non-zero; the restart is the recovery.
		require.Contains(t, []string{types.RestartPolicyAlways, types.RestartPolicyUnlessStopped, types.RestartPolicyOnFailure},
			svc.Restart, "%s: restart policy", name)

		require.NotNil(t, svc.StopGracePeriod, "%s: stop_grace_period", name)
		grace := time.Duration(*svc.StopGracePeriod)
		require.Greater(t, grace, minGracePeriod, name)
		require.Greater(t, grace, cfg.Shutdown.Delay+cfg.Shutdown.Grace,
			"%s: stop_grace_period must outlast SWITCHBOARD_SHUTDOWN_DELAY + SWITCHBOARD_SHUTDOWN_GRACE", name)
	}
}

func TestComposeBuild(t *testing.T) {
	t.Parallel()
	p, root := loadProject(t)
	wantRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	for _, name := range nodeNames {
		svc := service(t, p, name)
		require.NotNil(t, svc.Build, "%s: build", name)
		ctx, err := filepath.EvalSymlinks(svc.Build.Context)
		require.NoError(t, err, "%s: build context", name)
		require.Equal(t, wantRoot, ctx, "%s: the build context must be the repository root (go.work)", name)

		df := svc.Build.Dockerfile
		if !filepath.IsAbs(df) {
			df = filepath.Join(ctx, df)
		}
		require.FileExists(t, df, name)
		require.Equal(t, filepath.Join(wantRoot, dockerfile), df, name)
	}
}
