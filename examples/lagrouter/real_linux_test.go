package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/vlan"
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
	b := frame.NewBatch(50)
	send := func(p *afpacket.Port, upstream bool) {
		for sent := 0; sent < perSide; sent += 50 {
			pool.Alloc(b, 50)
			for i := range b.Frames {
				n := sent + i
				if upstream { // host on VLAN 101..120 → 198.18.0.n
					vl := 1 + n%20
					b.Frames[i].Resize(64)
					d := b.Bytes(i)
					e := frame.Ether(d)
					e.SetDst(trunkMAC)
					e.SetSrc(hostMAC(vl, 2))
					binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
					binary.BigEndian.PutUint16(d[14:], vidOf(vl))
					binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
					udp(d[18:], 0x0a000002|uint32(vl)<<8, 0xc6120000|uint32(n), 64)
				} else { // upstream → host 10.0.vl.n
					vl := 1 + n%20
					b.Frames[i].Resize(60)
					d := b.Bytes(i)
					e := frame.Ether(d)
					e.SetDst(upMAC)
					e.SetSrc(gatewayMAC)
					e.SetType(frame.TypeIPv4)
					udp(d[14:], 0xc6120001, 0x0a000000|uint32(vl)<<8|uint32(2+n%200), 33)
				}
			}
			if n, err := p.Send(b); n != 50 || err != nil {
				t.Errorf("sender queued %d of 50: %v", n, err)
			}
		}
	}
	send(lanPorts[0], true) // the far side's own spread: half the hosts on each member
	send(lanPorts[1], true)
	send(wanPort, false)
	send(wanPort, false)

	// Collect what comes out on each side.
	gotUp, gotDown := 0, 0
	var perMember [2]int
	rb := frame.NewBatch(64)
	deadline := time.Now().Add(3 * time.Second)
	for (gotUp < 2*perSide || gotDown < 2*perSide) && time.Now().Before(deadline) {
		if n, _ := wanPort.Recv(rb); n > 0 {
			for i := range rb.Frames {
				d := rb.Bytes(i)
				ip := frame.IPv4(d[14:])
				if frame.Ether(d).Dst() != gatewayMAC || frame.Ether(d).Src() != upMAC || ip.TTL() != 63 || !ip.ChecksumOK() || ip.Dst()>>17 != 0xc612>>1 {
					t.Errorf("upstream frame not rewritten as expected: %x", d)
					continue
				}
				gotUp++
			}
			rb.Free()
		}
		for m, lanPort := range lanPorts {
			if n, _ := lanPort.Recv(rb); n > 0 {
				for i := range rb.Frames {
					f := &rb.Frames[i]
					d := rb.Bytes(i)
					// veth hands the tag out of band (FlagVLAN), or in the bytes.
					tci, l3 := f.TCI, 14
					if f.Flags&frame.FlagVLAN == 0 {
						tci, l3 = binary.BigEndian.Uint16(d[14:]), 18
					}
					ip := frame.IPv4(d[l3:])
					vl := int(ip.Dst()>>8) & 0xff
					if tci&0xfff != vidOf(vl) || frame.Ether(d).Dst() != hostMAC(vl, 2) || frame.Ether(d).Src() != trunkMAC || ip.TTL() != 32 || !ip.ChecksumOK() {
						t.Errorf("downstream frame not rewritten as expected (tci %#x): %x", tci, d)
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
