// Package node assembles one Switchboard process: the gRPC server with the
// selected services, the HTTP edge, the Postgres pool and migrations, and
// readiness, all under one lifecycle group. It is what `switchboard serve`
// runs; tests run it in-process the same way.
package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/httpserver"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/gateway/dashboard"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
)

// maxReadinessInterval caps how often a node re-checks Postgres and the
// schema; with a faster heartbeat it checks as often as it heartbeats.
const maxReadinessInterval = 5 * time.Second

// Node is a built, not yet running, Switchboard process.
type Node struct {
	cfg   config.Config
	log   *zap.Logger
	grpc  *grpcserver.Server
	http  *httpserver.Server
	group *lifecycle.Group
}

// New wires a node running services (see ParseServices). It binds both
// listeners, so a busy port fails here, but starts nothing: Run does.
func New(ctx context.Context, cfg config.Config, log *zap.Logger, services []string) (n *Node, err error) {
	log = log.With(sblog.NodeID(cfg.Cluster.NodeID))
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()

	pool, err := newPool(ctx, cfg, false)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { pool.Close(); return nil })
	var hot *pgxpool.Pool // the queue's worker statements and ingest's write; see newPool
	if slices.Contains(services, queue.Name) || slices.Contains(services, ingest.Name) {
		if hot, err = newPool(ctx, cfg, true); err != nil {
			return nil, err
		}
		closers = append(closers, func() error { hot.Close(); return nil })
	}

	if cfg.Auth.DevSecretKey {
		log.Warn("SWITCHBOARD_SECRET_KEY is not set: using the public development key; set one in production " +
			"(tokens minted under one key do not verify under another)")
	}
	if cfg.Ingest.DevSealingKeys {
		log.Warn(config.EnvSealingKeys + " is not set: webhook secrets are sealed with the public development keyring; " +
			"set one in production (secrets sealed under one keyring do not open under another)")
	}
	hasher := auth.NewHasher(cfg.Auth.SecretKey)
	authStore := auth.NewStore(pool, hasher)
	authn := auth.NewAuthenticator(log, authStore, hasher, cfg.Auth.CacheTTL)
	gs, err := grpcserver.New(ctx, log, grpcserver.Options{
		Addr: cfg.GRPC.Addr, ShutdownDelay: cfg.Shutdown.Delay, Authorize: authn.Authorize,
	})
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { return gs.Stop(ctx) })
	if cfg.Cluster.Endpoint == cfg.GRPC.Addr {
		// ":0" in tests: advertise the port actually bound.
		cfg.Cluster.Endpoint = gs.Addr()
	}

	h := &health{grpc: gs}
	h.readiness = postgres.NewReadiness(log, pool, min(maxReadinessInterval, cfg.Cluster.HeartbeatInterval), h.update)
	h.member = cluster.NewMember(log, pool, cluster.Options{
		NodeID:         cfg.Cluster.NodeID,
		Endpoint:       cfg.Cluster.Endpoint,
		Services:       services,
		Version:        buildinfo.Get().Version,
		Interval:       cfg.Cluster.HeartbeatInterval,
		StaleThreshold: cfg.Cluster.StaleThreshold,
		Stats:          func() map[string]any { return map[string]any{"open_streams": gs.OpenStreams()} },
		OnChange:       h.update,
	})
	reg, err := registerServices(gs, log, pools{main: pool, hot: hot}, cfg, services, h, authStore)
	if err != nil {
		return nil, err
	}
	background := reg.background

	mux := http.NewServeMux()
	var onClosed []func() error
	if slices.Contains(services, gateway.Name) {
		upstream := cfg.Gateway.Upstream
		if upstream == "" {
			upstream = gs.Addr()
		}
		gw, err := gateway.New(ctx, upstream)
		if err != nil {
			return nil, err
		}
		closers = append(closers, gw.Close)
		onClosed = append(onClosed, gw.Close)
		mux.Handle("/", gw.Handler())
		// The admin dashboard: "/" exactly and its assets; every other path
		// is a gateway route.
		dash := dashboard.Handler()
		mux.Handle("/{$}", dash)
		mux.Handle(dashboard.AssetPrefix, dash)
	}
	if reg.hooks != nil {
		mux.Handle(ingest.HookPattern, reg.hooks)
	}
	hs, err := httpserver.New(ctx, log, cfg.HTTP.Addr, mux, onClosed...)
	if err != nil {
		return nil, err
	}

	migrate := lifecycle.Func{ComponentName: "migrate", OnStart: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, cfg.Postgres.StartupTimeout)
		defer cancel()
		if err := postgres.WaitReachable(ctx, log, pool); err != nil {
			return err
		}
		applied, err := postgres.Migrate(ctx, pool)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		log.Info("schema current", zap.Int("migrations_applied", applied))
		if cfg.Auth.BootstrapToken != "" {
			err := authStore.Bootstrap(ctx, cfg.Auth.BootstrapEmail, "bootstrap (SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN)", cfg.Auth.BootstrapToken)
			if err != nil {
				return fmt.Errorf("bootstrap admin credential: %w", err)
			}
		}
		return nil
	}}
	// Start order; Stop runs in reverse. The pool closes last so in-flight
	// RPCs drain with it open; "drain" stops first so health flips to
	// NOT_SERVING and streams end before anything else goes away; membership
	// deregisters early in shutdown so peers see this node leave at once.
	components := []lifecycle.Component{
		lifecycle.Func{ComponentName: "postgres", OnStop: func(context.Context) error {
			if hot != nil {
				hot.Close()
			}
			pool.Close()
			return nil
		}},
		gs, // serves health (NOT_SERVING) while the node migrates
		migrate,
		h.member, // registered before it reports SERVING
		h.readiness,
		hs,
		lifecycle.Func{ComponentName: "drain", OnStop: func(ctx context.Context) error {
			h.drain()
			return gs.Drain(ctx)
		}},
	}
	// The node's notifier (one listen connection, one sender, shared by the
	// queue and realtime) starts before the services' background loops and
	// stops after them, so none of them runs without it.
	if reg.notifier != nil {
		components = append(components, reg.notifier)
	}
	// Services' background loops (the queue's wake-ups, reaper, retention)
	// start after migration and stop first: waking long-poll Claims before
	// the drain lets them return instead of holding the drain up.
	group := lifecycle.NewGroup(log, append(components, background...)...)
	log.Info("node built", zap.Strings("services", services))
	return &Node{cfg: cfg, log: log, grpc: gs, http: hs, group: group}, nil
}

