package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/services/node"
)

const serveAbout = `Runs a node: the services named (default all: registry, queue, ingest, realtime,
admin, gateway) on the gRPC and HTTP listeners, after applying the embedded migrations.
Configuration comes from environment variables (SWITCHBOARD_GRPC_ADDR, SWITCHBOARD_HTTP_ADDR,
DATABASE_URL, …; see the README). Stops cleanly on SIGTERM or SIGINT.`

func serve(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	c := newCommand("serve", "switchboard serve [--announce] [all | SERVICE[,SERVICE...]]", serveAbout)
	announce := c.fs.Bool("announce", false,
		"print the node's gRPC and HTTP addresses, and how to call them, to stdout once it reports SERVING")
	pos, help, err := c.parse(args, stdout)
	if help || err != nil {
		return err
	}
	spec := "all"
	switch len(pos) {
	case 0:
	case 1:
		spec = pos[0]
	default:
		return usageErr("serve takes one list of services, got %d arguments", len(pos))
	}
	services, err := node.ParseServices(spec)
	if err != nil {
		return &UsageError{msg: err.Error()}
	}
	tuneGC(lookup)
	cfg, err := config.Load(lookup)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log, err := logging.New(cfg.Log.Level, cfg.Log.Format)
	if err != nil {
		return fmt.Errorf("logger: %w", err)
	}
	defer func() { _ = log.Sync() }()
	n, err := node.New(ctx, cfg, log, services)
	if err != nil {
		return fmt.Errorf("build node: %w", err)
	}
	if *announce {
		ran := make(chan struct{})
		defer close(ran)
		go func() {
			select {
			case <-n.Served():
				_, _ = io.WriteString(stdout, banner(n.GRPCAddr(), n.HTTPAddr(), cfg.TLS.CertFile != ""))
			case <-ran:
			}
		}()
	}
	if err := n.Run(ctx); err != nil {
		return fmt.Errorf("run node: %w", err)
	}
	log.Info("stopped cleanly")
	return nil
}

// banner says where a serving node answers, as commands to paste.
func banner(grpcAddr, httpAddr string, tls bool) string {
	grpcurl, scheme := "grpcurl -plaintext", "http"
	if tls {
		grpcurl, scheme = "grpcurl -cacert CA.pem", "https"
	}
	return fmt.Sprintf(`
  Switchboard is serving.
  gRPC        %[1]s      (%[3]s %[1]s list)
  HTTP        %[4]s://%[2]s   (curl %[4]s://%[2]s/health)
  Console     %[4]s://%[2]s/   (sign in with a token, e.g. make run's)
  MCP         %[4]s://%[2]s/mcp
`, grpcAddr, httpAddr, grpcurl, scheme)
}
