//go:build integration

package ingest_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// TestClaimServerRanks: who may read a stream on a server, as the nodes'
// claims decide it (sources.ClaimServer), step by step: the first reader
// keeps it; after a restart of the server (a new run_id) the reader that
// recorded the address keeps its standing, even when a rival's claim came
// first and its probe failed; a probe that finds the reader's address on
// the server refuses the rival; an address another owner's adapter reaches
// is refused whatever the server says; adapters that never read rank by
// when their config named the stream; the owner's other adapters are no
// rivals.
func TestClaimServerRanks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	allow := sources.NewAllowlist(loopbackAnyPort, nil)
	src := sources.New(e.pool, e.keys, allow)
	const stream = "orders"
	key := func(run string) string { return strings.Repeat(run, 40) + "/0/" + stream }
	at := func(port string) string { return "loopback:" + port + "/0/" + stream }
	claim := func(id uuid.UUID, run, port string, probed map[uuid.UUID]string) error {
		return src.ClaimServer(t.Context(), sources.ServerClaim{AdapterID: id, ServerKey: key(run), AddrKey: at(port), Probed: probed})
	}
	owner := e.adapterOf(t, allow, e.human, "orders", "127.0.0.1:7001", stream, "")
	rival := e.adapterOf(t, allow, e.newHuman(t), "orders", "127.0.0.1:7002", stream, "")

	require.NoError(t, claim(owner, "1", "7001", nil))
	since := e.serverSince(t, owner)
	require.ErrorIs(t, claim(rival, "1", "7002", nil), adapter.ErrSourceTaken, "the server's reader keeps it")

	// The server restarts. The rival reconnects first and cannot probe the
	// owner's address: nothing tells it the server is the owner's, so it
	// reads. The owner reconnects at the address it recorded: it has read
	// this server since before, outranks the rival and takes its record.
	require.NoError(t, claim(rival, "2", "7002", nil))
	// Its next connection's probe finds the owner's recorded address on this
	// server: refused, and its record is gone.
	require.ErrorIs(t, claim(rival, "2", "7002", map[uuid.UUID]string{owner: at("7001")}), adapter.ErrSourceTaken)
	require.Nil(t, e.serverSince(t, rival))
	require.NoError(t, claim(rival, "2", "7002", nil))
	require.NoError(t, claim(owner, "2", "7001", nil))
	require.Equal(t, since, e.serverSince(t, owner))
	require.Nil(t, e.serverSince(t, rival), "the rival's record is taken: its nodes stop it")
	require.ErrorIs(t, claim(rival, "2", "7002", nil), adapter.ErrSourceTaken)

	// Another restart: this time the rival's probe reaches the owner's
	// address on the same server, and the owner recorded that address.
	require.ErrorIs(t, claim(rival, "3", "7002", map[uuid.UUID]string{owner: at("7001")}), adapter.ErrSourceTaken)

	// DNS sends the rival to the owner's address: refused, whatever the
	// server there says.
	require.ErrorIs(t, claim(rival, "9", "7001", nil), adapter.ErrSourceTaken)

	// The owner's adapter in another group is no rival of its own.
	audit := e.adapterOf(t, allow, e.human, "audit", "127.0.0.1:7005", stream, "audit")
	require.NoError(t, claim(audit, "2", "7005", nil))

	// Two adapters that never read: the one whose config named the stream
	// first ranks first, whichever claims first.
	first := e.adapterOf(t, allow, e.newHuman(t), "t", "127.0.0.1:7003", "t", "")
	second := e.adapterOf(t, allow, e.newHuman(t), "t", "127.0.0.1:7004", "t", "")
	tKey := strings.Repeat("5", 40) + "/0/t"
	err := src.ClaimServer(t.Context(), sources.ServerClaim{AdapterID: second, ServerKey: tKey, AddrKey: "loopback:7004/0/t",
		Probed: map[uuid.UUID]string{first: "loopback:7003/0/t"}})
	require.ErrorIs(t, err, adapter.ErrSourceTaken)
	require.NoError(t, src.ClaimServer(t.Context(), sources.ServerClaim{AdapterID: first, ServerKey: tKey, AddrKey: "loopback:7003/0/t"}))

	_, err = e.pool.Exec(t.Context(), `DELETE FROM adapters WHERE id = $1`, first)
	require.NoError(t, err)
	err = src.ClaimServer(t.Context(), sources.ServerClaim{AdapterID: first, ServerKey: tKey, AddrKey: "loopback:7003/0/t"})
	require.ErrorIs(t, err, sources.ErrAdapterGone)
}
