package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestRealAFPacket runs lagrouter's real-interface mode (AF_PACKET, 2 workers in a fanout group,
// round robin) in a namespace between two others joined by veth pairs (two members, one uplink),
// sends tagged frames into both members and untagged ones into the uplink with an in-test AF_PACKET
// sender, and checks they come out the other side rewritten (TTL, MACs, VLAN tag), spread over both
// members, and that the router's counters add up.
func TestRealAFPacket(t *testing.T) { testReal(t, app.AFPacket, 2) }

// TestRealAFXDP is the same on AF_XDP (one worker: a veth has one queue).
func TestRealAFXDP(t *testing.T) { testReal(t, app.AFXDP, 1) }

func testReal(t *testing.T, backend app.Backend, workers int) {
	nettest.RequirePriv(t)
	lan, rtr, wan := nettest.NewNS(t, "lan"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "wan")
	m0, m0Peer := nettest.Veth(t, rtr, lan, "m0", "m0p")
	m1, m1Peer := nettest.Veth(t, rtr, lan, "m1", "m1p")
	trunk := m0
	uplink, upPeer := nettest.Veth(t, rtr, wan, "up", "upp")
	for _, ns := range []*nettest.NS{lan, rtr, wan} { // no IPv6 chatter in the counters
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}

	var trunkMAC, upMAC frame.MAC
	rtr.Do(func() (err error) {
		if trunkMAC, err = app.IfaceMAC(trunk); err == nil {
			upMAC, err = app.IfaceMAC(uplink)
		}
		return err
	})
	var lanPorts [2]*afpacket.Port
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
	cfg.Backend, cfg.Members, cfg.Uplink, cfg.Workers = backend, []string{m0, m1}, uplink, workers
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var tally app.Tally
	var runErr error
	started := make(chan struct{})
	cfg.ready = func() { close(started) }
	var wg sync.WaitGroup
	wg.Add(1)
	finished := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(finished)
		runErr = rtr.Do(func() error {
			var err error
			tally, err = runReal(ctx, cfg, &out)
			return err
		})
	}()
	select {
	case <-started: // sockets bound, workers polling
	case <-finished:
		t.Fatalf("router stopped at once: %v\n%s", runErr, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}

	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	const perSide = 200
	for _, c := range []struct {
		p        *afpacket.Port
		upstream bool
		mac      frame.MAC
	}{ // the far side's own spread: half the hosts on each member
		{lanPorts[0], true, trunkMAC}, {lanPorts[1], true, trunkMAC}, {wanPort, false, upMAC}, {wanPort, false, upMAC},
	} {
		if _, err := trunkgen.SendTraffic(c.p, pool, c.mac, c.upstream, perSide); err != nil {
			t.Error(err)
		}
	}

	// Collect what comes out on each side.
	gotUp, gotDown := 0, 0
	var perMember [2]int
	rb := frame.NewBatch(64)
	deadline := time.Now().Add(3 * time.Second)
	for (gotUp < 2*perSide || gotDown < 2*perSide) && time.Now().Before(deadline) {
		if n, _ := wanPort.Recv(rb); n > 0 {
			for i := range rb.Frames {
				if err := trunkgen.CheckUpstream(rb.Bytes(i), upMAC); err != nil {
					t.Error(err)
					continue
				}
				gotUp++
			}
			rb.Free()
		}
		for m, lanPort := range lanPorts {
			if n, _ := lanPort.Recv(rb); n > 0 {
				for i := range rb.Frames {
					if err := trunkgen.CheckDownstream(&rb.Frames[i], rb.Bytes(i), trunkMAC); err != nil {
						t.Error(err)
						continue
					}
					gotDown++
					perMember[m]++
				}
				rb.Free()
			}
		}
		if gotUp+gotDown < 4*perSide {
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	t.Logf("router output:\n%s", out.String())
	if gotUp != 2*perSide || gotDown != 2*perSide {
		t.Errorf("received %d upstream and %d downstream frames, sent %d each way", gotUp, gotDown, 2*perSide)
	}
	if perMember[0] == 0 || perMember[1] == 0 {
		t.Errorf("downstream frames per member %v: round robin should use both", perMember)
	}
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if tally.Forwarded < 4*perSide {
		t.Errorf("router forwarded %d, want at least %d", tally.Forwarded, 4*perSide)
	}
}
