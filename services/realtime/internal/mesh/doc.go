// Package mesh is the phase-2 transport for ephemeral realtime events
// (REALTIME_EPHEMERAL_TRANSPORT=mesh): typing, presence and cursor updates
// travel over direct node-to-node gRPC links (switchboard.mesh.v1.MeshService)
// instead of Postgres NOTIFY, so they cost the database nothing and are not
// capped at NOTIFY's 8000 bytes.
//
// Topology. Every node that runs realtime reads node_registry, dials every
// other such node and keeps one client stream (Relay) open to each: N nodes
// hold N×(N−1) links. A link carries only its dialer's own events, and a
// receiver hands what it gets to its local subscribers and forwards it
// nowhere, so an event crosses exactly one hop and can never loop.
//
// Best effort, by design. Ephemeral events are never stored: a node that
// joins late, a link that is broken or still dialing, or a peer whose send
// queue is full loses them, and nobody retries. Broadcast never waits for a
// peer; the publisher is never slowed by the slowest node.
//
// Trust. MeshService is marked open in pkg/auth (there is no user token on
// a node-to-node link), so Relay authenticates each link itself with the
// cluster secret in the "x-switchboard-cluster-secret" metadata. With TLS
// the dialer verifies the peer's certificate against the CA for the host
// of its registry endpoint (so the secret only goes to a real node), and
// with RequireClientCert (SWITCHBOARD_TLS_CLIENT_AUTH=mesh) the receiver
// admits a link only with a client certificate from that CA as well.
package mesh
