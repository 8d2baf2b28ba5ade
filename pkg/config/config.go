// Package config is the one place a Switchboard process reads its settings.
//
// Settings come from environment variables only (12-factor): there is no
// config file and no flag layer, so `env` shows everything a process was told.
// Load parses and validates every variable before any listener opens, and a bad
// value is reported as one line naming the variable.
package config

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard/switchboard/pkg/auth"
)

// Config is everything a node needs to start. The zero value is not useful:
// build it with Load (or Default for tests) so every field carries a default.
type Config struct {
	Postgres Postgres
	GRPC     Listener
	HTTP     Listener
	Log      Log
	Cluster  Cluster
	Shutdown Shutdown
	Gateway  Gateway
	Auth     Auth
	Ingest   Ingest
	Realtime Realtime
	TLS      TLS

	// HTTPLimits bound the HTTP edge (http.go).
	HTTPLimits HTTPLimits
	// Metrics is the Prometheus endpoint (metrics.go).
	Metrics Metrics
	// Pprof is the opt-in profiler listener (pprof.go).
	Pprof Pprof
	// MCP bounds the MCP edge per tenant (mcp.go).
	MCP MCP
}

// Auth configures credentials.
type Auth struct {
	// SecretKey is the deployment's master secret (SWITCHBOARD_SECRET_KEY,
	// base64, at least 32 bytes); token hashes are keyed with a key derived
	// from it. Every node of a cluster needs the same value. DevSecretKey is
	// true when it was not set and the built-in development key is used.
	SecretKey    []byte
	DevSecretKey bool
	// CacheTTL is how long a verified token is trusted without asking the
	// database: revocation takes effect within it.
	CacheTTL time.Duration
	// BootstrapToken, when set, is stored at boot as an admin credential of
	// the administrator BootstrapEmail (automated installs).
	BootstrapToken string
	BootstrapEmail string
}

// devSecretKey is used when SWITCHBOARD_SECRET_KEY is unset, so `make run`
// works out of the box. It is public: production must set its own.
var devSecretKey = []byte("switchboard development secret key: set SWITCHBOARD_SECRET_KEY")

// Gateway configures the REST edge.
type Gateway struct {
	// Upstream (SWITCHBOARD_GATEWAY_UPSTREAM) sends every service's calls
	// to one gRPC address; empty means route each service by the registry
	// (upstream.go). Upstreams pins single services
	// (SWITCHBOARD_UPSTREAM_<SERVICE>) and wins over Upstream.
	Upstream  string
	Upstreams map[string]string
}

// Postgres configures the shared database.
type Postgres struct {
	// URL is a libpq-style connection URL (DATABASE_URL).
	URL string
	// StartupTimeout bounds how long boot waits for the database to answer and
	// for migrations (including waiting on another node's migration lock).
	StartupTimeout time.Duration
}

// Listener is a TCP listen address.
type Listener struct {
	Addr string
}

// Log configures zap.
type Log struct {
	Level  string // debug, info, warn, error
	Format string // json or console
}

// Cluster holds the registry settings named by the cluster-registry design.
type Cluster struct {
	NodeID            string
	HeartbeatInterval time.Duration
	StaleThreshold    time.Duration
	// Endpoint is the gRPC address peers and the gateway use to reach this node.
	Endpoint string
	// HTTPEndpoint (CLUSTER_HTTP_ENDPOINT) is the HTTP address peers reach
	// this node by; empty: Endpoint's host with the HTTP listener's port.
	HTTPEndpoint string
}

// Shutdown is the SIGTERM choreography: health flips to NOT_SERVING, the node
// waits Delay (so load balancers notice), then drains in-flight RPCs and
// streams for at most Grace before forcing them closed.
type Shutdown struct {
	Delay time.Duration
	Grace time.Duration
}

// Environment variable names. Keep this list, Load and the README table in step.
const (
	EnvDatabaseURL       = "DATABASE_URL"
	EnvStartupTimeout    = "SWITCHBOARD_STARTUP_TIMEOUT"
	EnvGRPCAddr          = "SWITCHBOARD_GRPC_ADDR"
	EnvHTTPAddr          = "SWITCHBOARD_HTTP_ADDR"
	EnvLogLevel          = "SWITCHBOARD_LOG_LEVEL"
	EnvLogFormat         = "SWITCHBOARD_LOG_FORMAT"
	EnvShutdownDelay     = "SWITCHBOARD_SHUTDOWN_DELAY"
	EnvShutdownGrace     = "SWITCHBOARD_SHUTDOWN_GRACE"
	EnvNodeID            = "CLUSTER_NODE_ID"
	EnvHeartbeatInterval = "CLUSTER_HEARTBEAT_INTERVAL"
	EnvStaleThreshold    = "CLUSTER_STALE_THRESHOLD"
	EnvEndpoint          = "CLUSTER_ENDPOINT"
	EnvGatewayUpstream   = "SWITCHBOARD_GATEWAY_UPSTREAM"
	EnvSecretKey         = "SWITCHBOARD_SECRET_KEY"
	EnvAuthCacheTTL      = "SWITCHBOARD_AUTH_CACHE_TTL"
	EnvBootstrapToken    = "SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN"
	EnvBootstrapEmail    = "SWITCHBOARD_BOOTSTRAP_ADMIN_EMAIL"
)

