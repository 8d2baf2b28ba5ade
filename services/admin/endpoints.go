package admin

import (
	"context"
	"time"

	"github.com/google/uuid"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// endpointFields are UpdateEndpointRequest.update_mask's allowed paths.
// "secret" is endpoint.secret, the request's secret as a REST PATCH body
// carries it.
var endpointFields = []string{
	"name", "agent_id", "queue", "verification", "signature_header", "delivery_id_header", "max_body_bytes",
	"enabled", "hmac_algorithm", "hmac_encoding", "signature_prefix", "tolerance_seconds", "rate_limit_per_second",
	"public_url",
	"meta_verify_token",
	"secret",
	"topic_header", "topic_pointer", "body_dedup_window_seconds",
	"routes",
}

// CreateEndpoint vends a webhook URL for a human (the caller's own when
// endpoint.human_id is empty; only an administrator may name another) with
// its first secret, which is returned here once.
func (s *Server) CreateEndpoint(ctx context.Context, req *adminv1.CreateEndpointRequest) (*adminv1.CreateEndpointResponse, error) {
	in := req.GetEndpoint()
	t, humanID, err := creator(ctx, "endpoint.human_id", in.GetHumanId())
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, invalid("endpoint", "is required")
	}
	scheme, ok := sources.SchemeOf(in.GetVerification())
	if !ok {
		return nil, invalid("endpoint.verification", "is required (a defined scheme other than UNSPECIFIED)")
	}
	f := sources.EndpointFields{
		Name: in.GetName(), Queue: in.GetQueue(), Verification: scheme,
		SignatureHeader: optionalString(in.GetSignatureHeader()), DeliveryIDHeader: optionalString(in.GetDeliveryIdHeader()),
		MaxBodyBytes: in.GetMaxBodyBytes(), Enabled: in.Enabled == nil || in.GetEnabled(),
		HmacAlgorithm: in.GetHmacAlgorithm(), HmacEncoding: in.GetHmacEncoding(), SignaturePrefix: in.GetSignaturePrefix(),
		ToleranceSeconds: in.GetToleranceSeconds(), RateLimitPerSecond: in.GetRateLimitPerSecond(),
		PublicURL:   optionalString(in.GetPublicUrl()),
		TopicHeader: optionalString(in.GetTopicHeader()), TopicPointer: optionalString(in.GetTopicPointer()),
		BodyDedupWindowSeconds: in.BodyDedupWindowSeconds, //nolint:protogetter // presence matters: unset is the scheme's default
	}
	if f.AgentID, err = parseOptionalID("endpoint.agent_id", in.GetAgentId()); err != nil {
		return nil, err
	}
	if tok := in.GetMetaVerifyToken(); tok != "" {
		if f.VerifyTokenSHA256, err = sources.VerifyTokenDigest(tok); err != nil {
			return nil, err
		}
	}
	if f.Routes, err = routesFrom(in.GetRoutes()); err != nil {
		return nil, err
	}
	given, err := oneSecret(req.GetSecret(), in.GetSecret())
	if err != nil {
		return nil, err
	}
	e, secret, err := s.sources.CreateEndpoint(ctx, t, humanID, f, given)
	return apierr.Reply(&adminv1.CreateEndpointResponse{Endpoint: endpointProto(e), Secret: secret}, err)
}

// GetEndpoint returns one endpoint of a human the caller may act for,
// describing its secrets but never returning them.
func (s *Server) GetEndpoint(ctx context.Context, req *adminv1.GetEndpointRequest) (*adminv1.GetEndpointResponse, error) {
	e, err := got(ctx, req.GetId(), s.sources.GetEndpoint, infallible(endpointProto))
	return apierr.Reply(&adminv1.GetEndpointResponse{Endpoint: e}, err)
}

// ListEndpoints lists endpoints oldest first. An empty human_id means the
// caller's own human, or every human for an administrator; a
// non-administrator naming another human gets an empty page.
func (s *Server) ListEndpoints(ctx context.Context, req *adminv1.ListEndpointsRequest) (*adminv1.ListEndpointsResponse, error) {
	endpoints, next, err := listOwned(ctx, req, "endpoints", s.sources.ListEndpoints, infallible(endpointProto))
	return apierr.Reply(&adminv1.ListEndpointsResponse{Endpoints: endpoints, NextPageToken: next}, err)
}

