package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/fib"
)

// TestLinuxCPFlags: -linuxcp takes ports with or without an address, on the real back-ends only,
// and refuses -route, -neigh and TAP names the kernel cannot take.
func TestLinuxCPFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the error output; "" means the line is good
	}{
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a,10.0.1.1/24", "-port", "b,10.0.2.1/24"}, ""},
		{[]string{"-backend", "afxdp", "-linuxcp", "-port", "a", "-port", "b,mtu=9000", "-tap-prefix", "tap"}, ""},
		{[]string{"-backend", "afpacket", "-port", "a", "-port", "b"}, "only -linuxcp"},
		{[]string{"-linuxcp"}, "-backend afpacket or afxdp"},
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a", "-port", "b", "-route", "0.0.0.0/0,via=10.0.2.2"}, "ip route"},
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a", "-port", "b", "-neigh", "10.0.2.2=02:00:00:00:00:01"}, "ip neigh"},
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a", "-port", "b", "-tap-prefix", "averyverylongname"}, "-tap-prefix"},
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a", "-port", "b", "-tap-prefix", ""}, "-tap-prefix"},
		{[]string{"-backend", "afpacket", "-linuxcp", "-port", "a,mtu=1400,10.0.1.1/24", "-port", "b"}, "prefix length"},
	} {
		var stderr bytes.Buffer
		cfg, err := parseFlags(c.args, &stderr)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && err == nil:
			t.Errorf("%q accepted", c.args)
		case c.want != "" && !strings.Contains(stderr.String(), c.want):
			t.Errorf("%q: error output does not say %q:\n%s", c.args, c.want, stderr.String())
		case c.want == "" && (!cfg.LinuxCP || len(cfg.Ports) != 2):
			t.Errorf("%q: parsed as %+v", c.args, cfg)
		}
	}
}

// TestBuildCP: the -linuxcp router has the TAPs' addresses as its own, their subnets routed to
// unresolved next hops (the kernel's path until the mirror resolves them), and answers no echo
// request itself.
func TestBuildCP(t *testing.T) {
	cfg, err := parseFlags([]string{"-backend", "afpacket", "-linuxcp", "-port", "a", "-port", "b"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	addrs := [][]netip.Prefix{{netip.MustParsePrefix("10.0.1.1/24")}, {netip.MustParsePrefix("10.0.2.1/24"), netip.MustParsePrefix("10.0.3.1/24")}}
	pr, err := buildCP(cfg, memMACs(2), addrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr.table != nil {
		t.Error("a neighbour table in -linuxcp mode")
	}
	if got := pr.router.Ifaces()[1].Addrs; len(got) != 2 || got[1] != addrs[1][1] {
		t.Errorf("interface 1 has addresses %v, want %v", got, addrs[1])
	}
	for _, c := range []struct {
		addr string
		nh   uint32
	}{{"10.0.1.9", 0}, {"10.0.2.9", 1}, {"10.0.3.9", 1}} {
		idx, ok := pr.routes.Lookup(netip.MustParseAddr(c.addr))
		hop, _ := pr.router.NextHops().Get(idx)
		if !ok || idx != c.nh || hop.Flags&fib.NextHopUnresolved == 0 {
			t.Errorf("%s: next hop %d (%v, %+v), want %d, unresolved", c.addr, idx, ok, hop, c.nh)
		}
	}
}
