package lacp

import (
	"testing"
)

// FuzzController drives a two-member controller with what a partner could send: LACPDUs with any
// fields (or echoing the controller's own actor information with any state, so that the fuzzer
// reaches aggregation), raw slow-protocols bytes, link changes and ticks. No input panics, and the
// per-tick invariants of TestModel hold whatever the partner says.
//
// Each operation is a byte: its low two bits choose it, the rest is its argument.
//
//	0  LACPDU on member arg&1; arg&2: its partner TLV echoes the member's actor information,
//	   else 15 bytes follow for it; 15 bytes follow for the actor TLV
//	1  arg+1 ticks
//	2  member arg&1's link down (arg&2 == 0) or up
//	3  a frame of the next arg+1 bytes, after a slow-protocols header, on member arg&1
func FuzzController(f *testing.F) {
	f.Add(aggregatingOps())
	f.Add([]byte{1 | 63<<2, 2, 1 | 63<<2, 2 | 2<<2, 1 | 63<<2})
	f.Add([]byte{3 | 4<<2, 1, 1, 0x14, 0, 0, 1 | 5<<2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 512 {
			ops = ops[:512]
		}
		runOps(t, ops)
	})
}

// aggregatingOps is a partner that answers on both members for 8 s: it aggregates them.
func aggregatingOps() []byte {
	var ops []byte
	for k := 0; k < 8; k++ {
		for m := byte(0); m < 2; m++ {
			ops = append(ops, 0|(2|m)<<2, 0x3f) // echo the actor, in sync, collecting, distributing
			ops = append(ops, 0x80, 0, 2, 0, 0, 0, 0xb, 0, 0, 0x11, 0, 0xff, 0, m+1, 0x3f)
		}
		ops = append(ops, 1|9<<2) // 10 ticks
	}
	return ops
}

// runOps runs FuzzController's operations and returns the side.
func runOps(t *testing.T, ops []byte) *side {
	s := newSide(t, 0xa, 2, nil)
	buf := make([]byte, FrameLen)
	take := func(n int) []byte {
		b := make([]byte, n)
		k := copy(b, ops)
		ops = ops[k:]
		return b
	}
	ticks := 0
	for len(ops) > 0 && ticks < 2000 {
		op := ops[0]
		ops = ops[1:]
		arg := int(op >> 2)
		m := arg & 1
		switch op & 3 {
		case 0:
			var pdu LACPDU
			if arg&2 != 0 {
				pdu.Partner = s.c.Status().Ports[m].Actor
				pdu.Partner.State = State(take(1)[0])
			} else {
				pdu.Partner = getInfo(take(15))
			}
			pdu.Actor = getInfo(take(15))
			PutLACPFrame(buf, mac(0xb, byte(m+1)), &pdu)
			s.c.HandleSlow(m, buf)
			s.c.Process()
		case 1:
			for k := 0; k <= arg; k++ {
				s.c.Tick()
				ticks++
				s.collect()
				checkInvariants(t, s)
			}
		case 2:
			s.c.SetLinkUp(m, arg&2 != 0)
			s.c.Process()
		case 3:
			raw := make([]byte, 14+arg+1)
			putHeader(raw, mac(0xb, byte(m+1)))
			copy(raw[14:], take(arg+1))
			s.c.HandleSlow(m, raw)
			s.c.Process()
		}
	}
	return s
}

// TestFuzzControllerReaches: FuzzController's seed aggregates both members (the harness reaches
// COLLECTING_DISTRIBUTING), and then a link down takes one out.
func TestFuzzControllerReaches(t *testing.T) {
	ops := aggregatingOps()
	s := runOps(t, ops)
	if u := s.usable(); !u[0] || !u[1] {
		t.Fatalf("usable %v: %+v", u, s.c.Status())
	}
	s = runOps(t, append(ops, 2|1<<2, 1))
	if u := s.usable(); !u[0] || u[1] {
		t.Fatalf("after member 1's link down: usable %v", u)
	}
}
