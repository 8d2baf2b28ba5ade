package realtime

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/switchboard/switchboard/services/realtime/internal/mesh"
	"github.com/switchboard/switchboard/services/realtime/internal/wire"
)

// MeshOptions configure the links of NewMesh.
type MeshOptions struct {
	// Secret is the cluster secret, the same on every node.
	Secret []byte
	// DialOptions are added to the links' dials: the node's TLS transport
	// credentials, when it has TLS.
	DialOptions []grpc.DialOption
	// RequireClientCert admits only links that presented a client
	// certificate the node's gRPC listener verified.
	RequireClientCert bool
}

// NewMesh returns the realtime service with ephemeral events carried by the
// node-to-node mesh (REALTIME_EPHEMERAL_TRANSPORT=mesh): links to every
// realtime peer in the registry, authenticated with the cluster secret (and
// a client certificate, with RequireClientCert). The node must register
// both services (Register) and run Components, which then include the
// mesh's links.
func NewMesh(log *zap.Logger, pool *pgxpool.Pool, opts Options, mo MeshOptions) (*Server, error) {
	var s *Server
	m, err := mesh.New(mesh.Options{
		NodeID: opts.withDefaults().NodeID, Secret: mo.Secret, Pool: pool, Log: log,
		DialOptions: mo.DialOptions, RequireClientCert: mo.RequireClientCert,
		// The mesh delivers to the service it is the transport of.
		Deliver: func(e wire.Ephemeral) { s.deliverRemote(e) },
	})
	if err != nil {
		return nil, err
	}
	opts.Transport = m
	s = New(log, pool, opts)
	s.mesh = m
	return s, nil
}

// Register adds the service, and the mesh's internal service when it has
// one, to a gRPC server.
func (s *Server) Register(r interface{ Register(*grpc.ServiceDesc, any) }) {
	r.Register(s.Desc(), s)
	if s.mesh != nil {
		r.Register(s.mesh.Desc(), s.mesh)
	}
}

// MeshPeers lists the peers with a live mesh link (nil without the mesh).
func (s *Server) MeshPeers() []string {
	if s.mesh == nil {
		return nil
	}
	return s.mesh.Peers()
}
