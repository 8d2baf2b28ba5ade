package bench

import (
	"crypto/tls"
	"flag"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/tlsconfig"
)

// tlsFlags are the TLS flags every benchmark takes: --cacert (the CA
// bundle that signed the nodes' certificates, SWITCHBOARD_TLS_CA_FILE on
// the nodes) and --tls (TLS verified against the system roots). Either
// turns TLS on for the gRPC benchmarks; ingest follows its URL's scheme.
type tlsFlags struct {
	caFile string
	on     bool
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.caFile, "cacert", "", "PEM CA bundle to verify the nodes' TLS certificates (turns TLS on)")
	fs.BoolVar(&f.on, "tls", false, "connect with TLS, verified against the system roots (or --cacert)")
}

// config is the client TLS (nil: plaintext) for a benchmark called name.
// The server name is the dialed host.
func (f tlsFlags) config(name string) (*tls.Config, error) {
	if !f.on && f.caFile == "" {
		return nil, nil //nolint:nilnil // nil is plaintext
	}
	c := tlsconfig.Client(nil, nil, "")
	if f.caFile != "" {
		roots, err := tlsconfig.ReadCAs(f.caFile)
		if err != nil {
			return nil, usageErr("%s: --cacert: %v", name, err)
		}
		c.RootCAs = roots
	}
	return c, nil
}

// grpcDialOptions are the transport and the bearer token of a gRPC
// benchmark's connections: TLS with c, or plaintext when c is nil (the
// token then goes in clear, as to a local node).
func grpcDialOptions(c *tls.Config, token string) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if c != nil {
		creds = credentials.NewTLS(c)
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: c == nil}),
		// Fixed flow-control windows, as the nodes use (pkg/grpcserver):
		// with grpc-go's dynamic ones every message a quiet stream receives
		// sets off a bandwidth-estimation ping and its ack. The bench's
		// clients share the two cores with the nodes they measure; that
		// overhead is theirs, not the product's.
		grpc.WithInitialWindowSize(1 << 20), grpc.WithInitialConnWindowSize(4 << 20),
	}
}

// checkScheme refuses --cacert or --tls with an http:// URL, which would
// silently go in clear.
func (f tlsFlags) checkScheme(name, url string, https bool) error {
	if (f.on || f.caFile != "") && !https {
		return usageErr("%s: --cacert and --tls need an https:// URL, got %q", name, url)
	}
	return nil
}
