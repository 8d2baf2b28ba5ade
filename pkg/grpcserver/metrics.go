package grpcserver

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// handlingBuckets are the latency buckets of grpc_server_handling_seconds:
// 1 ms to about 1 min (long polls and streams land in the last ones).
var handlingBuckets = prometheus.ExponentialBuckets(0.001, 4, 9)

// newServerMetrics registers the go-grpc-middleware server metrics (per
// method and code, with handling-time histograms) with reg; nil without one.
func newServerMetrics(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	if reg == nil {
		return nil
	}
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(handlingBuckets)))
	reg.MustRegister(m)
	return m
}

// withMetrics is before, then the metrics interceptor when the server has
// metrics, then after: placed before logging, it sees the code the client
// gets.
func (s *Server) withMetrics(before []grpc.UnaryServerInterceptor, after ...grpc.UnaryServerInterceptor) []grpc.UnaryServerInterceptor {
	if s.metrics != nil {
		before = append(before, s.metrics.UnaryServerInterceptor())
	}
	return append(before, after...)
}

// withStreamMetrics is withMetrics for streams.
func (s *Server) withStreamMetrics(before []grpc.StreamServerInterceptor, after ...grpc.StreamServerInterceptor) []grpc.StreamServerInterceptor {
	if s.metrics != nil {
		before = append(before, s.metrics.StreamServerInterceptor())
	}
	return append(before, after...)
}
