package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// adapterFields are UpdateAdapterRequest.update_mask's allowed paths.
var adapterFields = []string{"name", "config", "endpoint_id", "agent_id", "queue", "enabled", "cursor"}

// CreateAdapter adds a push or pull adapter for a human (the caller's own
// when adapter.human_id is empty; only an administrator may name another).
// Its agent and endpoint must be that human's.
func (s *Server) CreateAdapter(ctx context.Context, req *adminv1.CreateAdapterRequest) (*adminv1.CreateAdapterResponse, error) {
	in := req.GetAdapter()
	t, humanID, err := creator(ctx, "adapter.human_id", in.GetHumanId())
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("adapter", "is required")
	}
	kind, ok := sources.KindOf(in.GetKind())
	if !ok {
		return nil, invalid("adapter.kind", "is required (a defined kind other than UNSPECIFIED)")
	}
	f := sources.AdapterFields{Name: in.GetName(), Queue: in.GetQueue(), Enabled: in.Enabled == nil || in.GetEnabled()}
	if f.AgentID, err = parseOptionalID("adapter.agent_id", in.GetAgentId()); err != nil {
		return nil, err
	}
	if f.EndpointID, err = parseOptionalID("adapter.endpoint_id", in.GetEndpointId()); err != nil {
		return nil, err
	}
	a, err := s.sources.CreateAdapter(ctx, t, humanID, kind, f, in.GetConfig().AsMap())
	out, err := render(a, err, adapterProto)
	return apierr.Reply(&adminv1.CreateAdapterResponse{Adapter: out}, err)
}

// GetAdapter returns one adapter of a human the caller may act for.
func (s *Server) GetAdapter(ctx context.Context, req *adminv1.GetAdapterRequest) (*adminv1.GetAdapterResponse, error) {
	a, err := got(ctx, req.GetId(), s.sources.GetAdapter, adapterProto)
	return apierr.Reply(&adminv1.GetAdapterResponse{Adapter: a}, err)
}

// ListAdapters lists adapters oldest first. An empty human_id means the
// caller's own human, or every human for an administrator; a
// non-administrator naming another human gets an empty page.
func (s *Server) ListAdapters(ctx context.Context, req *adminv1.ListAdaptersRequest) (*adminv1.ListAdaptersResponse, error) {
	adapters, next, err := listOwned(ctx, req, "adapters", s.sources.ListAdapters, adapterProto)
	return apierr.Reply(&adminv1.ListAdaptersResponse{Adapters: adapters, NextPageToken: next}, err)
}

// UpdateAdapter changes the fields named in update_mask of an adapter of a
// human the caller may act for. kind and human_id never change; config and
// endpoint_id are checked against the stored kind.
func (s *Server) UpdateAdapter(ctx context.Context, req *adminv1.UpdateAdapterRequest) (*adminv1.UpdateAdapterResponse, error) {
	in := req.GetAdapter()
	up, err := updating(ctx, "adapter.id", in.GetId(), req.GetUpdateMask(), adapterFields, []string{"config"},
		presentIf(in.GetName() != "", "name"),
		presentIf(in.GetConfig() != nil, "config"),
		presentIf(in.GetEndpointId() != "", "endpoint_id"),
		presentIf(in.GetAgentId() != "", "agent_id"),
		presentIf(in.GetQueue() != "", "queue"),
		presentIf(in.Enabled != nil, "enabled"),
		presentIf(in.GetCursor() != "", "cursor"),
	)
	if err != nil {
		return nil, err
	}
	t, id, fields := up.t, up.id, up.fields
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
	// Named but unset is an empty config: valid for WEBHOOK only.
	u := sources.AdapterUpdate{SetConfig: fields["config"], Config: in.GetConfig().AsMap()}
	u.Apply = func(f *sources.AdapterFields) {
		set(fields, "name", &f.Name, in.GetName())
		set(fields, "endpoint_id", &f.EndpointID, endpointID)
		set(fields, "agent_id", &f.AgentID, agentID)
		set(fields, "queue", &f.Queue, in.GetQueue())
		set(fields, "enabled", &f.Enabled, in.GetEnabled())
		set(fields, "cursor", &f.Cursor, optionalString(in.GetCursor()))
	}
	a, err := unlessEmpty(ctx, t, id, fields, s.sources.GetAdapter, func() (sources.Adapter, error) {
		return s.sources.UpdateAdapter(ctx, t, id, u)
	})
	out, err := render(a, err, adapterProto)
	return apierr.Reply(&adminv1.UpdateAdapterResponse{Adapter: out}, err)
}

// DeleteAdapter deletes an adapter of a human the caller may act for; a
// pull adapter stops polling, stored events keep existing without it.
func (s *Server) DeleteAdapter(ctx context.Context, req *adminv1.DeleteAdapterRequest) (*adminv1.DeleteAdapterResponse, error) {
	return apierr.Reply(&adminv1.DeleteAdapterResponse{}, removed(ctx, req.GetId(), s.sources.DeleteAdapter))
}

// adapterProto renders an adapter. The config column is a jsonb object
// (CHECK adapters_config_check), so the error is only for a corrupt row.
func adapterProto(a sources.Adapter) (*adminv1.Adapter, error) {
	cfg := &structpb.Struct{}
	if err := protojson.Unmarshal(a.Config, cfg); err != nil {
		return nil, fmt.Errorf("adapter %s config: %w", a.ID, err)
	}
	return &adminv1.Adapter{
		Id:           a.ID.String(),
		HumanId:      a.HumanID.String(),
		Name:         a.Name,
		Kind:         sources.KindEnum(a.Kind),
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