// DefaultDatabaseURL is the local development database (deploy/local creates it).
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/switchboard?sslmode=disable"

// Default returns the configuration a process gets with an empty environment.
func Default() Config {
	return Config{
		Postgres: Postgres{URL: DefaultDatabaseURL, StartupTimeout: 2 * time.Minute},
		GRPC:     Listener{Addr: "127.0.0.1:9090"},
		HTTP:     Listener{Addr: "127.0.0.1:8080"},
		Log:      Log{Level: "info", Format: "json"},
		Cluster: Cluster{
			NodeID:            defaultNodeID(),
			HeartbeatInterval: 10 * time.Second,
			StaleThreshold:    30 * time.Second,
		},
		Shutdown: Shutdown{Delay: 0, Grace: 25 * time.Second},
		Auth: Auth{
			SecretKey: devSecretKey, DevSecretKey: true,
			CacheTTL: 10 * time.Second, BootstrapEmail: "admin@localhost",
		},
		Ingest:   defaultIngest(),
		Realtime: defaultRealtime(),
		TLS:      defaultTLS(),

		HTTPLimits: defaultHTTPLimits(),
		MCP:        defaultMCP(),
	}
}

// Load builds a Config from the environment (os.LookupEnv when lookup is nil)
// and validates it. The error names the first offending variable.
func Load(lookup func(string) (string, bool)) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	c := Default()
	p := parser{lookup: lookup}
	p.str(EnvDatabaseURL, &c.Postgres.URL)
	p.duration(EnvStartupTimeout, &c.Postgres.StartupTimeout)
	p.str(EnvGRPCAddr, &c.GRPC.Addr)
	p.str(EnvHTTPAddr, &c.HTTP.Addr)
	p.str(EnvLogLevel, &c.Log.Level)
	p.str(EnvLogFormat, &c.Log.Format)
	p.duration(EnvShutdownDelay, &c.Shutdown.Delay)
	p.duration(EnvShutdownGrace, &c.Shutdown.Grace)
	p.str(EnvNodeID, &c.Cluster.NodeID)
	p.duration(EnvHeartbeatInterval, &c.Cluster.HeartbeatInterval)
	p.duration(EnvStaleThreshold, &c.Cluster.StaleThreshold)
	p.str(EnvEndpoint, &c.Cluster.Endpoint)
	p.str(EnvGatewayUpstream, &c.Gateway.Upstream)
	p.upstreams(&c.Gateway)
	p.str(EnvHTTPEndpoint, &c.Cluster.HTTPEndpoint)
	p.secretKey(EnvSecretKey, &c.Auth)
	p.duration(EnvAuthCacheTTL, &c.Auth.CacheTTL)
	p.str(EnvBootstrapToken, &c.Auth.BootstrapToken)
	p.str(EnvBootstrapEmail, &c.Auth.BootstrapEmail)
	p.sealingKeys(EnvSealingKeys, &c.Ingest)
	p.adapterAllow(EnvAdapterAllow, &c.Ingest)
	p.str(EnvEphemeralTransport, &c.Realtime.EphemeralTransport)
	p.str(EnvClusterSecret, &c.Realtime.ClusterSecret)
	p.tls(&c.TLS)
	p.httpLimits(&c.HTTPLimits)
	p.metrics(&c.Metrics)
	p.str(EnvPprofAddr, &c.Pprof.Addr)
	p.mcp(&c.MCP)
	if p.err != nil {
		return Config{}, p.err
	}
	if c.Cluster.Endpoint == "" {
		c.Cluster.Endpoint = advertised(c.GRPC.Addr)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every field; each error starts with the variable's name.
func (c Config) Validate() error {
	u, err := url.Parse(c.Postgres.URL)
	switch {
	case err != nil:
		return fmt.Errorf("%s: not a URL: %w", EnvDatabaseURL, err)
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return fmt.Errorf("%s: scheme must be postgres:// or postgresql://, got %q", EnvDatabaseURL, u.Scheme)
	}
	if err := connString(c.Postgres.URL); err != nil {
		return err
	}
	checks := []error{
		positive(EnvStartupTimeout, c.Postgres.StartupTimeout),
		hostPort(EnvGRPCAddr, c.GRPC.Addr),
		hostPort(EnvHTTPAddr, c.HTTP.Addr),
		oneOf(EnvLogLevel, c.Log.Level, "debug", "info", "warn", "error"),
		oneOf(EnvLogFormat, c.Log.Format, "json", "console"),
		nonNegative(EnvShutdownDelay, c.Shutdown.Delay),
		positive(EnvShutdownGrace, c.Shutdown.Grace),
		nodeID(c.Cluster.NodeID),
		positive(EnvHeartbeatInterval, c.Cluster.HeartbeatInterval),
		hostPort(EnvEndpoint, c.Cluster.Endpoint),
	}
	checks = append(checks, positive(EnvAuthCacheTTL, c.Auth.CacheTTL))
	if c.Auth.BootstrapToken != "" && auth.ParseToken(c.Auth.BootstrapToken) != nil {
		checks = append(checks, fmt.Errorf("%s: not a Switchboard token (create one with `switchboard token generate`)", EnvBootstrapToken))
	}
	if !strings.Contains(c.Auth.BootstrapEmail, "@") {
		checks = append(checks, fmt.Errorf("%s: %q is not an email address", EnvBootstrapEmail, c.Auth.BootstrapEmail))
	}
	checks = append(checks, c.Realtime.validate(), c.TLS.validate())
	checks = append(checks, c.HTTPLimits.validate(), c.Metrics.validate(c.HTTP.Addr), c.Pprof.validate(c.HTTP.Addr, c.Metrics.Addr))
	checks = append(checks, c.Gateway.validate(), c.Cluster.validateHTTPEndpoint(), c.MCP.validate())
	if err := firstError(checks); err != nil {
		return err
	}
	if c.Cluster.StaleThreshold < 2*c.Cluster.HeartbeatInterval {
		return fmt.Errorf("%s: must be at least twice %s (%s), got %s",
			EnvStaleThreshold, EnvHeartbeatInterval, c.Cluster.HeartbeatInterval, c.Cluster.StaleThreshold)
	}
	return nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type parser struct {
	lookup func(string) (string, bool)
	err    error
}

func (p *parser) get(name string) (string, bool) {
	v, ok := p.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return strings.TrimSpace(v), true
}

// parse converts name's value with conv when the variable is set and no
// earlier one failed, so each typed reader says only how it converts and
// how it words a bad value; a conv error becomes p.err through fail (given
// the raw value), and ok is false then as when the variable is unset.
func parse[T any](p *parser, name string, conv func(string) (T, error), fail func(v string, err error) error) (x T, ok bool) {
	v, ok := p.get(name)
	if !ok || p.err != nil {
		return x, false
	}
	x, err := conv(v)
	if err != nil {
		p.err = fail(v, err)
		return x, false
	}
	return x, true
}

func (p *parser) str(name string, dst *string) {
	if v, ok := p.get(name); ok {
		*dst = v
	}
}

func (p *parser) duration(name string, dst *time.Duration) {
	if d, ok := parse(p, name, time.ParseDuration, func(v string, _ error) error {
		return fmt.Errorf("%s: %q is not a duration (examples: 500ms, 10s, 2m)", name, v)
	}); ok {
		*dst = d
	}
}

// secretKey decodes base64 (standard or URL alphabet, padded or not).
func (p *parser) secretKey(name string, dst *Auth) {
	v, ok := p.get(name)
	if !ok || p.err != nil {
		return
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			if len(b) < 32 {
				p.err = fmt.Errorf("%s: must decode to at least 32 bytes, got %d (try: openssl rand -base64 32)", name, len(b))
				return
			}
			dst.SecretKey, dst.DevSecretKey = b, false
			return
		}
	}
	p.err = fmt.Errorf("%s: not base64 (try: openssl rand -base64 32)", name)
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s: must be greater than zero, got %s", name, d)
	}
	return nil
}

func nonNegative(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s: must not be negative, got %s", name, d)
	}
	return nil
}

func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s: must be one of %s, got %q", name, strings.Join(allowed, ", "), v)
}

func hostPort(name, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q is not host:port", name, addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s: %q has an invalid port", name, addr)
	}
	return nil
}

func nodeID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%s: must be 1 to 128 characters, got %d", EnvNodeID, len(id))
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%s: must not contain spaces or control characters, got %q", EnvNodeID, id)
		}
	}
	return nil
}

// defaultNodeID is hostname-PID, as the registry design suggests: unique per
// process, and readable in the cluster view.
func defaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// advertised turns a listen address into one peers can dial: a wildcard host
// becomes this machine's hostname.
func advertised(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}
