package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// Adapter kinds and their names in adapters.kind.
const (
	kindWebhook     = "webhook"
	kindRedisStream = "redis_stream"
)

var kindNames = map[adminv1.AdapterKind]string{
	adminv1.AdapterKind_ADAPTER_KIND_WEBHOOK:      kindWebhook,
	adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM: kindRedisStream,
}

// kindEnum is the inverse of kindNames.
func kindEnum(name string) adminv1.AdapterKind {
	for k, v := range kindNames {
		if v == name {
			return k
		}
	}
	return adminv1.AdapterKind_ADAPTER_KIND_UNSPECIFIED
}

// adapterFields are UpdateAdapterRequest.update_mask's allowed paths.
var adapterFields = []string{"name", "config", "endpoint_id", "agent_id", "queue", "enabled", "cursor"}

// Redis Streams config limits and defaults.
const (
	maxConfigString      = 255
	defaultGroup         = "switchboard"
	defaultStart         = "$"
	defaultBodyField     = "body"
	defaultMaxDeliveries = 5
	defaultBatchSize     = 100
	maxRedisDB           = 15
	maxDeliveriesLimit   = 1000
	maxBatchSize         = 1000
	maxCursorLen         = 255
)

// CreateAdapter adds a push or pull adapter for a human (the caller's own
// when adapter.human_id is empty; only an administrator may name another).
// Its agent and endpoint must be that human's.
func (s *Server) CreateAdapter(ctx context.Context, req *adminv1.CreateAdapterRequest) (*adminv1.CreateAdapterResponse, error) {
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetAdapter()
	if in == nil {
		return nil, invalid("adapter", "is required")
	}
	humanID := p.HumanID
	if in.GetHumanId() != "" {
		if humanID, err = parseID("adapter.human_id", in.GetHumanId()); err != nil {
			return nil, err
		}
	}
	kind, ok := kindNames[in.GetKind()]
	if !ok {
		return nil, invalid("adapter.kind", "is required (a defined kind other than UNSPECIFIED)")
	}
	if in.GetName() == "" {
		return nil, invalid("adapter.name", "is required")
	}
	if in.GetQueue() == "" {
		return nil, invalid("adapter.queue", "is required")
	}
	f := store.AdapterFields{Name: in.GetName(), Queue: in.GetQueue(), Enabled: in.Enabled == nil || in.GetEnabled()}
	if f.AgentID, err = parseOptionalID("adapter.agent_id", in.GetAgentId()); err != nil {
		return nil, err
	}
	if f.EndpointID, err = parseOptionalID("adapter.endpoint_id", in.GetEndpointId()); err != nil {
		return nil, err
	}
	if f.Config, err = adapterConfig(kind, in.GetConfig()); err != nil {
		return nil, err
	}
	if err := checkAdapter(kind, f); err != nil {
		return nil, err
	}
	a, err := s.store.CreateAdapter(ctx, t, humanID, kind, f)
	if err != nil {
		return nil, err
	}
	out, err := adapterProto(a)
	if err != nil {
		return nil, err
	}
	return &adminv1.CreateAdapterResponse{Adapter: out}, nil
}

// GetAdapter returns one adapter of a human the caller may act for.
func (s *Server) GetAdapter(ctx context.Context, req *adminv1.GetAdapterRequest) (*adminv1.GetAdapterResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	a, err := s.store.GetAdapter(ctx, t, id)
	if err != nil {
		return nil, err
	}
	out, err := adapterProto(a)
	if err != nil {
		return nil, err
	}
	return &adminv1.GetAdapterResponse{Adapter: out}, nil
}

