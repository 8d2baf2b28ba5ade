package config

import "fmt"

// Realtime's variables.
const (
	// EnvEphemeralTransport selects how ephemeral realtime events reach
	// other nodes: "notify" (inside pg_notify payloads, the default) or
	// "mesh" (direct node-to-node gRPC links found in the registry).
	EnvEphemeralTransport = "REALTIME_EPHEMERAL_TRANSPORT"
	// EnvClusterSecret authenticates the mesh links between nodes; every
	// node needs the same value. Required with the mesh.
	EnvClusterSecret = "SWITCHBOARD_CLUSTER_SECRET"
)

// minClusterSecret is the shortest cluster secret accepted, in bytes.
const minClusterSecret = 32

// Realtime configures the realtime service.
type Realtime struct {
	EphemeralTransport string
	ClusterSecret      string
}

func defaultRealtime() Realtime { return Realtime{EphemeralTransport: "notify"} }

func (r Realtime) validate() error {
	if err := oneOf(EnvEphemeralTransport, r.EphemeralTransport, "notify", "mesh"); err != nil {
		return err
	}
	if r.EphemeralTransport == "mesh" && len(r.ClusterSecret) < minClusterSecret {
		return fmt.Errorf("%s: the mesh needs a secret of at least %d bytes shared by every node (try: openssl rand -base64 32)", EnvClusterSecret, minClusterSecret)
	}
	return nil
}
