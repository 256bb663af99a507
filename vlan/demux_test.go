package vlan

import (
	"bytes"
	"errors"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

func testDemux(t testing.TB) *Demux {
	d := NewDemux(2, Parser{})
	for _, ifc := range []Interface{
		{ID: 0, Port: 0},                               // port 0 untagged
		{ID: 1, Port: 0, Outer: C(10)},                 // port 0 VLAN 10
		{ID: 2, Port: 0, Outer: S(100)},                // port 0 S-VLAN 100 alone
		{ID: 3, Port: 0, Outer: S(100), Inner: C(200)}, // QinQ 100/200
		{ID: 4, Port: 1, Outer: C(10)},                 // same VID, other port
		{ID: 5, Port: 0, Outer: S(300), Inner: C(1)},   // QinQ without an outer-only interface
	} {
		if err := d.Add(ifc); err != nil {
			t.Fatalf("Add(%+v): %v", ifc, err)
		}
	}
	return d
}

func TestDemuxAddErrors(t *testing.T) {
	d := testDemux(t)
	cases := []struct {
		ifc  Interface
		want error
	}{
		{Interface{ID: 9, Port: 2}, ErrRange},
		{Interface{ID: 0xffff}, ErrRange},
		{Interface{ID: 9, Outer: C(4095)}, ErrReservedVID},
		{Interface{ID: 9, Outer: C(0)}, ErrReservedVID},
		{Interface{ID: 9, Outer: S(5), Inner: C(4095)}, ErrReservedVID},
		{Interface{ID: 9, Outer: Tag{TPID9100, 5}}, ErrRange},
		{Interface{ID: 9, Inner: C(5)}, ErrRange},
		{Interface{ID: 9, Port: 0}, ErrExists},
		{Interface{ID: 9, Port: 0, Outer: C(10)}, ErrExists},
		{Interface{ID: 9, Port: 0, Outer: S(100), Inner: C(200)}, ErrExists},
		{Interface{ID: 1, Port: 1, Outer: C(11)}, ErrExists},
	}
	for _, c := range cases {
		if err := d.Add(c.ifc); !errors.Is(err, c.want) {
			t.Errorf("Add(%+v) = %v, want %v", c.ifc, err, c.want)
		}
	}
	if got := d.Interfaces(); len(got) != 6 {
		t.Errorf("Interfaces() = %v", got)
	}
}

func TestDemuxClassify(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	type tc struct {
		name  string
		port  uint16
		pkt   []byte
		oob   *Tag
		iface int // -1: dropped
		rest  []Tag
	}
	cases := []tc{
		{"untagged", 0, gpFrame(t, nil, 30), nil, 0, nil},
		{"vlan10", 0, gpFrame(t, []Tag{C(10)}, 30), nil, 1, nil},
		{"vlan10 port1", 1, gpFrame(t, []Tag{C(10)}, 30), nil, 4, nil},
		{"vlan10 oob", 0, gpFrame(t, nil, 30), &Tag{TPID8021Q, NewTCI(3, false, 10)}, 1, nil},
		{"svlan100", 0, gpFrame(t, []Tag{S(100)}, 30), nil, 2, nil},
		{"qinq", 0, gpFrame(t, []Tag{S(100), C(200)}, 30), nil, 3, nil},
		{"qinq oob outer", 0, gpFrame(t, []Tag{C(200)}, 30), &Tag{TPID8021AD, 100}, 3, nil},
		{"qinq unknown inner falls to outer", 0, gpFrame(t, []Tag{S(100), C(201)}, 30), nil, 2, []Tag{C(201)}},
		{"qinq only", 0, gpFrame(t, []Tag{S(300), C(1)}, 30), nil, 5, nil},
		{"qinq only wrong inner", 0, gpFrame(t, []Tag{S(300), C(2)}, 30), nil, -1, nil},
		{"priority tag", 0, gpFrame(t, []Tag{{TPID8021Q, NewTCI(5, false, 0)}}, 30), nil, 0, nil},
		{"priority then vlan", 0, gpFrame(t, []Tag{C(0), C(10)}, 30), nil, 1, nil},
		{"vid 4095", 0, gpFrame(t, []Tag{C(4095)}, 30), nil, -1, nil},
		{"unknown vid", 0, gpFrame(t, []Tag{C(11)}, 30), nil, -1, nil},
		{"c-tag vid 100 is not s-tag 100", 0, gpFrame(t, []Tag{C(100)}, 30), nil, -1, nil},
		{"untagged on port without untagged iface", 1, gpFrame(t, nil, 30), nil, -1, nil},
	}
	var pkts [][]byte
	for _, c := range cases {
		pkts = append(pkts, c.pkt)
	}
	// All in one batch, per port: order of kept frames must be preserved.
	for _, port := range []uint16{0, 1} {
		b := frame.NewBatch(64)
		var want []tc
		var in [][]byte
		for _, c := range cases {
			if c.port == port {
				in = append(in, c.pkt)
				want = append(want, c)
			}
		}
		b = load(t, p, in...)
		for i, c := range want {
			if c.oob != nil {
				f := &b.Frames[i]
				f.Flags |= frame.FlagVLAN
				f.TPID, f.TCI = c.oob.TPID, uint16(c.oob.TCI)
			}
		}
		k := w.Classify(port, b)
		j := 0
		for _, c := range want {
			if c.iface < 0 {
				continue
			}
			if j >= k {
				t.Fatalf("port %d: %s: missing (kept %d)", port, c.name, k)
			}
			f := b.Frames[j]
			if int(f.Port) != c.iface {
				t.Errorf("%s: iface %d, want %d", c.name, f.Port, c.iface)
			}
			if !bytes.Equal(b.Bytes(j), gpFrame(t, c.rest, 30)) {
				t.Errorf("%s: frame after classify\n got % x\nwant % x", c.name, b.Bytes(j), gpFrame(t, c.rest, 30))
			}
			if f.Flags&frame.FlagVLAN != 0 {
				t.Errorf("%s: OOB flag left set", c.name)
			}
			j++
		}
		if j != k {
			t.Fatalf("port %d: kept %d, want %d", port, k, j)
		}
		b.Free()
	}
	if p.InUse() != 0 {
		t.Fatalf("dropped frames not released: %d in use", p.InUse())
	}
	w.Flush()
	if s := d.DropStats(); s.UnknownVLAN != 5 || s.Malformed != 0 {
		t.Fatalf("drops %+v", s)
	}
	if s := d.Stats(1); s.RxPackets != 3 {
		t.Fatalf("iface 1 stats %+v", s)
	}
	// A second worker's counts add up in Stats.
	w2 := d.NewWorker()
	b := load(t, p, gpFrame(t, []Tag{C(10)}, 30), make([]byte, 10))
	if w2.Classify(0, b) != 1 {
		t.Fatal("w2 classify")
	}
	b.Free()
	w2.Flush()
	if s, dr := d.Stats(1), d.DropStats(); s.RxPackets != 4 || dr.Malformed != 1 {
		t.Fatalf("after w2: %+v %+v", s, dr)
	}
	// An out-of-range port drops the batch, counted.
	b = load(t, p, gpFrame(t, nil, 30))
	if w2.Classify(7, b) != 0 || p.InUse() != 0 {
		t.Fatal("bad port")
	}
}

func TestDemuxEgressRoundTrip(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	for id, want := range map[uint16][]Tag{0: nil, 1: {C(10)}, 2: {S(100)}, 3: {S(100), C(200)}, 4: {C(10)}} {
		b := load(t, p, gpFrame(t, nil, 30))
		b.Frames[0].Out = id
		port, err := w.Egress(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(0), gpFrame(t, want, 30)) {
			t.Fatalf("iface %d egress % x", id, b.Bytes(0))
		}
		// And back: the frame classifies to the interface it left from.
		if w.Classify(port, b) != 1 || b.Frames[0].Port != id {
			t.Fatalf("iface %d did not round-trip (port %d)", id, port)
		}
		b.Free()
	}
	b := load(t, p, gpFrame(t, nil, 30))
	b.Frames[0].Out = 42
	if _, err := w.Egress(b, 0); err != ErrRange {
		t.Fatalf("unknown egress: %v", err)
	}
	b.Free()
	w.Flush()
	if s := d.Stats(3); s.TxPackets != 1 || s.RxPackets != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDemuxZeroAllocs(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	pkts := [][]byte{gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, []Tag{S(100), C(200)}, 30), gpFrame(t, nil, 30)}
	b := load(t, p, pkts...)
	outs := []uint16{1, 3, 0}
	a := testing.AllocsPerRun(200, func() {
		w.Classify(0, b)
		for i := range b.Frames {
			b.Frames[i].Out = outs[i]
			w.Egress(b, i)
		}
	})
	if a != 0 {
		t.Fatalf("Classify+Egress: %v allocs", a)
	}
}

// TestFlushPublishesChanges checks that each Flush publishes what changed since the last one,
// and that a Flush with nothing new leaves the published counters as they are.
func TestFlushPublishesChanges(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	for round := 1; round <= 3; round++ {
		b := load(t, p, gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, []Tag{C(999)}, 30))
		if w.Classify(0, b) != 1 {
			t.Fatal("classify")
		}
		b.Free()
		if s := d.Stats(1); s.RxPackets != uint64(round-1) {
			t.Fatalf("round %d before Flush: published %+v", round, s)
		}
		w.Flush()
		w.Flush()
		if s, dr := d.Stats(1), d.DropStats(); s.RxPackets != uint64(round) || dr.UnknownVLAN != uint64(round) {
			t.Fatalf("round %d after Flush: %+v %+v", round, s, dr)
		}
	}
}
