package cli

import (
	"context"
	"fmt"

	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/services/node"
)

func serve(ctx context.Context, spec string, lookup func(string) (string, bool)) error {
	services, err := node.ParseServices(spec)
	if err != nil {
		return &UsageError{msg: err.Error()}
	}
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
	if err := n.Run(ctx); err != nil {
		return fmt.Errorf("run node: %w", err)
	}
	log.Info("stopped cleanly")
	return nil
}
