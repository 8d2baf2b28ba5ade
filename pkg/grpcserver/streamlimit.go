package grpcserver

import "google.golang.org/grpc"

// streamLimit admits a stream through Options.LimitStreams when one was
// given (it counts the caller authorization verified, and gives the place
// back when the stream ends); without one every stream is admitted.
func (s *Server) streamLimit(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if s.limit == nil {
		return h(srv, ss)
	}
	return s.limit(srv, ss, info, h)
}
