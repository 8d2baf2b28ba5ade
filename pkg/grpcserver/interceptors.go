package grpcserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchboard/switchboard/pkg/apierr"
	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// RequestIDHeader carries the request id in and out of every call. A caller
// may supply one (so a trace spans services); otherwise the server makes one.
const RequestIDHeader = "x-request-id"

type requestIDKey struct{}

// RequestID returns the id the request-id interceptor put in ctx ("" if none).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// chain is the interceptor order shared by every service. Order matters:
//  1. recovery first, so a panic anywhere below becomes an Internal status
//     instead of killing the process;
//  2. request id, so everything after it (logs, errors) can name the call;
//  3. metrics (Options.Metrics), then logging, which record the final code
//     and duration of each call;
//  4. error mapping, so logging sees the status the client gets and internal
//     causes are logged exactly once;
//  5. authorization, before validation, so a caller without a valid
//     credential learns nothing about the request's shape; a stream stays
//     watched until it ends, and is ended when its credential stops
//     verifying (Options.AuthorizeStream);
//  6. streams only: the cap on open streams (Options.LimitStreams), right
//     after authorization, whose caller it counts, and before anything reads
//     the request;
//  7. the request guard (guard.go): text PostgreSQL cannot store, JSON and
//     messages nested too deeply, and requests that did not decode, before
//     any rule or handler reads them;
//  8. request validation (protovalidate rules from the contracts), last before
//     the handler, so a bad request never reaches it.
//
// Streams additionally end when the server starts draining (see Server.Drain).
func (s *Server) chain() []grpc.ServerOption {
	recoverOpt := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		s.log.Error("panic in handler", sblog.RequestID(RequestID(ctx)),
			zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		return status.Error(codes.Internal, "internal error")
	})
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithLevels(codeToLevel),
		logging.WithFieldsFromContext(func(ctx context.Context) logging.Fields {
			return logging.Fields{"request_id", RequestID(ctx)}
		}),
	}
	lg := zapAdapter(s.log)
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.withMetrics(
			[]grpc.UnaryServerInterceptor{recovery.UnaryServerInterceptor(recoverOpt), unaryRequestID},
			logging.UnaryServerInterceptor(lg, logOpts...),
			s.unaryErrors,
			s.unaryAuth,
			unaryGuard,
			s.unaryValidate,
		)...),
		grpc.ChainStreamInterceptor(s.withStreamMetrics(
			[]grpc.StreamServerInterceptor{recovery.StreamServerInterceptor(recoverOpt), streamRequestID},
			logging.StreamServerInterceptor(lg, logOpts...),
			s.streamErrors,
			s.streamAuth,
			s.streamLimit,
			streamGuard,
			s.streamValidate,
			s.streamDrain,
		)...),
	}
}

// codeToLevel keeps successful calls at debug: the queue's hot path would
// otherwise log thousands of lines a second.
func codeToLevel(c codes.Code) logging.Level {
	switch c {
	case codes.OK, codes.Canceled, codes.NotFound, codes.AlreadyExists, codes.InvalidArgument,
		codes.FailedPrecondition, codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		return logging.LevelDebug
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return logging.LevelError
	default:
		return logging.LevelWarn
	}
}

func zapAdapter(l *zap.Logger) logging.Logger {
	return logging.LoggerFunc(func(_ context.Context, lvl logging.Level, msg string, fields ...any) {
		zf := make([]zap.Field, 0, len(fields)/2)
		for i := 0; i+1 < len(fields); i += 2 {
			zf = append(zf, zap.Any(fmt.Sprint(fields[i]), fields[i+1]))
		}
		switch lvl {
		case logging.LevelDebug:
			l.Debug(msg, zf...)
		case logging.LevelInfo:
			l.Info(msg, zf...)
		case logging.LevelWarn:
			l.Warn(msg, zf...)
		default:
			l.Error(msg, zf...)
		}
	})
}

func withRequestID(ctx context.Context) context.Context {
	id := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(RequestIDHeader); len(v) > 0 && validRequestID(v[0]) {
			id = v[0]
		}
	}
	if id == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(RequestIDHeader, id))
	return context.WithValue(ctx, requestIDKey{}, id)
}

// validRequestID accepts short printable ids only, so a client cannot inject
// log lines or unbounded data through the header.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if r < '!' || r > '~' {
			return false
		}
	}
	return true
}

func unaryRequestID(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(withRequestID(ctx), req)
}

func streamRequestID(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &wrappedStream{ServerStream: ss, ctx: withRequestID(ss.Context())})
}

func (s *Server) unaryErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		return nil, s.toStatus(ctx, info.FullMethod, err)
	}
	return resp, nil
}

func (s *Server) streamErrors(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := h(srv, ss); err != nil {
		return s.toStatus(ss.Context(), info.FullMethod, err)
	}
	return nil
}

// toStatus is the single place handler errors become client statuses.
func (s *Server) toStatus(ctx context.Context, method string, err error) error {
	st, logCause := apierr.ToStatus(err)
	if st.Code() == codes.DeadlineExceeded && ctx.Err() == nil {
		// A deadline of the server's own (a bounded wait for a database
		// connection, say), not the caller's: the caller may retry.
		st, logCause = status.New(codes.Unavailable, "the server timed out waiting for the database; retry shortly"), true
	}
	switch {
	case logCause && st.Code() == codes.Internal:
		s.log.Error("internal error", sblog.Method(method), sblog.RequestID(RequestID(ctx)), zap.Error(err))
	case logCause:
		s.log.Warn("database fault", sblog.Method(method), sblog.RequestID(RequestID(ctx)),
			zap.Stringer("code", st.Code()), zap.Error(err))
	}
	return st.Err()
}

// streamDrain ends server streams when the server begins draining: a stream
// such as Subscribe never finishes on its own, and GracefulStop would wait for
// it until the grace period ran out. Clients get UNAVAILABLE and reconnect
// (resuming from the last id they saw) to a node that is not going away.
func (s *Server) streamDrain(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	s.streams.Add(1)
	defer s.streams.Add(-1)
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	stop := context.AfterFunc(s.drainCtx, cancel)
	defer stop()
	err := h(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	if s.drainCtx.Err() != nil && ss.Context().Err() == nil {
		return apierr.Unavailable("server is shutting down; reconnect")
	}
	return err
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s.authorize == nil {
		return h(ctx, req)
	}
	ctx, err := s.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if s.authorizeStream != nil {
		return s.streamAuthWatched(srv, ss, info, h)
	}
	if s.authorize == nil {
		return h(srv, ss)
	}
	ctx, err := s.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}

// streamAuthWatched authorizes a stream through Options.AuthorizeStream,
// whose context ends when the caller's credential stops verifying: the
// handler sees its context end (as when the client leaves), and the client
// gets the reason, UNAUTHENTICATED say, rather than whatever the handler
// made of its context ending.
func (s *Server) streamAuthWatched(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, release, err := s.authorizeStream(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer release()
	err = h(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	var revoked *apierr.Error
	if ctx.Err() != nil && ss.Context().Err() == nil && errors.As(context.Cause(ctx), &revoked) {
		return revoked
	}
	return err
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }
