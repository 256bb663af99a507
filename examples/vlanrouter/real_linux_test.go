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

// TestRealAFPacket runs vlanrouter's real-interface mode (AF_PACKET, 2 workers in a fanout group)
// in a namespace between two others joined by veth pairs, with no static neighbour entry on either
// side. Upstream is a Linux host (192.0.2.2, the default gateway) that resolves the router by ARP
// and pings VLAN hosts through it; behind the trunk, where this kernel can have no VLAN devices (no
// 8021q module), a packet socket plays the VLAN hosts (trunkgen.AnswerHost: it answers the
// router's tagged ARP requests and echo requests). The test checks the pings (through the router,
// to it, TTL 1), that tagged frames sent into the trunk and untagged ones into the uplink come out
// the other side rewritten (TTL, the MACs the router resolved by ARP, VLAN tag), that the upstream
// host's `ip neigh` has the router REACHABLE and the router's table the gateway and the hosts, and
// that the router's counters add up.
func TestRealAFPacket(t *testing.T) { testReal(t, app.AFPacket, 2, 0, false) }

// TestRealAFXDP is the same on AF_XDP (one worker: a veth has one queue), with -spin.
func TestRealAFXDP(t *testing.T) { testReal(t, app.AFXDP, 1, 0, true) }

// TestRealAFPacketPipeline is TestRealAFPacket with -pipeline: the 2 workers route and hand their
// frames (which point into their own sockets' rings) to 2 transmit workers, one per interface,
// which send them and release them to the rings they came from.
func TestRealAFPacketPipeline(t *testing.T) { testReal(t, app.AFPacket, 2, 2, false) }

// testReal runs the test with backend and workers; txWorkers > 0: -pipeline with that many
// transmit workers; spin: -spin.
func testReal(t *testing.T, backend app.Backend, workers, txWorkers int, spin bool) {
	nettest.RequirePriv(t)
	if _, err := exec.LookPath("ping"); err != nil {
		if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
			t.Fatal("WIRESPEED_REQUIRE_PRIV=1 but ping is missing (apt-get install iputils-ping)")
		}
		t.Skip("needs ping (iputils-ping)")
	}
	lan, rtr, wan := nettest.NewNS(t, "lan"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "wan")
	trunk, trunkPeer := nettest.Veth(t, rtr, lan, "trk", "trkp")
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
	var lanPort, wanPort *afpacket.Port
	if err := lan.Do(func() (err error) { lanPort, err = afpacket.Open(trunkPeer, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer lanPort.Close()
	if err := wan.Do(func() (err error) { wanPort, err = afpacket.Open(upPeer, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer wanPort.Close()

	cfg := defaultConfig()
	cfg.Backend, cfg.Trunk, cfg.Uplink, cfg.Workers, cfg.Interval = backend, trunk, uplink, workers, time.Hour
	cfg.Spin = spin
	if txWorkers > 0 {
		cfg.Pipeline, cfg.TxWorkers = true, txWorkers
	}
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	hosts := trunkgen.NewHosts([]xmit.Port{lanPort}, pool, trunkMAC)
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

	// Traffic both ways: SendTraffic's 200 upstream frames (to the gateway, resolved) and 200
	// downstream frames to 200 hosts the router resolves on their VLANs.
	const perSide = 200
	for _, c := range []struct {
		p        *afpacket.Port
		upstream bool
		mac      frame.MAC
	}{{lanPort, true, trunkMAC}, {wanPort, false, upMAC}} {
		if _, err := trunkgen.SendTraffic(c.p, pool, c.mac, c.upstream, perSide); err != nil {
			t.Error(err)
		}
	}
	gotUp := 0
	rb := frame.NewBatch(64)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if gotUp >= perSide && hosts.Seen().Delivered[0] >= perSide {
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
	if gotUp != perSide || seen.Delivered[0] != perSide {
		t.Errorf("received %d upstream and %d downstream frames, sent %d each way", gotUp, seen.Delivered[0], perSide)
	}
	if seen.ARP < perSide || seen.Echoes < 5 {
		t.Errorf("the VLAN hosts answered %d ARP requests (want %d or more) and %d echo requests (want 5 or more)", seen.ARP, perSide, seen.Echoes)
	}
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if tally.Forwarded < 2*perSide || tally.Neigh == nil || tally.Neigh.Failed != 0 {
		t.Errorf("router forwarded %d, want at least %d; neighbours %+v", tally.Forwarded, 2*perSide, tally.Neigh)
	}
	if p := tally.Pipeline; (p != nil) != (txWorkers > 0) || p != nil && (p.Taken != tally.Forwarded || p.TxQueue.Sent != tally.Tx || p.Released() != 0) {
		t.Errorf("pipeline with %d transmit workers: %+v; tally %+v", txWorkers, p, tally)
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
