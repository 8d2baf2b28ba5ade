package adapter

import (
	"net"
	"net/netip"

	"github.com/switchboard/switchboard/services/internal/dnstest"
)

// fakeResolver answers every A/AAAA query with the address answer returns
// at the time: a test changes the answer between a check and a dial to play
// DNS rebinding.
func fakeResolver(answer func() netip.Addr) *net.Resolver { return dnstest.Resolver(answer) }

// fixedResolver answers every query with addr.
func fixedResolver(addr netip.Addr) *net.Resolver { return dnstest.Fixed(addr) }