// ListAdapters lists adapters oldest first. An empty human_id means the
// caller's own human, or every human for an administrator; a
// non-administrator naming another human gets an empty page.
func (s *Server) ListAdapters(ctx context.Context, req *adminv1.ListAdaptersRequest) (*adminv1.ListAdaptersResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	humanID, err := parseOptionalID("human_id", req.GetHumanId())
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	scope := "adapters|" + idString(humanID)
	after, err := decodePageToken(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListAdapters(ctx, t, humanID, after, limit+1)
	if err != nil {
		return nil, err
	}
	rows, next := page(rows, limit, scope, func(a store.Adapter) (time.Time, uuid.UUID) { return a.CreatedAt, a.ID })
	out := &adminv1.ListAdaptersResponse{Adapters: make([]*adminv1.Adapter, len(rows)), NextPageToken: next}
	for i, a := range rows {
		if out.Adapters[i], err = adapterProto(a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpdateAdapter changes the fields named in update_mask of an adapter of a
// human the caller may act for. kind and human_id never change; config and
// endpoint_id are checked against the stored kind.
func (s *Server) UpdateAdapter(ctx context.Context, req *adminv1.UpdateAdapterRequest) (*adminv1.UpdateAdapterResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetAdapter()
	id, err := parseID("adapter.id", in.GetId())
	if err != nil {
		return nil, err
	}
	fields, err := updateFields(req.GetUpdateMask(), adapterFields, []string{"config"}, slices.Concat(
		presentIf(in.GetName() != "", "name"),
		presentIf(in.GetConfig() != nil, "config"),
		presentIf(in.GetEndpointId() != "", "endpoint_id"),
		presentIf(in.GetAgentId() != "", "agent_id"),
		presentIf(in.GetQueue() != "", "queue"),
		presentIf(in.Enabled != nil, "enabled"),
		presentIf(in.GetCursor() != "", "cursor"),
	))
	if err != nil {
		return nil, err
	}
	// Everything that does not depend on the stored row is checked before
	// the transaction starts.
	var agentID, endpointID *uuid.UUID
	if fields["agent_id"] {
		if agentID, err = parseOptionalID("adapter.agent_id", in.GetAgentId()); err != nil {
			return nil, err
		}
	}
	if fields["endpoint_id"] {
		if endpointID, err = parseOptionalID("adapter.endpoint_id", in.GetEndpointId()); err != nil {
			return nil, err
		}
	}
	if fields["name"] && in.GetName() == "" {
		return nil, invalid("adapter.name", "is required")
	}
	if fields["queue"] && in.GetQueue() == "" {
		return nil, invalid("adapter.queue", "is required")
	}
	var a store.Adapter
	if len(fields) == 0 {
		a, err = s.store.GetAdapter(ctx, t, id)
	} else {
		a, err = s.store.UpdateAdapter(ctx, t, id, func(cur store.Adapter) (store.AdapterFields, error) {
			f := cur.AdapterFields
			if fields["name"] {
				f.Name = in.GetName()
			}
			if fields["config"] {
				// Named but unset is an empty config: valid for WEBHOOK only.
				var err error
				if f.Config, err = adapterConfig(cur.Kind, in.GetConfig()); err != nil {
					return f, err
				}
			}
			if fields["endpoint_id"] {
				f.EndpointID = endpointID
			}
			if fields["agent_id"] {
				f.AgentID = agentID
			}
			if fields["queue"] {
				f.Queue = in.GetQueue()
			}
			if fields["enabled"] {
				f.Enabled = in.GetEnabled()
			}
			if fields["cursor"] {
				f.Cursor = optionalString(in.GetCursor())
			}
			return f, checkAdapter(cur.Kind, f)
		})
	}
	if err != nil {
		return nil, err
	}
	out, err := adapterProto(a)
	if err != nil {
		return nil, err
	}
	return &adminv1.UpdateAdapterResponse{Adapter: out}, nil
}

// DeleteAdapter deletes an adapter of a human the caller may act for; a
// pull adapter stops polling, stored events keep existing without it.
func (s *Server) DeleteAdapter(ctx context.Context, req *adminv1.DeleteAdapterRequest) (*adminv1.DeleteAdapterResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteAdapter(ctx, t, id); err != nil {
		return nil, err
	}
	return &adminv1.DeleteAdapterResponse{}, nil
}

// checkAdapter checks the merged fields of a created or updated adapter of
// kind: the contract's rules (protovalidate runs them in the interceptor
// too) and those that depend on the kind.
func checkAdapter(kind string, f store.AdapterFields) error {
	switch {
	case !queuePattern(f.Name):
		return invalid("adapter.name", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case !queuePattern(f.Queue):
		return invalid("adapter.queue", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case kind == kindWebhook && f.EndpointID == nil:
		return invalid("adapter.endpoint_id", "is required for ADAPTER_KIND_WEBHOOK")
	case kind == kindRedisStream && f.EndpointID != nil:
		return invalid("adapter.endpoint_id", "must be empty for ADAPTER_KIND_REDIS_STREAM")
	case f.Cursor != nil && kind == kindWebhook:
		return invalid("adapter.cursor", "must be empty for ADAPTER_KIND_WEBHOOK")
	case f.Cursor != nil && (utf8.RuneCountInString(*f.Cursor) > maxCursorLen || !utf8.ValidString(*f.Cursor)):
		return invalid("adapter.cursor", "must be at most 255 characters of valid UTF-8")
	}
	return nil
}

// adapterConfig validates a config for kind and returns the normalized JSON
// object to store: {} for WEBHOOK, every field with its default filled for
// REDIS_STREAM.
func adapterConfig(kind string, cfg *structpb.Struct) (json.RawMessage, error) {
	switch kind {
	case kindWebhook:
		if len(cfg.GetFields()) > 0 {
			return nil, invalid("adapter.config", "must be empty for ADAPTER_KIND_WEBHOOK")
		}
		return json.RawMessage(`{}`), nil
	case kindRedisStream:
		norm, err := redisStreamConfig(cfg.GetFields())
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(norm)
		if err != nil {
			return nil, fmt.Errorf("marshal adapter config: %w", err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("admin: unknown adapter kind %q", kind)
}

// configChecker collects the violations of one config, in key order.
type configChecker struct {
	fields     map[string]*structpb.Value
	violations []apierr.FieldViolation
}

func (c *configChecker) fail(key, description string) {
	c.violations = append(c.violations, apierr.FieldViolation{Field: "adapter.config." + key, Description: description})
}

// str returns the string at key (def when absent), 1–255 characters unless
// allowEmpty, at most 255 either way.
func (c *configChecker) str(key, def string, required, allowEmpty bool) string {
	v, ok := c.fields[key]
	if !ok {
		if required {
			c.fail(key, "is required")
		}
		return def
	}
	sv, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		c.fail(key, "must be a string")
		return def
	}
	s := sv.StringValue
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		c.fail(key, "must be valid UTF-8")
	case n == 0 && !allowEmpty:
		c.fail(key, "must not be empty")
	case n > maxConfigString:
		c.fail(key, "must be at most 255 characters")
	}
	return s
}

// integer returns the whole number at key (def when absent) within lo–hi.
func (c *configChecker) integer(key string, def, lo, hi int) int {
	v, ok := c.fields[key]
	if !ok {
		return def
	}
	nv, ok := v.GetKind().(*structpb.Value_NumberValue)
	if !ok {
		c.fail(key, "must be an integer")
		return def
	}
	n := nv.NumberValue
	if math.IsNaN(n) || math.IsInf(n, 0) || n != math.Trunc(n) {
		c.fail(key, "must be an integer")
		return def
	}
	if n < float64(lo) || n > float64(hi) {
		c.fail(key, fmt.Sprintf("must be between %d and %d", lo, hi))
		return def
	}
	return int(n)
}

// redisStreamKeys are the REDIS_STREAM config's keys.
var redisStreamKeys = []string{
	"addr", "stream", "group", "start", "db", "username", "body_field", "max_deliveries", "batch_size",
}

// redisStreamConfig validates a REDIS_STREAM config field by field and
// returns it with defaults filled. Passwords are refused: config is stored
// and returned verbatim, so it must never hold a secret in clear.
func redisStreamConfig(fields map[string]*structpb.Value) (map[string]any, error) {
	c := &configChecker{fields: fields}
	unknown := make([]string, 0)
	for k := range fields {
		if !slices.Contains(redisStreamKeys, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if k == "password" {
			c.fail(k, "passwords are not supported yet: they would be stored in clear")
		} else {
			c.fail(k, "is not a known key; allowed: addr, stream, group, start, db, username, body_field, max_deliveries, batch_size")
		}
	}
	out := map[string]any{}
	addr := c.str("addr", "", true, false)
	if addr != "" && utf8.RuneCountInString(addr) <= maxConfigString {
		if host, port, err := net.SplitHostPort(addr); err != nil || host == "" {
			c.fail("addr", `must be "host:port"`)
		} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			c.fail("addr", "must have a port between 1 and 65535")
		}
	}
	out["addr"] = addr
	out["stream"] = c.str("stream", "", true, false)
	out["group"] = c.str("group", defaultGroup, false, false)
	start := c.str("start", defaultStart, false, false)
	if _, isString := fields["start"].GetKind().(*structpb.Value_StringValue); isString && start != "" && start != "$" && start != "0" {
		c.fail("start", `must be "$" (new entries only) or "0" (the whole stream)`)
	}
	out["start"] = start
	out["db"] = c.integer("db", 0, 0, maxRedisDB)
	out["username"] = c.str("username", "", false, true)
	out["body_field"] = c.str("body_field", defaultBodyField, false, false)
	out["max_deliveries"] = c.integer("max_deliveries", defaultMaxDeliveries, 1, maxDeliveriesLimit)
	out["batch_size"] = c.integer("batch_size", defaultBatchSize, 1, maxBatchSize)
	if len(c.violations) > 0 {
		return nil, apierr.Invalid(c.violations...)
	}
	return out, nil
}

// adapterProto renders an adapter. The config column is a jsonb object
// (CHECK adapters_config_check), so the error is only for a corrupt row.
func adapterProto(a store.Adapter) (*adminv1.Adapter, error) {
	cfg := &structpb.Struct{}
	if err := protojson.Unmarshal(a.Config, cfg); err != nil {
		return nil, fmt.Errorf("adapter %s config: %w", a.ID, err)
	}
	return &adminv1.Adapter{
		Id:           a.ID.String(),
		HumanId:      a.HumanID.String(),
		Name:         a.Name,
		Kind:         kindEnum(a.Kind),
		Config:       cfg,
		EndpointId:   idString(a.EndpointID),
		AgentId:      idString(a.AgentID),
		Queue:        a.Queue,
		Enabled:      ptr(a.Enabled),
		Cursor:       derefString(a.Cursor),
		LastPolledAt: timestamp(a.LastPolledAt),
		LastError:    derefString(a.LastError),
		CreatedAt:    timestamp(&a.CreatedAt),
		UpdatedAt:    timestamp(&a.UpdatedAt),
	}, nil
}
