package trunkgen

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

func TestResultReport(t *testing.T) {
	// 16 frames in: 8 forwarded, 2 on no VLAN, 2 with TTL 1 (one answered, one rate-limited), 3
	// held (2 resumed and forwarded, 1 failed: host unreachable), 1 ARP reply; out: 10 forwarded,
	// 2 ICMP errors, 2 ARP (a request, an announcement).
	r := Result{Generated: 16, RouterRx: 16, Forwarded: 14, RouterTx: 14,
		Sink: SinkCounts{Forwarded: 10, TimeExceeded: 1, Unreachable: 1, ARP: 2}}
	r.Drops.Drops[fwd.DropVLAN] = 2
	r.Drops.Drops[fwd.DropTTL] = 2
	r.Drops.Forwarded, r.Drops.Held, r.Drops.Local = 10, 3, 1
	r.Drops.ICMPErrors = 2
	r.Drops.ICMPRateLimited = 1
	r.Neigh = neigh.Counters{ARPIn: 1, HoldIn: 3, Held: 3, Ready: 2, Failed: 1, RequestsSent: 1, AnnouncesSent: 1}
	var b strings.Builder
	r.Report(&b, "extra line")
	if !r.Balanced() || !strings.Contains(b.String(), "accounting: ok") || !strings.Contains(b.String(), "  extra line\n") {
		t.Fatalf("balanced result reported as:\n%s", b.String())
	}
	for name, mod := range map[string]func(*Result){
		"a leaked buffer":                     func(r *Result) { r.Leaked = 1 },
		"a wrong frame":                       func(r *Result) { r.Sink.Forwarded--; r.Sink.Bad++ },
		"an ICMP error for a forwarded frame": func(r *Result) { r.Sink.Forwarded--; r.Sink.TimeExceeded++ },
		"a TTL drop without an ICMP verdict":  func(r *Result) { r.Drops.ICMPRateLimited = 0 },
		"a frame the far ends never got":      func(r *Result) { r.Sink.Forwarded-- },
		"an ARP frame the far ends never got": func(r *Result) { r.Sink.ARP--; r.Sink.Forwarded++ },
		"an ARP frame the resolver dropped":   func(r *Result) { r.ARPDrops = 1 },
		"a resumed frame not counted":         func(r *Result) { r.Neigh.Ready--; r.Neigh.Failed++ },
		"a held frame still held twice":       func(r *Result) { r.HeldLeft = 1 },
		"a local frame nobody took":           func(r *Result) { r.Neigh.ARPIn = 0 },
		"a held frame Hold never saw":         func(r *Result) { r.Neigh.HoldIn--; r.Neigh.Held-- },
	} {
		x := r
		mod(&x)
		b.Reset()
		x.Report(&b)
		if x.Balanced() || !strings.Contains(b.String(), "MISMATCH") {
			t.Errorf("%s not reported:\n%s", name, b.String())
		}
	}
	// A local frame that is no ARP, discarded: balanced when counted.
	x := r
	x.Drops.Local++
	x.Drops.Forwarded--
	x.Sink.Forwarded--
	x.Forwarded--
	x.RouterTx--
	x.Discarded = 1
	if !x.Balanced() {
		t.Errorf("a discarded local frame: %+v not balanced", x)
	}
	// An egress drop (a member's link going down) leaves the far ends fewer frames than the router
	// forwarded: balanced, as long as the ports counted the drop.
	x = r
	x.RouterTx, x.TxDropped, x.Sink.Forwarded = 13, 1, 9
	if !x.Balanced() {
		t.Errorf("an egress drop counted by the port: %+v not balanced", x)
	}
}

// TestSendTrafficChecks: SendTraffic's frames, routed by hand (TTL decremented, addresses rewritten,
// tags moved), pass CheckUpstream and CheckDownstream; unrouted ones do not.
func TestSendTrafficChecks(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	a, z := xmit.Pipe(pool, nil)
	trunkMAC, upMAC := RouterMAC(1), RouterMAC(IfUplink)
	for _, upstream := range []bool{true, false} {
		if n, err := SendTraffic(a, pool, trunkMAC, upstream, 120); n != 120 || err != nil {
			t.Fatalf("SendTraffic queued %d: %v", n, err)
		}
		b := frame.NewBatch(64)
		got := 0
		for {
			n, _ := z.Recv(b)
			if n == 0 {
				break
			}
			for i := range b.Frames {
				f, d := &b.Frames[i], b.Bytes(i)
				if upstream {
					if CheckUpstream(d, upMAC) == nil {
						t.Fatal("an unrouted upstream frame passed CheckUpstream")
					}
					// Route by hand: untag, rewrite the MACs, TTL 64 -> 63.
					copy(d[12:], d[16:])
					f.Resize(int(f.Len) - 4)
					e := frame.Ether(d)
					e.SetDst(GatewayMAC)
					e.SetSrc(upMAC)
					frame.IPv4(d[14:]).DecTTL()
					if err := CheckUpstream(b.Bytes(i), upMAC); err != nil {
						t.Fatal(err)
					}
				} else {
					if CheckDownstream(f, d, trunkMAC) == nil {
						t.Fatal("an unrouted downstream frame passed CheckDownstream")
					}
					ip := frame.IPv4(d[14:])
					vl, h := int(ip.Dst()>>8)&0xff, int(ip.Dst()&0xff)
					ip.DecTTL() // 33 -> 32, the tag out of band as veth may hand it
					f.Flags |= frame.FlagVLAN
					f.TCI = VID(vl)
					e := frame.Ether(d)
					e.SetDst(HostMAC(vl, h)) // the host's own MAC, as it answered ARP
					e.SetSrc(trunkMAC)
					if err := CheckDownstream(f, d, trunkMAC); err != nil {
						t.Fatal(err)
					}
				}
				got++
			}
			b.Free()
		}
		if got != 120 {
			t.Fatalf("received %d of 120", got)
		}
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", pool.InUse())
	}
}

