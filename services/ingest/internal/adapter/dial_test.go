package adapter

import (
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// listen returns a local listener and its port, closed at cleanup.
func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// requireFirstConnIs accepts the listener's first connection and requires
// it to be conn: any connection a refused dial had made would be queued
// before it.
func requireFirstConnIs(t *testing.T, ln net.Listener, conn net.Conn) {
	t.Helper()
	accepted, err := ln.Accept()
	require.NoError(t, err)
	defer func() { _ = accepted.Close() }()
	require.Equal(t, conn.LocalAddr().String(), accepted.RemoteAddr().String(),
		"the refused dial never reached the listener")
}

// TestDialRefusesRebinding: a name that resolves to a public address the
// list allows passes the create-time check; when it resolves to loopback at
// dial time, the real dialer's Control refuses the connection before it is
// made.
func TestDialRefusesRebinding(t *testing.T) {
	t.Parallel()
	ln, port := listen(t)
	var answer atomic.Pointer[netip.Addr]
	public, loopback := netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("127.0.0.1")
	answer.Store(&public)
	resolver := fakeResolver(func() netip.Addr { return *answer.Load() })
	l := NewAllowlist([]AllowRule{prefixRule("203.0.113.0/24", 0)}, resolver)
	addr := "rebind.example:" + port

	require.NoError(t, l.Check(t.Context(), addr), "at create time the name is public")

	answer.Store(&loopback)
	conn, err := l.DialContext(t.Context(), "tcp", addr)
	require.Nil(t, conn)
	require.ErrorIs(t, err, ErrDisallowedTarget)
	var de *DialError
	require.ErrorAs(t, err, &de)
	require.EqualError(t, err,
		"dial "+addr+": refused by SWITCHBOARD_ADAPTER_ALLOW (it resolves to a loopback address)")

	// The same dial with loopback allowed connects: the refusal above was
	// the check, and it happened before connect.
	allowed := NewAllowlist([]AllowRule{prefixRule("127.0.0.1/32", 0)}, resolver)
	conn, err = allowed.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	requireFirstConnIs(t, ln, conn)
}

// TestDialRefusesLiterals: an address literal is checked at dial time too,
// so a stored adapter the list no longer allows cannot connect.
func TestDialRefusesLiterals(t *testing.T) {
	t.Parallel()
	ln, port := listen(t)
	for name, rules := range map[string][]AllowRule{
		"unset":               nil,
		"every public":        {prefixRule("0.0.0.0/0", 0)},
		"other port":          {prefixRule("127.0.0.1/32", 1)},
		"a name, not the key": {{Host: "localhost"}},
	} {
		conn, err := NewAllowlist(rules, nil).DialContext(t.Context(), "tcp", "127.0.0.1:"+port)
		require.Nil(t, conn, name)
		require.ErrorIs(t, err, ErrDisallowedTarget, name)
		require.Contains(t, err.Error(), "dial 127.0.0.1:"+port+": refused by SWITCHBOARD_ADAPTER_ALLOW (", name)
	}
	conn, err := NewAllowlist([]AllowRule{prefixRule("127.0.0.1/32", 0)}, nil).DialContext(t.Context(), "tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	requireFirstConnIs(t, ln, conn)
}

// TestDialTrustsNamedHost: a name rule trusts DNS for the name, loopback
// included (the operator listed it).
func TestDialTrustsNamedHost(t *testing.T) {
	t.Parallel()
	ln, port := listen(t)
	l := NewAllowlist([]AllowRule{{Host: "redis.test"}}, fixedResolver(netip.MustParseAddr("127.0.0.1")))
	conn, err := l.DialContext(t.Context(), "tcp", "redis.test:"+port)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	requireFirstConnIs(t, ln, conn)
}

// TestDialErrors: failures say what happened in a few words, naming the
// address as configured.
func TestDialErrors(t *testing.T) {
	t.Parallel()
	ln, port := listen(t)
	require.NoError(t, ln.Close()) // nothing listens there now
	l := NewAllowlist([]AllowRule{prefixRule("127.0.0.1/32", 0), {Host: "nowhere.test"}},
		fakeResolver(func() netip.Addr { return netip.Addr{} }))

	_, err := l.DialContext(t.Context(), "tcp", "127.0.0.1:"+port)
	require.EqualError(t, err, "dial 127.0.0.1:"+port+": connection refused")
	_, err = l.DialContext(t.Context(), "tcp", "nowhere.test:6379")
	require.EqualError(t, err, "dial nowhere.test:6379: no such host")
	_, err = l.DialContext(t.Context(), "unix", "127.0.0.1:"+port)
	require.EqualError(t, err, "dial 127.0.0.1:"+port+": network unix is not allowed")
}
