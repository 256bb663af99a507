package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlags: bad command lines are errors that name the flag and the problem, never a panic or a
// silent change of meaning; good ones parse.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	real := []string{"-backend", "afpacket", "-members", "m0,m1", "-uplink", "u0"}
	with := func(args ...string) []string { return append(append([]string(nil), real...), args...) }
	for _, c := range []struct {
		args []string
		want string // in the error output; "" means the line is good
	}{
		{nil, ""},
		{[]string{"-lag", "xor", "-hash", "layer2", "-fail-at", "1s", "-fail-for", "1s", "-miimon", "0"}, ""},
		{[]string{"-duration", "1s", "-rate", "1000", "-bad", "1", "-vlans", "1", "-batch", "512"}, ""},
		{[]string{"-routes", file("ok", "10.0.0.0/8 0\n198.18.0.0/15 20\n")}, ""},
		{with("-workers", "4", "-batch", "1024", "-pcap-sample", "10"), ""},
		{with("-iproute", "-routes", file("okip", "default via 192.0.2.2 dev u0\n")), ""},
		{[]string{"-gateway", "192.0.2.254"}, ""},
		{[]string{"-gateway", "gw"}, "\"gw\": not an IPv4 address"},
		{[]string{"-gateway", "10.0.1.2"}, "-gateway 10.0.1.2: not a neighbour address on the interface's subnet"},
		{[]string{"-gateway", "192.0.2.1"}, "-gateway 192.0.2.1"},
		{[]string{"-nexthop", "trunk=01:00:5e:00:00:01"}, "-nexthop trunk=01:00:5e:00:00:01: neigh: not a unicast MAC"},
		{[]string{"-iproute", "-routes", file("via", "default via 192.0.3.1\n")}, "via 192.0.3.1"},
		{[]string{"-interval", "0"}, "-interval 0s"},
		{[]string{"-duration", "-1s"}, "-duration -1s"},
		{[]string{"-workers", "0"}, "-workers 0"},
		{[]string{"-workers", "2"}, "one worker"},
		{[]string{"-batch", "0"}, "-batch 0"},
		{[]string{"-batch", "100000"}, "-batch 100000"},
		{[]string{"-batch", "600"}, "-batch 600: want 1-512 in memory"},
		{[]string{"-vlans", "201"}, "-vlans 201"},
		{[]string{"-rate", "-1"}, "-rate -1"},
		{[]string{"-bad", "-1"}, "-bad -1"},
		{[]string{"-bad", "2"}, "-bad 2"},
		{[]string{"-pcap-sample", "0"}, "-pcap-sample 0"},
		{[]string{"-nexthop", "vlan999=02:00:00:00:00:01"}, "-nexthop vlan999: no such interface"},
		{[]string{"-routes", file("nh", "10.9.0.0/16 999\n")}, "next hop 999: no such next hop"},
		{[]string{"-routes", file("hb", "10.1.2.3/16 1\n")}, "host bits set in 10.1.2.3/16"},
		{[]string{"-iproute"}, "-iproute"},
		{[]string{"-lag", "ab"}, `-lag "ab"`},
		{[]string{"-lag", "802.3ad", "-hash", "layer2+3", "-lacp-rate", "slow", "-lacp-active=false", "-min-links", "2", "-log", "json"}, ""},
		{with("-lag", "lacp"), ""},
		{[]string{"-lag", "lacp", "-lacp-rate", "quick"}, `-lacp-rate "quick": fast or slow`},
		{[]string{"-lag", "lacp", "-min-links", "3"}, "-min-links 3: want 0-2"},
		{[]string{"-log", "xml"}, `-log "xml": want text or json`},
		{[]string{"-lag", "xor", "-hash", "layer9"}, "-hash"},
		{[]string{"-miimon", "-1ms"}, "-miimon -1ms"},
		{[]string{"-fail-at", "-1s"}, "-fail-at -1s"},
		{[]string{"-fail-at", "1s", "-fail-for", "-1s"}, "-fail-for -1s"},
		{[]string{"-fail-for", "1s"}, "no -fail-at"},
		{with("-fail-at", "1s"), "-fail-at is for -backend mem"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"-backend", "dpdk"}, "unknown backend"},
		{[]string{"-backend", "afpacket"}, "want exactly 2 interfaces"},
		{[]string{"-backend", "afpacket", "-members", "m0", "-uplink", "u0"}, `-members "m0": want exactly 2`},
		{[]string{"-backend", "afpacket", "-members", "m0,m1,m2", "-uplink", "u0"}, `-members "m0,m1,m2": want exactly 2`},
		{[]string{"-backend", "afpacket", "-members", "m0,", "-uplink", "u0"}, "empty interface name"},
		{[]string{"-backend", "afpacket", "-members", "m0,m0", "-uplink", "u0"}, "-members m0,m0: the same interface twice"},
		{[]string{"-backend", "afpacket", "-members", "m0,m1"}, "needs -uplink"},
		{[]string{"-backend", "afxdp", "-members", "m0,u0", "-uplink", "u0"}, "-uplink u0 is also in -members m0,u0"},
		{[]string{"-members", "m0,m1", "-uplink", "u0"}, "-members and -uplink are for -backend afpacket or afxdp"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(c.args, &stderr)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && err == nil:
			t.Errorf("%q accepted", c.args)
		case c.want != "" && !strings.Contains(stderr.String(), c.want):
			t.Errorf("%q: error output does not say %q:\n%s", c.args, c.want, stderr.String())
		}
	}
}
