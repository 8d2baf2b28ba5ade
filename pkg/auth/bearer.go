package auth

import "context"

// Bearer is gRPC per-RPC credentials that send a token as
// "authorization: Bearer <token>": grpc.WithPerRPCCredentials(auth.Bearer{…}).
type Bearer struct {
	Token string
	// AllowInsecure permits sending the token over a plaintext connection
	// (loopback, or a service mesh that encrypts for you). Off, gRPC refuses
	// to send it without TLS.
	AllowInsecure bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b Bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (b Bearer) RequireTransportSecurity() bool { return !b.AllowInsecure }