// UpdateEndpoint changes the fields named in update_mask of an endpoint of
// a human the caller may act for. The slug and human_id never change; the
// secrets only with a verification change (see UpdateEndpointRequest.secret).
func (s *Server) UpdateEndpoint(ctx context.Context, req *adminv1.UpdateEndpointRequest) (*adminv1.UpdateEndpointResponse, error) {
	in := req.GetEndpoint()
	u, err := updating(ctx, "endpoint.id", in.GetId(), req.GetUpdateMask(), endpointFields, nil,
		presentIf(in.GetName() != "", "name"),
		presentIf(in.GetAgentId() != "", "agent_id"),
		presentIf(in.GetQueue() != "", "queue"),
		presentIf(in.GetVerification() != adminv1.VerificationScheme_VERIFICATION_SCHEME_UNSPECIFIED, "verification"),
		presentIf(in.GetSignatureHeader() != "", "signature_header"),
		presentIf(in.GetDeliveryIdHeader() != "", "delivery_id_header"),
		presentIf(in.GetMaxBodyBytes() != 0, "max_body_bytes"),
		presentIf(in.Enabled != nil, "enabled"),
		presentIf(in.GetHmacAlgorithm() != "", "hmac_algorithm"),
		presentIf(in.GetHmacEncoding() != "", "hmac_encoding"),
		presentIf(in.GetSignaturePrefix() != "", "signature_prefix"),
		presentIf(in.GetToleranceSeconds() != 0, "tolerance_seconds"),
		presentIf(in.GetRateLimitPerSecond() != 0, "rate_limit_per_second"),
		presentIf(in.GetPublicUrl() != "", "public_url"),
		presentIf(in.GetSecret() != "", "secret"),
		presentIf(in.GetMetaVerifyToken() != "", "meta_verify_token"),
		presentIf(in.GetTopicHeader() != "", "topic_header"),
		presentIf(in.GetTopicPointer() != "", "topic_pointer"),
		presentIf(in.BodyDedupWindowSeconds != nil, "body_dedup_window_seconds"), //nolint:protogetter // presence
		presentIf(len(in.GetRoutes()) > 0, "routes"),
	)
	if err != nil {
		return nil, err
	}
	fields := u.fields
	var bodySecret string
	set(fields, "secret", &bodySecret, in.GetSecret())
	given, err := oneSecret(req.GetSecret(), bodySecret)
	if err != nil {
		return nil, err
	}
	change := sources.EndpointUpdate{Secret: given}
	var agentID *uuid.UUID
	if fields["agent_id"] {
		if agentID, err = parseOptionalID("endpoint.agent_id", in.GetAgentId()); err != nil {
			return nil, err
		}
	}
	var verifyToken []byte
	if fields["meta_verify_token"] {
		if verifyToken, err = sources.VerifyTokenDigest(in.GetMetaVerifyToken()); err != nil {
			return nil, err
		}
	}
	var routes []sources.Route
	if fields["routes"] {
		if routes, err = routesFrom(in.GetRoutes()); err != nil {
			return nil, err
		}
	}
	if fields["verification"] {
		scheme, ok := sources.SchemeOf(in.GetVerification())
		if !ok {
			return nil, invalid("endpoint.verification", "must be a defined scheme other than UNSPECIFIED")
		}
		change.Verification = &scheme
	}
	change.Apply = func(f *sources.EndpointFields) {
		set(fields, "name", &f.Name, in.GetName())
		set(fields, "agent_id", &f.AgentID, agentID)
		set(fields, "queue", &f.Queue, in.GetQueue())
		set(fields, "signature_header", &f.SignatureHeader, optionalString(in.GetSignatureHeader()))
		set(fields, "delivery_id_header", &f.DeliveryIDHeader, optionalString(in.GetDeliveryIdHeader()))
		set(fields, "max_body_bytes", &f.MaxBodyBytes, in.GetMaxBodyBytes())
		set(fields, "enabled", &f.Enabled, in.GetEnabled())
		set(fields, "hmac_algorithm", &f.HmacAlgorithm, in.GetHmacAlgorithm())
		set(fields, "hmac_encoding", &f.HmacEncoding, in.GetHmacEncoding())
		set(fields, "signature_prefix", &f.SignaturePrefix, in.GetSignaturePrefix())
		set(fields, "tolerance_seconds", &f.ToleranceSeconds, in.GetToleranceSeconds())
		set(fields, "rate_limit_per_second", &f.RateLimitPerSecond, in.GetRateLimitPerSecond())
		set(fields, "public_url", &f.PublicURL, optionalString(in.GetPublicUrl()))
		set(fields, "meta_verify_token", &f.VerifyTokenSHA256, verifyToken)
		set(fields, "topic_header", &f.TopicHeader, optionalString(in.GetTopicHeader()))
		set(fields, "topic_pointer", &f.TopicPointer, optionalString(in.GetTopicPointer()))
		set(fields, "body_dedup_window_seconds", &f.BodyDedupWindowSeconds, in.BodyDedupWindowSeconds) //nolint:protogetter // presence
		set(fields, "routes", &f.Routes, routes)
	}
	e, err := s.sources.UpdateEndpoint(ctx, u.t, u.id, change)
	return apierr.Reply(&adminv1.UpdateEndpointResponse{Endpoint: endpointProto(e)}, err)
}

// DeleteEndpoint deletes an endpoint of a human the caller may act for, its
// secrets and its WEBHOOK adapters.
func (s *Server) DeleteEndpoint(ctx context.Context, req *adminv1.DeleteEndpointRequest) (*adminv1.DeleteEndpointResponse, error) {
	return apierr.Reply(&adminv1.DeleteEndpointResponse{}, removed(ctx, req.GetId(), s.sources.DeleteEndpoint))
}

