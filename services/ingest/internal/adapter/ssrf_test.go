package adapter

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheckTargetLiterals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		host    string
		blocked bool
	}{
		{"8.8.8.8", false},
		{"2606:4700:4700::1111", false},
		{"[2606:4700:4700::1111]", false},
		{"127.0.0.1", true},
		{"::1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"fd00::1", true},
		{"169.254.169.254", true},
		{"fe80::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"100.128.0.1", false},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"[::ffff:10.0.0.1]", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::a00:1", true}, // NAT64 of 10.0.0.1
		{"255.255.255.255", true},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			err := CheckTarget(t.Context(), tc.host, false, nil)
			if tc.blocked {
				require.ErrorIs(t, err, ErrDisallowedTarget)
				require.NoError(t, CheckTarget(t.Context(), tc.host, true, nil), "allowPrivate permits it")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestDialControl(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr    string
		blocked bool
	}{
		{"93.184.216.34:443", false},
		{"127.0.0.1:6379", true},
		{"[::ffff:192.168.0.1]:80", true},
		{"[fe80::1%eth0]:80", true},
		{"[2001:db8::1]:80", false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			err := DialControl(false)("tcp", tc.addr, nil)
			if tc.blocked {
				require.ErrorIs(t, err, ErrDisallowedTarget)
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, DialControl(true)("tcp", tc.addr, nil))
		})
	}
}

func TestDialControlRefusesLoopbackConnect(t *testing.T) {
	t.Parallel()
	d := net.Dialer{Control: DialControl(false)}
	conn, err := d.DialContext(t.Context(), "tcp", "127.0.0.1:6379")
	if conn != nil {
		_ = conn.Close()
	}
	require.ErrorIs(t, err, ErrDisallowedTarget)
}

// fakeResolver answers every A/AAAA query with addr, over an in-memory
// connection speaking DNS over TCP framing.
func fakeResolver(addr netip.Addr) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go serveDNS(server, addr)
			return client, nil
		},
	}
}

func serveDNS(c net.Conn, addr netip.Addr) {
	defer func() { _ = c.Close() }()
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		// Question: name labels from offset 12, then QTYPE, QCLASS.
		i := 12
		for i < len(q) && q[i] != 0 {
			i += int(q[i]) + 1
		}
		qEnd := i + 5
		qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
		var rdata []byte
		switch {
		case qtype == 1 && addr.Is4():
			a := addr.As4()
			rdata = a[:]
		case qtype == 28 && addr.Is6():
			a := addr.As16()
			rdata = a[:]
		}
		resp := append([]byte{}, q[:2]...)          // id
		resp = append(resp, 0x81, 0x80, 0, 1, 0, 0) // flags, qdcount 1, ancount set below
		if rdata != nil {
			resp[7] = 1
		}
		resp = append(resp, 0, 0, 0, 0)
		resp = append(resp, q[12:qEnd]...)
		if rdata != nil {
			resp = append(resp, 0xc0, 12) // name: pointer to the question
			resp = binary.BigEndian.AppendUint16(resp, qtype)
			resp = append(resp, 0, 1, 0, 0, 0, 60) // class IN, TTL 60
			resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
			resp = append(resp, rdata...)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

func TestCheckTargetResolves(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		addr    string
		blocked bool
	}{
		{"public v4", "93.184.216.34", false},
		{"private v4", "10.0.0.7", true},
		{"metadata", "169.254.169.254", true},
		{"loopback v6", "::1", true},
		{"ula v6", "fd12::1", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := fakeResolver(netip.MustParseAddr(tc.addr))
			err := CheckTarget(t.Context(), "service.example.com", false, r)
			if tc.blocked {
				require.ErrorIs(t, err, ErrDisallowedTarget)
				assert.Contains(t, err.Error(), "service.example.com")
			} else {
				require.NoError(t, err)
			}
		})
	}
}
