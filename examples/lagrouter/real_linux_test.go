package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestRealAFPacket runs lagrouter's real-interface mode (AF_PACKET, 2 workers in a fanout group,
// round robin) in a namespace between two others joined by veth pairs (two members, one uplink),
// with no static neighbour entry on either side. Upstream is a Linux host (192.0.2.2, the default
// gateway) that resolves the router by ARP and pings VLAN hosts through it; behind the members,
// where this kernel can have no VLAN devices or bond (no 8021q or bonding module), packet sockets
// play the switch and the VLAN hosts (trunkgen.Hosts: they answer the router's tagged ARP requests
// and echo requests out of the member each came in on). The test checks the pings (through the
// router, to it, TTL 1), that tagged frames sent into both members and untagged ones into the
// uplink come out the other side rewritten (TTL, the MACs the router resolved by ARP, VLAN tag),
// spread over both members, that the upstream host's `ip neigh` has the router REACHABLE and the
// router's table the gateway and the hosts, and that the router's counters add up.
func TestRealAFPacket(t *testing.T) { testReal(t, app.AFPacket, 2) }

// TestRealAFXDP is the same on AF_XDP (one worker: a veth has one queue).
func TestRealAFXDP(t *testing.T) { testReal(t, app.AFXDP, 1) }

func testReal(t *testing.T, backend app.Backend, workers int) {
	nettest.RequirePriv(t)
	if _, err := exec.LookPath("ping"); err != nil {
		if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
			t.Fatal("WIRESPEED_REQUIRE_PRIV=1 but ping is missing (apt-get install iputils-ping)")
		}
		t.Skip("needs ping (iputils-ping)")
	}
	lan, rtr, wan := nettest.NewNS(t, "lan"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "wan")
	m0, m0Peer := nettest.Veth(t, rtr, lan, "m0", "m0p")
	m1, m1Peer := nettest.Veth(t, rtr, lan, "m1", "m1p")
	trunk := m0 // the aggregate's MAC is member 0's
	uplink, upPeer := nettest.Veth(t, rtr, wan, "up", "upp")
	for _, ns := range []*nettest.NS{lan, rtr, wan} { // no IPv6 chatter in the counters
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	// The upstream host: the gateway 192.0.2.2 (with the MAC CheckUpstream expects), a route to the
	// VLANs through the router, no neighbour entry for it.
	wan.Exec(t, "ip", "link", "set", upPeer, "address", trunkgen.GatewayMAC.String())
	wan.Exec(t, "ip", "addr", "add", "192.0.2.2/24", "dev", upPeer)
	wan.Exec(t, "ip", "route", "add", "10.0.0.0/16", "via", "192.0.2.1", "dev", upPeer)

	var trunkMAC, upMAC frame.MAC
	rtr.Do(func() (err error) {
		if trunkMAC, err = app.IfaceMAC(trunk); err == nil {
			upMAC, err = app.IfaceMAC(uplink)
		}
		return err
	})
	var lanPorts [numMembers]*afpacket.Port
	var wanPort *afpacket.Port
	for i, name := range []string{m0Peer, m1Peer} {
		if err := lan.Do(func() (err error) { lanPorts[i], err = afpacket.Open(name, nil); return err }); err != nil {
			t.Fatal(err)
		}
		defer lanPorts[i].Close()
	}
	if err := wan.Do(func() (err error) { wanPort, err = afpacket.Open(upPeer, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer wanPort.Close()

	cfg := defaultConfig()
	cfg.Backend, cfg.Members, cfg.Uplink, cfg.Workers, cfg.Interval = backend, []string{m0, m1}, uplink, workers, time.Hour
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	hosts := trunkgen.NewHosts([]xmit.Port{lanPorts[0], lanPorts[1]}, pool, trunkMAC)
	hosts.Start()
	defer hosts.Stop()

	// Linux pings through the router, and the router itself.
	ping := func(args ...string) string {
		t.Helper()
		o, _ := exec.Command("ip", append([]string{"netns", "exec", wan.Name, "ping", "-n", "-W", "2"}, args...)...).CombinedOutput()
		return string(o)
	}
	received := regexp.MustCompile(`(\d+) received`)
	expectReplies := func(what, o string, n int) {
		t.Helper()
		if m := received.FindStringSubmatch(o); m == nil || m[1] != fmt.Sprint(n) || strings.Contains(o, "DUP!") {
			t.Errorf("%s: want %d replies, no duplicate:\n%s", what, n, o)
		}
	}
	expectReplies("ping through the router to a VLAN 1 host", ping("-c", "3", "-i", "0.2", "10.0.1.2"), 3)
	expectReplies("ping through the router to a VLAN 17 host", ping("-c", "2", "-i", "0.2", "10.0.17.99"), 2)
	expectReplies("ping of the router's uplink address", ping("-c", "2", "-i", "0.2", "192.0.2.1"), 2)
	if o := ping("-c", "1", "-t", "1", "10.0.3.7"); !strings.Contains(o, "From 192.0.2.1") || !strings.Contains(o, "Time to live exceeded") {
		t.Errorf("ping -t 1: want time exceeded from 192.0.2.1:\n%s", o)
	}

	// Traffic both ways: SendTraffic's upstream frames (to the gateway, resolved), 200 into each
	// member (the far side's own spread), and twice 200 downstream frames to 200 hosts the router
	// resolves on their VLANs.
	const perSide = 2 * 200
	for _, c := range []struct {
		p        *afpacket.Port
		upstream bool
		mac      frame.MAC
	}{{lanPorts[0], true, trunkMAC}, {lanPorts[1], true, trunkMAC}, {wanPort, false, upMAC}, {wanPort, false, upMAC}} {
		if _, err := trunkgen.SendTraffic(c.p, pool, c.mac, c.upstream, perSide/2); err != nil {
			t.Error(err)
		}
	}
	gotUp := 0
	rb := frame.NewBatch(64)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if d := hosts.Seen().Delivered; gotUp >= perSide && d[0]+d[1] >= perSide {
			break
		}
		if n, _ := wanPort.Recv(rb); n > 0 {
			for i := range rb.Frames {
				d := rb.Bytes(i)
				if len(d) < 34 || frame.Ether(d).Type() != frame.TypeIPv4 || frame.IPv4(d[14:]).Protocol() != frame.ProtoUDP {
					continue // the upstream host's own ARP and pings
				}
				if err := trunkgen.CheckUpstream(d, upMAC); err != nil {
					t.Error(err)
					continue
				}
				gotUp++
			}
			rb.Free()
			continue
		}
		time.Sleep(time.Millisecond)
	}

	// The upstream host learnt the router's MAC by ARP and confirms it: REACHABLE.
	var neigh string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ping("-c", "1", "192.0.2.1")
		if neigh = wan.Exec(t, "ip", "neigh", "show", "192.0.2.1", "dev", upPeer); strings.Contains(neigh, upMAC.String()) && strings.Contains(neigh, "REACHABLE") {
			break
		}
	}
	if !strings.Contains(neigh, upMAC.String()) || !strings.Contains(neigh, "REACHABLE") {
		t.Errorf("ip neigh on the upstream host: want the router's %s REACHABLE:\n%s", upMAC, neigh)
	}

	tally, out := rt.Stop()
	seen := hosts.Stop()
	if rt.Err() != nil {
		t.FailNow()
	}
	t.Logf("router output:\n%s", out)
	for _, err := range seen.Errors {
		t.Error(err)
	}
	if d := seen.Delivered; gotUp != perSide || d[0]+d[1] != perSide {
		t.Errorf("received %d upstream and %d downstream frames, sent %d each way", gotUp, d[0]+d[1], perSide)
	}
	if d := seen.Delivered; d[0] == 0 || d[1] == 0 {
		t.Errorf("downstream frames per member %v: round robin should use both", d)
	}
	if seen.ARP < perSide/2 || seen.Echoes < 5 {
		t.Errorf("the VLAN hosts answered %d ARP requests (want %d or more) and %d echo requests (want 5 or more)", seen.ARP, perSide/2, seen.Echoes)
	}
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if tally.Forwarded < 2*perSide || tally.Neigh == nil || tally.Neigh.Failed != 0 {
		t.Errorf("router forwarded %d, want at least %d; neighbours %+v", tally.Forwarded, 2*perSide, tally.Neigh)
	}
	for _, want := range []string{
		"192.0.2.2 dev " + uplink + " lladdr " + trunkgen.GatewayMAC.String() + " ",
		"10.0.1.2 dev vlan101 lladdr " + trunkgen.HostMAC(1, 2).String() + " ",
		"10.0.17.99 dev vlan117 lladdr " + trunkgen.HostMAC(17, 99).String() + " ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the router's neighbour table lacks %q", want)
		}
	}
}
