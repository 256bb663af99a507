package trunkgen

import (
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/xmit"
)

func TestResultReport(t *testing.T) {
	r := Result{Generated: 12, RouterRx: 12, Forwarded: 9, RouterTx: 9, Sink: SinkCounts{Forwarded: 8, TimeExceeded: 1}}
	r.Drops.Drops[fwd.DropVLAN] = 2
	r.Drops.Drops[fwd.DropTTL] = 2
	r.Drops.Forwarded = 8
	r.Drops.ICMPErrors = 1
	r.Drops.ICMPRateLimited = 1
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
	} {
		x := r
		mod(&x)
		b.Reset()
		x.Report(&b)
		if x.Balanced() || !strings.Contains(b.String(), "MISMATCH") {
			t.Errorf("%s not reported:\n%s", name, b.String())
		}
	}
	// An egress drop (a member's link going down) leaves the far ends fewer frames than the router
	// forwarded: balanced, as long as the ports counted the drop.
	x := r
	x.RouterTx, x.TxDropped, x.Sink.Forwarded = 8, 1, 7
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
					vl := int(ip.Dst()>>8) & 0xff
					ip.DecTTL() // 33 -> 32, the tag out of band as veth may hand it
					f.Flags |= frame.FlagVLAN
					f.TCI = VID(vl)
					e := frame.Ether(d)
					e.SetDst(HostMAC(vl, 2))
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
