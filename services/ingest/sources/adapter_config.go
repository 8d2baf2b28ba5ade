package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
)

// rowConfig is a config as an adapter row stores it.
type rowConfig struct {
	raw json.RawMessage
	// sourceKey names the stream a pull adapter reads
	// (redisstream.StoredConfig.SourceKey); nil for a push adapter.
	sourceKey *string
	// addrKeys name it at each address its addr reaches now
	// (redisstream.StoredConfig.AddrKeys); nil when the config is not
	// being set (the stored keys stay).
	addrKeys []string
}

// adapterConfig validates a config for kind and returns what to store: {}
// for WEBHOOK; for REDIS_STREAM every field with its default filled, the
// addr normalized and allowed by the operator's allow list, its source key
// and the keys of the addresses it reaches.
func (s *Store) adapterConfig(ctx context.Context, kind string, cfg map[string]any) (rowConfig, error) {
	switch kind {
	case KindWebhook:
		if len(cfg) > 0 {
			return rowConfig{}, invalid("adapter.config", "must be empty for ADAPTER_KIND_WEBHOOK")
		}
		return rowConfig{raw: json.RawMessage(`{}`)}, nil
	case KindRedisStream:
		c, violations := redisstream.ParseStored(cfg)
		if len(violations) > 0 {
			for i := range violations {
				violations[i].Field = "adapter.config." + violations[i].Field
			}
			return rowConfig{}, apierr.Invalid(violations...)
		}
		reach, err := s.allowed(ctx, c.Addr)
		if err != nil {
			return rowConfig{}, err
		}
		rc, err := redisConfig(c)
		rc.addrKeys = c.AddrKeys(reach)
		return rc, err
	}
	return rowConfig{}, fmt.Errorf("sources: unknown adapter kind %q", kind)
}

// storedConfig is the stored config of an adapter whose config an update
// leaves alone, with its source key recomputed (so a row stored before
// keys were normalized gets the key its config has now).
func storedConfig(kind string, raw json.RawMessage) (*rowConfig, error) {
	if kind != KindRedisStream {
		return &rowConfig{raw: raw}, nil
	}
	var c redisstream.StoredConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("sources: stored redis_stream config: %w", err)
	}
	key := c.SourceKey()
	return &rowConfig{raw: raw, sourceKey: &key}, nil
}

func redisConfig(c redisstream.StoredConfig) (rowConfig, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return rowConfig{}, fmt.Errorf("marshal adapter config: %w", err)
	}
	key := c.SourceKey()
	return rowConfig{raw: raw, sourceKey: &key}, nil
}

// allowed answers the allow list's create-time check for addr as the
// client should see it, and returns the addresses addr reaches now
// (adapter.Allowlist.Reach): what ownership of the stream is compared on.
func (s *Store) allowed(ctx context.Context, addr string) ([]netip.AddrPort, error) {
	reach, err := s.allow.Reach(ctx, addr)
	var refused *adapter.RefusedError
	var unresolved *adapter.ResolveError
	switch {
	case err == nil:
		return reach, nil
	case errors.As(err, &refused):
		return nil, invalid("adapter.config.addr", refused.Error())
	case errors.As(err, &unresolved) && unresolved.NotFound:
		return nil, invalid("adapter.config.addr", fmt.Sprintf("%s: %s, so %s cannot allow it", addr, unresolved, adapter.PolicyName))
	case errors.As(err, &unresolved):
		return nil, apierr.Unavailable("adapter.config.addr: %s: %s; try again", addr, unresolved)
	}
	return nil, fmt.Errorf("sources: check adapter addr: %w", err)
}
