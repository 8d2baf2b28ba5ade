// Package dnstest is test-only: a DNS server in memory that answers every
// A or AAAA query with one address a test chooses (and may change between
// two lookups, to play DNS rebinding), behind a *net.Resolver that code
// under test takes in place of the system's.
package dnstest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
)

// Resolver returns a resolver whose every lookup asks answer for the
// address to give: A queries get it when it is IPv4, AAAA queries when it is
// IPv6, and any other query (or an invalid address) gets no address. It
// speaks DNS over TCP framing on an in-memory pipe, so nothing listens.
func Resolver(answer func() netip.Addr) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go serve(server, answer())
			return client, nil
		},
	}
}

// Fixed returns a resolver that answers every name with addr.
func Fixed(addr netip.Addr) *net.Resolver { return Resolver(func() netip.Addr { return addr }) }

// serve answers each query on c with addr until c closes.
func serve(c net.Conn, addr netip.Addr) {
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
		resp := answerQuery(q, addr)
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp))) //nolint:gosec // a reply to one question fits
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// answerQuery builds the reply to the one question of q.
func answerQuery(q []byte, addr netip.Addr) []byte {
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
		resp = append(resp, 0, 1, 0, 0, 0, 0)                          // class IN, TTL 0: the answer may change
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata))) //nolint:gosec // 4 or 16
		resp = append(resp, rdata...)
	}
	return resp
}
