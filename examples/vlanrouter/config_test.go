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
	real := []string{"-backend", "afpacket", "-trunk", "t0", "-uplink", "u0"}
	with := func(args ...string) []string { return append(append([]string(nil), real...), args...) }
	for _, c := range []struct {
		args []string
		want string // in the error output; "" means the line is good
	}{
		{nil, ""},
		{[]string{"-duration", "1s", "-rate", "1000", "-bad", "0.5", "-vlans", "200", "-batch", "512"}, ""},
		{[]string{"-bad", "0"}, ""},
		{[]string{"-bad", "1"}, ""},
		{[]string{"-nexthop", "uplink=02:00:00:00:00:01,trunk=02:00:00:00:00:02,vlan120=02:00:00:00:00:03"}, ""},
		{[]string{"-routes", file("ok", "10.0.0.0/8 0\n198.18.0.0/15 20\n")}, ""},
		{with("-workers", "4", "-batch", "1024", "-pcap", "/tmp/x.pcapng", "-pcap-sample", "100"), ""},
		{with("-iproute", "-routes", file("okip", "default via 192.0.2.2 dev u0\n10.0.7.0/24 dev vlan107\n")), ""},
		{[]string{"-gateway", "192.0.2.254"}, ""},
		{with("-idle-spin", "50us"), ""},
		{with("-idle-spin", "-1us"), "-idle-spin -1µs: want 0"},
		{with("-idle-spin", "2s"), "-idle-spin 2s: want 0"},
		{[]string{"-pipeline"}, ""},
		{[]string{"-pipeline", "-tx-workers", "2"}, ""},
		{with("-pipeline", "-workers", "8", "-tx-workers", "2"), ""},
		{[]string{"-pipeline", "-tx-workers", "0"}, "-tx-workers 0: want 1-2"},
		{with("-pipeline", "-tx-workers", "3"), "-tx-workers 3: want 1-2"},
		{[]string{"-tx-workers", "2"}, "-tx-workers 2: transmit workers are for -pipeline"},
		{[]string{"-pipeline", "-workers", "2"}, "one receive worker"},
		{[]string{"-gateway", "gw"}, "\"gw\": not an IPv4 address"},
		{[]string{"-gateway", "10.0.1.2"}, "-gateway 10.0.1.2: not a neighbour address on the interface's subnet"},
		{[]string{"-gateway", "192.0.2.1"}, "-gateway 192.0.2.1"},
		{[]string{"-nexthop", "trunk=01:00:5e:00:00:01"}, "-nexthop trunk=01:00:5e:00:00:01: neigh: not a unicast MAC"},
		{[]string{"-iproute", "-routes", file("via", "default via 192.0.3.1\n")}, "via 192.0.3.1"},
		{[]string{"-interval", "0"}, "-interval 0s"},
		{[]string{"-interval", "-1s"}, "-interval -1s"},
		{[]string{"-duration", "-1s"}, "-duration -1s"},
		{[]string{"-workers", "0"}, "-workers 0"},
		{with("-workers", "65"), "-workers 65"},
		{[]string{"-workers", "2"}, "one worker"},
		{[]string{"-batch", "0"}, "-batch 0"},
		{[]string{"-batch", "100000"}, "-batch 100000"},
		{with("-batch", "1025"), "-batch 1025"},
		{[]string{"-batch", "1000"}, "-batch 1000: want 1-512 in memory"},
		{[]string{"-vlans", "0"}, "-vlans 0"},
		{[]string{"-vlans", "201"}, "-vlans 201"},
		{[]string{"-rate", "-5"}, "-rate -5"},
		{[]string{"-bad", "-0.1"}, "-bad -0.1"},
		{[]string{"-bad", "1.5"}, "-bad 1.5"},
		{[]string{"-bad", "NaN"}, "-bad NaN"},
		{[]string{"-pcap-sample", "0"}, "-pcap-sample 0"},
		{[]string{"-nexthop", "vlan999=02:00:00:00:00:01"}, "-nexthop vlan999: no such interface"},
		{[]string{"-vlans", "5", "-nexthop", "vlan106=02:00:00:00:00:01"}, "-nexthop vlan106: no such interface"},
		{[]string{"-nexthop", "uplink"}, "NAME=MAC"},
		{[]string{"-nexthop", "uplink=zz"}, "bad MAC"},
		{[]string{"-routes", file("nh", "10.9.0.0/16 999\n")}, "next hop 999: no such next hop"},
		{[]string{"-routes", file("hb", "10.1.2.3/16 1\n")}, "host bits set in 10.1.2.3/16"},
		{[]string{"-routes", filepath.Join(dir, "none")}, "-routes " + filepath.Join(dir, "none")},
		{with("-iproute", "-routes", file("dev", "10.1.0.0/16 dev wlan0\n")), "wlan0"},
		{[]string{"-iproute"}, "-iproute"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"-duration", "1s", "x", "y"}, "unexpected arguments"},
		{[]string{"-backend", "dpdk"}, "unknown backend"},
		{[]string{"-backend", "afpacket"}, "needs -trunk and -uplink"},
		{[]string{"-backend", "afxdp", "-trunk", "t0"}, "needs -trunk and -uplink"},
		{[]string{"-backend", "afpacket", "-trunk", "x", "-uplink", "x"}, "-trunk x -uplink x: the same interface twice"},
		{[]string{"-trunk", "t0", "-uplink", "u0"}, "-trunk and -uplink are for -backend afpacket or afxdp"},
		{[]string{"-nosuchflag"}, "not defined"},
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
