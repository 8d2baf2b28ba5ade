package adapter

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
)

// fakeResolver answers every A/AAAA query with the address answer returns
// at the time, over an in-memory connection speaking DNS over TCP framing:
// a test changes the answer between a check and a dial to play DNS
// rebinding.
func fakeResolver(answer func() netip.Addr) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go serveDNS(server, answer())
			return client, nil
		},
	}
}

// fixedResolver answers every query with addr.
func fixedResolver(addr netip.Addr) *net.Resolver {
	return fakeResolver(func() netip.Addr { return addr })
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
