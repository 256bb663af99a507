package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestLinuxPeerAFPacket and TestLinuxPeerAFXDP run the router between two Linux hosts (network
// namespaces joined to the router's by veth pairs), with no static neighbour entry on any side, and
// hold it to what Linux itself observes: pings through it and to it (answered once; ARP both ways,
// the hosts' `ip neigh` then shows the router REACHABLE), ping -t 1 (time exceeded from the
// router's address), tracepath (the router is hop 1), a 3000-byte ping without DF towards a
// 1400-byte egress (the router fragments, the far host reassembles and answers), path MTU discovery
// (a 1500-byte packet with DF gets "frag needed, mtu 1400", and the sender's route cache then holds
// mtu 1400), a host that is not there (ICMP host unreachable from the router after its ARP probes)
// and a host that changes its MAC (traffic follows its gratuitous ARP).
func TestLinuxPeerAFPacket(t *testing.T) { testLinuxPeer(t, app.AFPacket) }

func TestLinuxPeerAFXDP(t *testing.T) { testLinuxPeer(t, app.AFXDP) }

func testLinuxPeer(t *testing.T, backend app.Backend) {
	nettest.RequirePriv(t)
	for _, tool := range []string{"ping", "tracepath", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install iputils-ping iputils-tracepath ethtool)", tool)
			}
			t.Skipf("needs %s (iputils-ping, iputils-tracepath, ethtool)", tool)
		}
	}
	h1, rtr, h2 := nettest.NewNS(t, "h1"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "h2")
	r0, e1 := nettest.Veth(t, rtr, h1, "r0", "h1e")
	r1, e2 := nettest.Veth(t, rtr, h2, "r1", "h2e")
	for _, ns := range []*nettest.NS{h1, rtr, h2} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	// A host's veth leaves UDP and TCP checksums for the "hardware" to fill in (CHECKSUM_PARTIAL).
	// AF_PACKET says so and the port completes them; AF_XDP does not, so there the hosts compute
	// their own.
	if backend == app.AFXDP {
		h1.Exec(t, "ethtool", "-K", e1, "tx", "off")
		h2.Exec(t, "ethtool", "-K", e2, "tx", "off")
	}
	// The h1 side carries 3200-byte packets (within what XDP on veth and a 4 KiB UMEM chunk take).
	rtr.Exec(t, "ip", "link", "set", r0, "mtu", "3200")
	h1.Exec(t, "ip", "link", "set", e1, "mtu", "3200")
	mac := func(ns *nettest.NS, dev string) string {
		return strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+dev+"/address"))
	}
	r0MAC, r1MAC, e1MAC := mac(rtr, r0), mac(rtr, r1), mac(h1, e1)
	h1.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	h1.Exec(t, "ip", "route", "add", "default", "via", "10.0.1.1")
	h2.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	h2.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")
	h2.Exec(t, "sysctl", "-qw", "net.ipv4.conf."+e2+".arp_notify=1") // gratuitous ARP on a MAC change

	rt := startRouter(t, rtr, "-backend", string(backend), "-port", r0+",10.0.1.1/24,mtu=3200", "-port", r1+",10.0.2.1/24,mtu=1400")

	ping := func(args ...string) string {
		t.Helper()
		o, _ := exec.Command("ip", append([]string{"netns", "exec", h1.Name, "ping", "-n", "-W", "2"}, args...)...).CombinedOutput()
		return string(o)
	}
	received := regexp.MustCompile(`(\d+) received`)
	expectReplies := func(what, o string, n int) {
		t.Helper()
		m := received.FindStringSubmatch(o)
		if m == nil || m[1] != fmt.Sprint(n) || strings.Contains(o, "DUP!") {
			t.Errorf("%s: want %d replies, no duplicate:\n%s", what, n, o)
		}
	}
	first := ping("-c", "3", "-i", "0.2", "10.0.2.2")
	expectReplies("ping through the router", first, 3)
	// The first echo waited for the router to resolve 10.0.2.2 (and h2 to resolve the router).
	if rtt := regexp.MustCompile(`icmp_seq=(\d) ttl=\d+ time=([\d.]+) ms`).FindAllStringSubmatch(first, -1); len(rtt) == 3 {
		t.Logf("round trips through the router: %s ms (the first with ARP on the way), then %s and %s ms", rtt[0][2], rtt[1][2], rtt[2][2])
	}
	expectReplies("ping of the router's address", ping("-c", "3", "-i", "0.2", "10.0.1.1"), 3)
	expectReplies("ping of the router's far address", ping("-c", "2", "-i", "0.2", "10.0.2.1"), 2)
	if o := ping("-c", "1", "-t", "1", "10.0.2.2"); !strings.Contains(o, "From 10.0.1.1") || !strings.Contains(o, "Time to live exceeded") {
		t.Errorf("ping -t 1: want time exceeded from 10.0.1.1:\n%s", o)
	}
	expectReplies("3000 bytes without DF (fragmented by the router)", ping("-c", "2", "-i", "0.2", "-M", "dont", "-s", "3000", "10.0.2.2"), 2)
	o, _ := exec.Command("ip", "netns", "exec", h1.Name, "tracepath", "-n", "-m", "5", "10.0.2.2").CombinedOutput()
	if !regexp.MustCompile(`(?m)^ 1:\s+10\.0\.1\.1 `).Match(o) || !strings.Contains(string(o), "reached") {
		t.Errorf("tracepath: want hop 1 = 10.0.1.1 and the destination reached:\n%s", o)
	}
	h1.Exec(t, "ip", "route", "flush", "cache")
	if o := ping("-c", "1", "-M", "do", "-s", "1472", "10.0.2.2"); !strings.Contains(o, "mtu = 1400") {
		t.Errorf("ping -M do -s 1472: want frag needed with mtu = 1400:\n%s", o)
	}
	if o := h1.Exec(t, "ip", "route", "get", "10.0.2.2"); !strings.Contains(o, "mtu 1400") {
		t.Errorf("after frag needed, the sender's route cache lacks mtu 1400:\n%s", o)
	}
	expectReplies("ping with DF at the learnt MTU", ping("-c", "1", "-M", "do", "-s", "1372", "10.0.2.2"), 1)
	if o := ping("-c", "1", "-W", "8", "10.0.2.77"); !strings.Contains(o, "From 10.0.1.1") || !strings.Contains(o, "Destination Host Unreachable") {
		t.Errorf("ping of a host that is not there: want host unreachable from 10.0.1.1:\n%s", o)
	}
	const newMAC = "02:00:00:0a:0b:0c"
	h2.Exec(t, "ip", "link", "set", "dev", e2, "address", newMAC)
	o = []byte(ping("-c", "10", "-i", "0.1", "10.0.2.2"))
	m := received.FindStringSubmatch(string(o))
	if m == nil || m[1] == "0" {
		t.Errorf("after the far host's MAC change, no replies:\n%s", o)
	} else {
		t.Logf("after the far host's MAC change: %s of 10 answered", m[1])
	}

	// Each host learnt the router's MAC by ARP; the one that learnt it from the router's request
	// confirms it with a unicast probe after its delay (5 s): both end REACHABLE.
	for _, c := range []struct {
		ns        *nettest.NS
		dev, addr string
		mac       string
	}{{h1, e1, "10.0.1.1", r0MAC}, {h2, e2, "10.0.2.1", r1MAC}} {
		var o string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			c.ns.Exec(t, "ping", "-c", "1", "-W", "1", c.addr)
			if o = c.ns.Exec(t, "ip", "neigh", "show", c.addr, "dev", c.dev); strings.Contains(o, c.mac) && strings.Contains(o, "REACHABLE") {
				break
			}
		}
		if !strings.Contains(o, c.mac) || !strings.Contains(o, "REACHABLE") {
			t.Errorf("ip neigh on the host: want the router's %s REACHABLE:\n%s", c.mac, o)
		}
	}

	tally, out := rt.Stop()
	c := tally.Drops
	t.Logf("router output:\n%s", out)
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if c.Echoed < 5 || c.Fragmented < 2 || c.ICMPErrors < 3 {
		t.Errorf("counters: %d echo replies (want 5), %d packets fragmented (want 2), %d ICMP errors (want 3 or more)", c.Echoed, c.Fragmented, c.ICMPErrors)
	}
	for _, want := range []string{"10.0.1.2 dev " + r0 + " lladdr " + e1MAC, "10.0.2.2 dev " + r1 + " lladdr " + newMAC} {
		if !strings.Contains(out, want) {
			t.Errorf("the router's neighbour table lacks %q", want)
		}
	}
}
