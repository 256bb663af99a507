package lacp_test

import (
	"encoding/binary"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
)

// end is one end of an aggregate of in-memory links: a lag.Aggregate whose Recv hands the
// LACPDUs to its controller, which sets the aggregate's members usable.
type end struct {
	agg    *lag.Aggregate
	ctl    *lacp.Controller
	ports  []*xmit.MemPort
	events []lacp.Event
}

func newEnd(t testing.TB, ports []*xmit.MemPort, sys byte) *end {
	e := &end{ports: ports}
	cfg := &lacp.Config{System: frame.MAC{2, 0, 0, 0, sys, 0}, Fast: true, Events: func(ev lacp.Event) { e.events = append(e.events, ev) }}
	var members []xmit.Port
	for i, p := range ports {
		// Everything runs on the test's goroutine, so the member itself may send the PDUs.
		cfg.Ports = append(cfg.Ports, lacp.PortConfig{Tx: p, MAC: frame.MAC{2, 0, 0, 0, sys, byte(i + 1)}, Speed: 10000})
		members = append(members, p)
	}
	var err error
	if e.ctl, err = lacp.New(cfg); err != nil {
		t.Fatal(err)
	}
	if e.agg, err = lag.New(members, &lag.Config{Mode: lag.XOR, Policy: lag.Layer34, SlowProtocols: e.ctl}); err != nil {
		t.Fatal(err)
	}
	e.ctl.Attach(e.agg)
	return e
}

// udp writes UDP flow k into frame i of b.
func udp(b *frame.Batch, i, k int) {
	b.Frames[i].Resize(64)
	d := b.Bytes(i)
	copy(d, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00, 0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17})
	copy(d[26:34], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(d[34:], uint16(1000+k))
	binary.BigEndian.PutUint16(d[36:], 53)
}

type rig struct {
	t      *testing.T
	pool   *frame.Pool
	a, b   *end
	rx     *frame.Batch
	got    [2]int // data frames b received per member
	sent   int
	nextID int
}

func newRig(t *testing.T) *rig {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var pa, pb []*xmit.MemPort
	for i := 0; i < 2; i++ {
		x, y := xmit.Pipe(pool, nil)
		pa, pb = append(pa, x), append(pb, y)
	}
	r := &rig{t: t, pool: pool, a: newEnd(t, pa, 0xa), b: newEnd(t, pb, 0xb), rx: frame.NewBatch(64)}
	t.Cleanup(func() { r.a.agg.Close(); r.b.agg.Close() })
	return r
}

// tick: both controllers tick, a sends 16 frames of 16 flows, both ends read what came in.
func (r *rig) tick() {
	r.a.ctl.Tick()
	r.b.ctl.Tick()
	tx := frame.NewBatch(16)
	r.pool.Alloc(tx, 16)
	for i := range tx.Frames {
		udp(tx, i, i)
	}
	r.a.agg.Send(tx)
	r.sent += 16
	for _, e := range []*end{r.a, r.b} {
		for {
			m, n, err := e.agg.RecvFrom(r.rx)
			if err != nil {
				r.t.Fatal(err)
			}
			if n == 0 {
				break
			}
			for k := 0; k < n; k++ {
				if binary.BigEndian.Uint16(r.rx.Bytes(k)[12:]) == lag.SlowEtherType {
					r.t.Fatalf("Recv returned a slow-protocols frame")
				}
			}
			if e == r.b {
				r.got[m] += n
			}
			r.rx.Free()
		}
	}
}

// TestAggregates: two lag.Aggregates negotiate over in-memory links; a member carries data only
// once it is collecting and distributing, then both do; a member whose link goes down is left
// out by both ends; everything is accounted for.
func TestAggregates(t *testing.T) {
	r := newRig(t)
	ticks := 0
	for ; !(r.a.agg.MemberUp(0) && r.a.agg.MemberUp(1) && r.b.agg.MemberUp(0) && r.b.agg.MemberUp(1)); ticks++ {
		if ticks > 5*lacp.TicksPerSecond {
			t.Fatalf("not aggregated: %+v", r.a.ctl.Status())
		}
		r.tick()
	}
	// Until then a had no usable member for a while (its frames dropped and counted), and b
	// dropped what came in on members it did not use yet.
	if before := r.a.agg.Stats().TxDropped; before == 0 {
		t.Fatalf("before aggregation: %d dropped, %v received", before, r.got)
	}
	for i := 0; i < 20; i++ {
		r.tick()
	}
	if r.got[0] == 0 || r.got[1] == 0 {
		t.Fatalf("traffic not spread over both members: %v", r.got)
	}
	if s := r.b.agg.Stats(); s.RxPackets != uint64(r.got[0]+r.got[1]) || r.b.agg.SlowFrames() == 0 {
		t.Fatalf("b stats %+v, slow %d, received %v", s, r.b.agg.SlowFrames(), r.got)
	}
	// Member 1's link goes down at both ends.
	r.a.ports[1].SetLinkUp(false)
	r.b.ports[1].SetLinkUp(false)
	r.tick()
	if r.a.agg.MemberUp(1) || r.b.agg.MemberUp(1) || !r.a.agg.MemberUp(0) {
		t.Fatalf("after link down: a %v, b %v", r.a.agg.Usable(), r.b.agg.Usable())
	}
	r.got = [2]int{}
	for i := 0; i < 20; i++ {
		r.tick()
	}
	if r.got[1] != 0 || r.got[0] != 20*16 {
		t.Fatalf("after link down: %v", r.got)
	}
	// Every frame a's aggregate and controller sent was received by b or counted as dropped.
	sa, sb := r.a.agg.Stats(), r.b.agg.Stats()
	pdus := uint64(0)
	for _, p := range r.a.ctl.Status().Ports {
		pdus += p.Stats.LACPDUTx + p.Stats.MarkerRespTx
	}
	if uint64(r.sent)+pdus != sa.TxPackets+sa.TxDropped {
		t.Fatalf("sent %d + %d PDUs, a tx %+v", r.sent, pdus, sa)
	}
	if sa.TxPackets != sb.RxPackets+r.b.agg.SlowFrames()+sb.RxDropped {
		t.Fatalf("a tx %d, b rx %d + slow %d + dropped %d", sa.TxPackets, sb.RxPackets, r.b.agg.SlowFrames(), sb.RxDropped)
	}
	var events [5]int
	for _, e := range r.a.events {
		events[e.Kind]++
	}
	if events[lacp.EventLink] != 1 || events[lacp.EventMember] != 3 || events[lacp.EventAggregate] != 1 || events[lacp.EventState] == 0 {
		t.Fatalf("events %v", events)
	}
	if r.pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", r.pool.InUse())
	}
}