// Run starts the node and blocks until ctx is done (clean shutdown, nil) or a
// component fails. Shutdown takes at most the configured grace period, plus
// the shutdown delay.
func (n *Node) Run(ctx context.Context) error {
	err := n.group.Run(ctx, n.cfg.Shutdown.Delay+n.cfg.Shutdown.Grace)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // interrupted while starting: a clean exit
	}
	return err
}

// GRPCAddr is the bound gRPC address.
func (n *Node) GRPCAddr() string { return n.grpc.Addr() }

// HTTPAddr is the bound HTTP address.
func (n *Node) HTTPAddr() string { return n.http.Addr() }

// newPool opens a pool on DATABASE_URL. hot is the pool for the statements
// every worker or event runs (claim, complete, heartbeat, enqueue, ingest's
// event write): its
// sessions use plan_cache_mode=force_generic_plan. PostgreSQL otherwise
// re-plans them on every execution (their custom plans always look cheaper,
// because they see the batch size), and planning was a sixth of each
// claim's cost; their generic plans are pinned by a test in the queue's
// store. Everything else keeps PostgreSQL's default on the main pool.
func newPool(ctx context.Context, cfg config.Config, hot bool) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.Postgres.URL)
	if err != nil {
		return nil, errors.New(config.EnvDatabaseURL + ": cannot be parsed as a connection string")
	}
	// pgxpool's default (max(4, CPUs)) starves a node serving hundreds of
	// workers; pool_max_conns in DATABASE_URL still wins (for each pool).
	if !strings.Contains(cfg.Postgres.URL, "pool_max_conns") {
		pc.MaxConns = int32(max(16, 4*runtime.NumCPU()))
		if hot {
			pc.MaxConns = int32(max(8, 2*runtime.NumCPU()))
		}
	}
	pc.ConnConfig.RuntimeParams["application_name"] = "switchboard/" + cfg.Cluster.NodeID
	if hot {
		pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	postgres.ConfigurePool(pc)
	return pgxpool.NewWithConfig(ctx, pc)
}
