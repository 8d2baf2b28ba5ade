package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
)

// maxMetadataBytes is Agent.metadata's limit, "at most 64 KiB serialized".
const maxMetadataBytes = 64 << 10

// agentFields are UpdateAgentRequest.update_mask's allowed paths.
var agentFields = []string{"name", "description", "metadata", "disabled_at"}

// CreateAgent adds an agent to a human: the caller's own when
// agent.human_id is empty; only an administrator may name another (for
// anyone else another human is NOT_FOUND, like an unknown one).
func (s *Server) CreateAgent(ctx context.Context, req *adminv1.CreateAgentRequest) (*adminv1.CreateAgentResponse, error) {
	in := req.GetAgent()
	t, humanID, err := creator(ctx, "agent.human_id", in.GetHumanId())
	if err != nil {
		return nil, err
	}
	if in.GetName() == "" {
		return nil, invalid("agent.name", "is required")
	}
	if err := prose("agent.description", in.GetDescription()); err != nil {
		return nil, err
	}
	meta, err := metadataJSON(in.GetMetadata())
	if err != nil {
		return nil, err
	}
	limits, err := s.tenantLimits(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.identity.CreateAgent(ctx, t, auth.NewAgent{HumanID: humanID, Name: in.GetName(), Description: in.GetDescription(), Metadata: meta},
		int(limits.MaxAgents))
	pa, err := render(a, err, agentProto)
	return apierr.Reply(&adminv1.CreateAgentResponse{Agent: pa}, err)
}

// GetAgent returns one agent of a human the caller may act for.
func (s *Server) GetAgent(ctx context.Context, req *adminv1.GetAgentRequest) (*adminv1.GetAgentResponse, error) {
	a, err := got(ctx, req.GetId(), s.identity.GetAgent, agentProto)
	return apierr.Reply(&adminv1.GetAgentResponse{Agent: a}, err)
}

// ListAgents lists agents oldest first. An empty human_id means the caller's
// own human, or every human for an administrator; a non-administrator naming
// another human gets an empty page, as for an unknown one.
func (s *Server) ListAgents(ctx context.Context, req *adminv1.ListAgentsRequest) (*adminv1.ListAgentsResponse, error) {
	agents, next, err := listOwned(ctx, req, "agents", s.identity.ListAgents, agentProto)
	return apierr.Reply(&adminv1.ListAgentsResponse{Agents: agents, NextPageToken: next}, err)
}

// UpdateAgent changes the fields named in update_mask of an agent of a
// human the caller may act for. human_id is immutable.
func (s *Server) UpdateAgent(ctx context.Context, req *adminv1.UpdateAgentRequest) (*adminv1.UpdateAgentResponse, error) {
	in := req.GetAgent()
	u, err := updating(ctx, "agent.id", in.GetId(), req.GetUpdateMask(), agentFields, []string{"metadata"},
		presentIf(in.GetName() != "", "name"),
		presentIf(in.GetDescription() != "", "description"),
		presentIf(in.GetMetadata() != nil, "metadata"),
		presentIf(in.GetDisabledAt() != nil, "disabled_at"),
	)
	if err != nil {
		return nil, err
	}
	t, id, fields := u.t, u.id, u.fields
	var patch auth.AgentPatch
	if fields["name"] {
		if in.GetName() == "" {
			return nil, invalid("agent.name", "is required")
		}
		patch.Name = ptr(in.GetName())
	}
	if fields["description"] {
		if err := prose("agent.description", in.GetDescription()); err != nil {
			return nil, err
		}
		patch.Description = ptr(in.GetDescription())
	}
	if fields["metadata"] {
		// Named but unset clears it to {}: metadata is never null.
		if patch.Metadata, err = metadataJSON(in.GetMetadata()); err != nil {
			return nil, err
		}
	}
	if fields["disabled_at"] {
		patch.Disabled = ptr(in.GetDisabledAt() != nil)
	}
	a, err := unlessEmpty(ctx, t, id, fields, s.identity.GetAgent, func() (auth.Agent, error) {
		return s.identity.UpdateAgent(ctx, t, id, patch)
	})
	pa, err := render(a, err, agentProto)
	return apierr.Reply(&adminv1.UpdateAgentResponse{Agent: pa}, err)
}

// DeleteAgent deletes an agent of a human the caller may act for, and its
// credentials; rows that merely referenced it keep existing without one.
func (s *Server) DeleteAgent(ctx context.Context, req *adminv1.DeleteAgentRequest) (*adminv1.DeleteAgentResponse, error) {
	return apierr.Reply(&adminv1.DeleteAgentResponse{}, removed(ctx, req.GetId(), s.identity.DeleteAgent))
}

// metadataJSON serializes Agent.metadata (nil = {}) and enforces its size
// limit, which protovalidate cannot measure. encoding/json over AsMap gives
// compact, deterministic output (protojson's whitespace is deliberately
// unstable), so the limit does not wobble by a byte between calls.
func metadataJSON(m *structpb.Struct) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage(`{}`), nil
	}
	raw, err := json.Marshal(m.AsMap())
	if err != nil {
		return nil, invalid("agent.metadata", "must be representable as JSON (no NaN or infinite numbers)")
	}
	if len(raw) > maxMetadataBytes {
		return nil, invalid("agent.metadata", "must be at most 64 KiB serialized")
	}
	return raw, nil
}

// agentProto renders an agent. The metadata column is a jsonb object (CHECK
// agents_metadata_check), so the error is only for a row that is corrupt.
func agentProto(a auth.Agent) (*adminv1.Agent, error) {
	meta := &structpb.Struct{}
	if err := protojson.Unmarshal(a.Metadata, meta); err != nil {
		return nil, fmt.Errorf("agent %s metadata: %w", a.ID, err)
	}
	return &adminv1.Agent{
		Id:          a.ID.String(),
		HumanId:     a.HumanID.String(),
		Name:        a.Name,
		Description: a.Description,
		Metadata:    meta,
		CreatedAt:   timestamp(&a.CreatedAt),
		UpdatedAt:   timestamp(&a.UpdatedAt),
		DisabledAt:  timestamp(a.DisabledAt),
	}, nil
}