// AddEndpointSecret adds a secret to an endpoint of a human the caller may
// act for, optionally giving its other secrets a grace period, and returns
// the new secret once.
func (s *Server) AddEndpointSecret(ctx context.Context, req *adminv1.AddEndpointSecretRequest) (*adminv1.AddEndpointSecretResponse, error) {
	return byID(ctx, "endpoint_id", req.GetEndpointId(), func(ctx context.Context, t auth.Tenant, id uuid.UUID) (*adminv1.AddEndpointSecretResponse, error) {
		var validFor time.Duration
		if d := req.GetPreviousValidFor(); d != nil {
			if err := d.CheckValid(); err != nil {
				return nil, invalid("previous_valid_for", "is not a valid duration")
			}
			validFor = d.AsDuration()
		}
		e, plain, secretID, err := s.sources.AddEndpointSecret(ctx, t, id, req.GetSecret(), validFor)
		return apierr.Reply(&adminv1.AddEndpointSecretResponse{Endpoint: endpointProto(e), Secret: plain, SecretId: secretID.String()}, err)
	})
}

// RemoveEndpointSecret deletes one secret of an endpoint of a human the
// caller may act for, unless it is the last unexpired one of a scheme that
// needs a secret.
func (s *Server) RemoveEndpointSecret(ctx context.Context, req *adminv1.RemoveEndpointSecretRequest) (*adminv1.RemoveEndpointSecretResponse, error) {
	return byID(ctx, "endpoint_id", req.GetEndpointId(), func(ctx context.Context, t auth.Tenant, id uuid.UUID) (*adminv1.RemoveEndpointSecretResponse, error) {
		secretID, err := parseID("secret_id", req.GetSecretId())
		if err != nil {
			return nil, err
		}
		e, err := s.sources.RemoveEndpointSecret(ctx, t, id, secretID)
		return apierr.Reply(&adminv1.RemoveEndpointSecretResponse{Endpoint: endpointProto(e)}, err)
	})
}

// oneSecret is the secret a Create or Update request gives: the request's
// own secret (how gRPC clients send it) or endpoint.secret (where a REST
// body carries it). Either may be empty; both set must agree, so neither is
// silently dropped.
func oneSecret(request, endpoint string) (string, error) {
	switch {
	case endpoint == "":
		return request, nil
	case request == "" || request == endpoint:
		return endpoint, nil
	}
	return "", invalid("secret", "and endpoint.secret are both set and differ; give the secret once")
}

// endpointProto renders an endpoint: its secrets described, never returned
// (Endpoint.secret, input only, stays empty).
func endpointProto(e sources.Endpoint) *adminv1.Endpoint {
	out := &adminv1.Endpoint{
		Id:                     e.ID.String(),
		HumanId:                e.HumanID.String(),
		Slug:                   e.Slug,
		UrlPath:                "/hooks/" + e.Slug,
		Name:                   e.Name,
		AgentId:                idString(e.AgentID),
		Queue:                  e.Queue,
		Verification:           sources.SchemeEnum(e.Verification),
		HasSecret:              e.HasSecret(),
		SignatureHeader:        derefString(e.SignatureHeader),
		DeliveryIdHeader:       derefString(e.DeliveryIDHeader),
		MaxBodyBytes:           e.MaxBodyBytes,
		Enabled:                ptr(e.Enabled),
		CreatedAt:              timestamp(&e.CreatedAt),
		UpdatedAt:              timestamp(&e.UpdatedAt),
		HmacAlgorithm:          e.HmacAlgorithm,
		HmacEncoding:           e.HmacEncoding,
		SignaturePrefix:        e.SignaturePrefix,
		ToleranceSeconds:       e.ToleranceSeconds,
		RateLimitPerSecond:     e.RateLimitPerSecond,
		TopicHeader:            derefString(e.TopicHeader),
		TopicPointer:           derefString(e.TopicPointer),
		BodyDedupWindowSeconds: e.BodyDedupWindowSeconds,
		HasMetaVerifyToken:     e.HasVerifyToken(),
		Secrets:                make([]*adminv1.EndpointSecret, len(e.Secrets)),
		PublicUrl:              derefString(e.PublicURL),
		Routes:                 routesProto(e.Routes),
	}
	for i, sec := range e.Secrets {
		// Oldest first, so the last sealed one is the newest.
		if sec.KeyID != nil {
			out.SecretKeyId = *sec.KeyID
		}
		out.Secrets[i] = &adminv1.EndpointSecret{
			Id:        sec.ID.String(),
			Hint:      sec.Hint,
			KeyId:     derefString(sec.KeyID),
			CreatedAt: timestamp(&sec.CreatedAt),
			ExpiresAt: timestamp(sec.ExpiresAt),
		}
	}
	return out
}
