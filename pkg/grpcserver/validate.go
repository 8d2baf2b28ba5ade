package grpcserver

import (
	"context"
	"errors"
	"fmt"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// Request validation is declared in the contracts (buf.validate rules next
// to each field's documented limits) and enforced here for every RPC, before
// any handler runs: a bad request is rejected whole with INVALID_ARGUMENT and
// a google.rpc.BadRequest detail per field, and nothing is written.

func (s *Server) unaryValidate(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.validateMessage(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) streamValidate(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &validatingStream{ServerStream: ss, s: s})
}

// validatingStream validates each message the client sends on a stream.
type validatingStream struct {
	grpc.ServerStream
	s *Server
}

func (v *validatingStream) RecvMsg(m any) error {
	if err := v.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return v.s.validateMessage(m)
}

func (s *Server) validateMessage(m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	err := s.validator.Validate(msg)
	if err == nil {
		return nil
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		// A rule that fails to compile or evaluate is our bug, not the
		// caller's: it surfaces as INTERNAL and is logged.
		return fmt.Errorf("validate %T: %w", m, err)
	}
	violations := make([]apierr.FieldViolation, 0, len(ve.Violations))
	for _, v := range ve.Violations {
		field := protovalidate.FieldPathString(v.Proto.GetField())
		if field == "" {
			field = "request" // a message-level (cross-field) rule
		}
		violations = append(violations, apierr.FieldViolation{Field: field, Description: v.Proto.GetMessage()})
	}
	return apierr.Invalid(violations...)
}