// TestAnswerHost: SendTraffic's downstream frames to 200 VLAN hosts, through a router that
// resolves them by ARP, come out to each host's MAC (CheckDownstream) once AnswerHost has answered
// the router's tagged requests; an echo request from upstream to a VLAN host comes back answered.
func TestAnswerHost(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 2048})
	trunkMAC := func(int) frame.MAC { return RouterMAC(1) } // one MAC for every VLAN, as SendTraffic wants
	r, err := BuildRouter(Plan{VLANs: 20, Pool: pool, Neighbours: app.Neighbours{"uplink": GatewayMAC}}, trunkMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := app.NewResolver(r.Table, r.Demux, 64)
	trunk, trunkFar := xmit.Pipe(pool, &xmit.PipeConfig{Depth: 1024})
	up, upFar := xmit.Pipe(pool, &xmit.PipeConfig{Depth: 1024})
	ports := []xmit.Port{trunk, up}
	w := r.NewWorker(64)
	if _, err := SendTraffic(upFar, pool, RouterMAC(1), false, 200); err != nil {
		t.Fatal(err)
	}
	// An echo request from the upstream to 10.0.3.7.
	b := frame.NewBatch(64)
	pool.Alloc(b, 1)
	b.Frames[0].Resize(60)
	d := b.Bytes(0)
	frame.Ether(d).SetDst(RouterMAC(1))
	frame.Ether(d).SetSrc(GatewayMAC)
	frame.Ether(d).SetType(frame.TypeIPv4)
	UDP(d[14:], 0xc6120001, 0x0a000307, 64)
	ip := frame.IPv4(d[14:])
	ip[9] = frame.ProtoICMP
	ip.SetChecksum()
	icmp := ip.Payload()
	clear(icmp)
	icmp[0] = 8
	binary.BigEndian.PutUint16(icmp[4:], 0x1234)
	binary.BigEndian.PutUint16(icmp[2:], frame.Checksum(icmp))
	upFar.Send(b)

	answers := frame.NewBatch(64)
	down, arps, echoes, replies := 0, 0, 0, 0
	for round := 0; round < 100 && (down < 200 || replies < 1); round++ {
		for p, port := range ports {
			for n, _ := port.Recv(b); n > 0; n, _ = port.Recv(b) {
				res.Step(w, uint16(p), b, ports)
				r.FlushRoutes() // as Poll does
			}
		}
		res.Poll(w, ports)
		for n, _ := trunkFar.Recv(b); n > 0; n, _ = trunkFar.Recv(b) {
			for i := range b.Frames {
				switch AnswerHost(pool, &b.Frames[i], b.Bytes(i), answers) {
				case HostARP:
					arps++
				case HostEcho:
					echoes++
				case HostARPOther:
				default:
					if err := CheckDownstream(&b.Frames[i], b.Bytes(i), RouterMAC(1)); err != nil {
						t.Error(err)
					}
					down++
				}
			}
			b.Free()
			trunkFar.Send(answers)
		}
		for n, _ := upFar.Recv(b); n > 0; n, _ = upFar.Recv(b) {
			for i := range b.Frames {
				d := b.Bytes(i)
				ip := frame.IPv4(d[14:])
				if frame.Ether(d).Type() == frame.TypeIPv4 && ip.Protocol() == frame.ProtoICMP && ip.Src() == 0x0a000307 && ip.Dst() == 0xc6120001 &&
					ip.Payload()[0] == 0 && frame.Checksum(ip.Payload()) == 0 && ip.ChecksumOK() && frame.Ether(d).Dst() == GatewayMAC {
					replies++
				}
			}
			b.Free()
		}
	}
	if down != 200 || arps < 200 || echoes != 1 || replies != 1 {
		t.Fatalf("%d of 200 frames delivered after %d ARP answers; %d echo requests answered, %d replies upstream", down, arps, echoes, replies)
	}
}
