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
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// maxReadinessInterval caps how often a node re-checks Postgres and the
// schema; with a faster heartbeat it checks as often as it heartbeats.
const maxReadinessInterval = 5 * time.Second

// buildCore builds what every node runs: the pools, the gRPC server with the
// auth interceptor, membership, readiness and health, and migrations.
func (a *assembly) buildCore() error {
	cfg, log := a.cfg, a.log
	var err error
	if a.pool, err = newPool(a.ctx, cfg, false); err != nil {
		return err
	}
	a.closers = append(a.closers, func() error { a.pool.Close(); return nil })
	a.hotPool = a.pool
	if a.hot {
		if a.hotPool, err = newPool(a.ctx, cfg, true); err != nil {
			return err
		}
		a.closers = append(a.closers, func() error { a.hotPool.Close(); return nil })
	}
	if cfg.Auth.DevSecretKey {
		log.Warn("SWITCHBOARD_SECRET_KEY is not set: using the public development key; set one in production " +
			"(tokens minted under one key do not verify under another)")
	}
	if cfg.Ingest.DevSealingKeys {
		log.Warn(config.EnvSealingKeys + " is not set: webhook secrets are sealed with the public development keyring; " +
			"set one in production (secrets sealed under one keyring do not open under another)")
	}
	if err := a.buildTLS(); err != nil {
		return err
	}
	a.newMetrics()
	hasher := auth.NewHasher(cfg.Auth.SecretKey)
	a.identity = auth.NewStore(a.pool, hasher)
	a.authn = auth.NewAuthenticator(log, a.identity, hasher, cfg.Auth.CacheTTL)
	gs, err := grpcserver.New(a.ctx, log, grpcserver.Options{
		Addr: cfg.GRPC.Addr, ShutdownDelay: cfg.Shutdown.Delay,
		Authorize: a.authn.Authorize, AuthorizeStream: a.authn.AuthorizeStream,
		TLS: a.tls.grpcServerTLS(), LimitStreams: streamLimiter(log, a.pool).Intercept,
		StatsHandler: a.tracing.GRPCServerHandler(),
		Metrics:      a.metrics.Registerer(),
	})
	if err != nil {
		return err
	}
	a.grpc = gs
	a.closers = append(a.closers, func() error { return gs.Stop(context.WithoutCancel(a.ctx)) })
	if a.cfg.Cluster.Endpoint == cfg.GRPC.Addr {
		// ":0" in tests: advertise the port actually bound.
		a.cfg.Cluster.Endpoint = gs.Addr()
	}
	a.mux = http.NewServeMux()
	if err := a.routeMetrics(); err != nil {
		return err
	}
	if err := a.routePprof(); err != nil {
		return err
	}

	h := &health{grpc: gs, served: make(chan struct{})}
	a.health = h
	h.readiness = postgres.NewReadiness(log, a.pool, min(maxReadinessInterval, cfg.Cluster.HeartbeatInterval), h.update)
	mo := cluster.Options{
		NodeID:         cfg.Cluster.NodeID,
		Endpoint:       a.cfg.Cluster.Endpoint,
		Services:       a.services,
		Version:        buildinfo.Get().Version,
		Interval:       cfg.Cluster.HeartbeatInterval,
		StaleThreshold: cfg.Cluster.StaleThreshold,
		Stats: func() map[string]any {
			return map[string]any{"open_streams": gs.OpenStreams(), cluster.StatHTTPEndpoint: a.httpEndpoint()}
		},
		OnChange: h.update,
	}
	a.memberMetrics(&mo)
	h.member = cluster.NewMember(log, a.pool, mo)
	a.core = []lifecycle.Component{
		lifecycle.Func{ComponentName: "postgres", OnStop: func(context.Context) error {
			if a.hotPool != a.pool {
				a.hotPool.Close()
			}
			a.pool.Close()
			return nil
		}},
		// Stops after the servers drained, before the pools close: the
		// token cache's background refreshes use the pool.
		lifecycle.Func{ComponentName: "auth-refresh", OnStop: a.authn.Close},
		// Ends the open streams of credentials that stopped verifying;
		// stops before the refreshes it starts are waited for.
		lifecycle.NewLoop("auth-streams", auth.StreamCheckInterval(cfg.Auth.CacheTTL), a.authn.CheckStreams),
		// Serves health (NOT_SERVING) while the node migrates. It stops
		// gracefully as "grpc-drain", late in start order (see components);
		// by its own Stop there is nothing left to stop.
		gs,
		lifecycle.Func{ComponentName: "migrate", OnStart: a.migrate},
		h.member, // registered before it reports SERVING
		h.readiness,
	}
	if a.metricsHTTP != nil {
		// Scraped from the start to the end: it stops just before the pools.
		a.core = slices.Insert(a.core, 1, lifecycle.Component(a.metricsHTTP))
	}
	if a.pprofHTTP != nil {
		a.core = slices.Insert(a.core, 1, lifecycle.Component(a.pprofHTTP))
	}
	return nil
}

// migrate waits for Postgres, applies the embedded migrations (under goose's
// advisory lock, so nodes may boot together) and stores the bootstrap
// administrator token.
func (a *assembly) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Postgres.StartupTimeout)
	defer cancel()
	if err := postgres.WaitReachable(ctx, a.log, a.pool); err != nil {
		return err
	}
	applied, err := postgres.Migrate(ctx, a.pool)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	a.log.Info("schema current", zap.Int("migrations_applied", applied))
	if a.cfg.Auth.BootstrapToken != "" {
		err := a.identity.Bootstrap(ctx, a.cfg.Auth.BootstrapEmail, "bootstrap (SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN)", a.cfg.Auth.BootstrapToken)
		if errors.Is(err, auth.ErrNotAdministrator) {
			return fmt.Errorf("%s: %w (to promote it knowingly: switchboard token create --admin --promote --email %s)",
				config.EnvBootstrapEmail, err, a.cfg.Auth.BootstrapEmail)
		}
		if err != nil {
			return fmt.Errorf("bootstrap admin credential: %w", err)
		}
	}
	return nil
}

// newPool opens a pool on DATABASE_URL. hot is the pool for the statements
// every worker or event runs (claim, complete, heartbeat, enqueue, ingest's
// event write): its sessions use plan_cache_mode=force_generic_plan.
// PostgreSQL otherwise re-plans them on every execution (their custom plans
// always look cheaper, because they see the batch size), and planning was a
// sixth of each claim's cost; their generic plans are pinned by a test in
// the queue's store. Everything else keeps PostgreSQL's default on the main
// pool. Which modules want it is their `hot` in the module table.
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
