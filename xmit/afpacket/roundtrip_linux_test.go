package afpacket

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// wire is what a frame looks like on the wire after Send: the out-of-band tag in band, padded to 60.
func wire(tx txFrame) []byte {
	b := tx.data
	if tx.oob {
		tp := tx.tpid
		if tp == 0 {
			tp = 0x8100
		}
		b = tagged(b, tp, tx.tci)
	}
	if len(b) < MinFrameLen {
		b = append(append([]byte(nil), b...), make([]byte, MinFrameLen-len(b))...)
	}
	return b
}

// expectRx is what a receiver sees of a wire frame: veth's receive path takes the outer tag out of
// the bytes and AF_PACKET reports it out of band (unless reinsert).
func expectRx(w []byte, reinsert bool) rxFrame {
	tp := binary.BigEndian.Uint16(w[12:14])
	if reinsert || (tp != 0x8100 && tp != 0x88a8) {
		return rxFrame{data: w}
	}
	d := append(append([]byte(nil), w[:12]...), w[16:]...)
	return rxFrame{data: d, flags: frame.FlagVLAN, tpid: tp, tci: binary.BigEndian.Uint16(w[14:16])}
}

// TestFrames sends known frames through one veth pair and checks every byte and tag on the other side,
// with the tag reported out of band and with Config.ReinsertVLAN.
func TestFrames(t *testing.T) { rxTxModes(t, testFrames) }

func testFrames(t *testing.T, txCfg *Config, ring *FrameRing) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, txCfg)
	b := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	var aBytes uint64
	var i uint32
	next := func(n int) []byte { i++; return testFrame(i, n) }
	cases := []struct {
		name string
		tx   txFrame
	}{
		{"min", txFrame{data: next(60)}},
		{"odd", txFrame{data: next(333)}},
		{"mtu", txFrame{data: next(1514)}},
		{"runt", txFrame{data: next(42)}},
		{"runt-22", txFrame{data: next(22)}},
		{"c-tag-in-band", txFrame{data: tagged(next(64), 0x8100, 0x2064)}},
		{"s-tag-in-band", txFrame{data: tagged(next(64), 0x88a8, 0x0123)}},
		{"qinq-in-band", txFrame{data: tagged(tagged(next(80), 0x8100, 20), 0x88a8, 10)}},
		{"priority-tag", txFrame{data: tagged(next(70), 0x8100, 0xe000)}},
		{"tagged-mtu", txFrame{data: tagged(next(1514), 0x8100, 4094)}},
		{"oob-c-tag", txFrame{data: next(100), oob: true, tpid: 0x8100, tci: 0x3005}},
		{"oob-tpid-0", txFrame{data: next(100), oob: true, tci: 7}},
		{"oob-s-tag", txFrame{data: next(100), oob: true, tpid: 0x88a8, tci: 300}},
		{"oob-over-c-tag", txFrame{data: tagged(next(90), 0x8100, 5), oob: true, tpid: 0x88a8, tci: 6}},
		{"oob-runt", txFrame{data: next(42), oob: true, tpid: 0x8100, tci: 9}},
	}
	pool, _ := frame.NewPool(nil)
	var tx []txFrame
	for _, c := range cases {
		tx = append(tx, c.tx)
		aBytes += uint64(len(wire(c.tx)))
	}
	for _, reinsert := range []bool{false, true} {
		t.Run(fmt.Sprintf("reinsert=%v", reinsert), func(t *testing.T) {
			rx := b
			if reinsert {
				rx = openIn(t, l.nsB, l.ifB, withRing(ring, &Config{ReinsertVLAN: true}))
				defer rx.Close()
			}
			before := a.Stats()
			if k := sendFrames(t, a, pool, tx); k != len(tx) {
				t.Fatalf("sent %d of %d", k, len(tx))
			}
			got := recvFrames(t, rx, len(tx), 2*time.Second)
			if len(got) != len(tx) {
				t.Fatalf("received %d of %d", len(got), len(tx))
			}
			for j, c := range cases {
				want, g := expectRx(wire(c.tx), reinsert), got[j]
				if d := diff(g.data, want.data); d != "" {
					t.Errorf("%s: %s\n got %x\nwant %x", c.name, d, g.data, want.data)
				}
				if g.flags != want.flags || g.tpid != want.tpid || g.tci != want.tci {
					t.Errorf("%s: flags %v tag %#x/%#x, want %v %#x/%#x", c.name, g.flags, g.tpid, g.tci, want.flags, want.tpid, want.tci)
				}
				if min := RingHeadroom - 4; int(g.head) < min { // -4: a reinserted tag took 4
					t.Errorf("%s: headroom %d, want >= %d", c.name, g.head, min)
				}
			}
			st := a.Stats()
			if txCfg != nil && txCfg.TxRing != nil && st.TxCopied-before.TxCopied != uint64(len(tx)) {
				t.Errorf("TX ring: %d frames copied, want %d", st.TxCopied-before.TxCopied, len(tx))
			}
			if st.TxPackets-before.TxPackets != uint64(len(tx)) || st.TxBytes-before.TxBytes != aBytes || st.TxDropped != 0 {
				t.Errorf("sender stats %+v (before %+v), want %d frames, %d bytes", st, before, len(tx), aBytes)
			}
			if pool.InUse() != 0 {
				t.Errorf("%d pool buffers not released by Send", pool.InUse())
			}
			if h := rx.held.Load(); h != 0 {
				t.Errorf("%d blocks or slots still held after every frame was freed", h)
			}
		})
	}
}

// TestForward receives on one port and sends the very same frames (in the first port's ring) out of
// another: the forwarding path, with the out-of-band tag put back on the way out.
func TestForward(t *testing.T) { rxTxModes(t, testForward) }

func testForward(t *testing.T, txCfg *Config, ring *FrameRing) {
	l1, l2 := newLink(t), newLink(t)
	// Topology: nsA --veth1-- nsB --veth2-- nsC, with the forwarder's two ports in nsB.
	nsC := l2.nsB
	mid2, far := l2.ifA, l2.ifB
	l2.nsA.Exec(t, "ip", "link", "set", mid2, "netns", l1.nsB.Name)
	l1.nsB.Exec(t, "ip", "link", "set", mid2, "up")
	src := openIn(t, l1.nsA, l1.ifA, nil)
	in := openIn(t, l1.nsB, l1.ifB, withRing(ring, nil))
	out := openIn(t, l1.nsB, mid2, txCfg)
	dst := openIn(t, nsC, far, nil)
	var tx []txFrame
	for i := range 300 {
		d := testFrame(uint32(i), 60+i%200)
		if i%3 == 0 {
			d = tagged(d, 0x8100, uint16(i))
		}
		tx = append(tx, txFrame{data: d})
	}
	pool, _ := frame.NewPool(nil)
	sendFrames(t, src, pool, tx)
	b := frame.NewBatch(64)
	fwd := 0
	deadline := time.Now().Add(2 * time.Second)
	for fwd < len(tx) && time.Now().Before(deadline) {
		n, err := in.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			in.Wait(int64(10 * time.Millisecond))
			continue
		}
		fwd += n
		if k, err := out.Send(b); err != nil || k != n {
			t.Fatalf("forwarded %d of %d: %v", k, n, err)
		}
	}
	got := recvFrames(t, dst, len(tx), 2*time.Second)
	if len(got) != len(tx) {
		t.Fatalf("received %d of %d", len(got), len(tx))
	}
	for i := range tx {
		want := expectRx(wire(tx[i]), false)
		if d := diff(got[i].data, want.data); d != "" || got[i].tci != want.tci || got[i].flags != want.flags {
			t.Fatalf("frame %d: %s; tag %v %#x, want %v %#x", i, d, got[i].flags, got[i].tci, want.flags, want.tci)
		}
	}
	if h := in.held.Load(); h != 0 {
		t.Fatalf("%d blocks or slots of the ingress ring still held after Send released them", h)
	}
	copies := uint64(0) // sendmmsg points into the ingress ring; the TX ring copies every frame
	if txCfg != nil && txCfg.TxRing != nil {
		copies = uint64(len(tx))
	}
	if s := out.Stats(); s.TxPackets != uint64(len(tx)) || s.TxCopied != copies || s.TxDropped != 0 {
		t.Fatalf("egress stats %+v", s)
	}
}

// TestJumbo sends frames up to a 9000-byte MTU and one byte more (dropped and counted).
func TestJumbo(t *testing.T) {
	for _, m := range []struct {
		name string
		cfg  *Config
	}{{"sendmmsg", nil}, {"txring", &Config{TxRing: &TxRing{Frames: 64, FrameSize: 9216}}}} {
		t.Run("tx="+m.name, func(t *testing.T) { testJumbo(t, m.cfg) })
	}
}

func testJumbo(t *testing.T, txCfg *Config) {
	l := newLink(t)
	l.nsA.Exec(t, "ip", "link", "set", l.ifA, "mtu", "9000")
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "mtu", "9000")
	a := openIn(t, l.nsA, l.ifA, txCfg)
	b := openIn(t, l.nsB, l.ifB, nil)
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64, BufSize: 10240})
	tx := []txFrame{
		{data: testFrame(1, 9014)},
		{data: tagged(testFrame(2, 9014), 0x8100, 100)},
		{data: testFrame(3, 9014), oob: true, tpid: 0x8100, tci: 200},
		{data: testFrame(4, 9015)}, // one byte over: EMSGSIZE
		{data: testFrame(5, 8000)},
	}
	if k := sendFrames(t, a, pool, tx); k != 4 {
		t.Fatalf("sent %d, want 4", k)
	}
	if s := a.Stats(); s.TxDropped != 1 || s.TxPackets != 4 {
		t.Fatalf("sender stats %+v, want 4 sent and 1 dropped", s)
	}
	got := recvFrames(t, b, 4, 2*time.Second)
	if len(got) != 4 {
		t.Fatalf("received %d of 4", len(got))
	}
	for i, j := range []int{0, 1, 2, 4} {
		want := expectRx(wire(tx[j]), false)
		if d := diff(got[i].data, want.data); d != "" || got[i].tci != want.tci {
			t.Fatalf("frame %d: %s, tci %d want %d", j, d, got[i].tci, want.tci)
		}
	}
}

// TestHeadroom checks the headroom received frames have, with and without PACKET_RESERVE.
func TestHeadroom(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	for _, r := range rxModes {
		for _, extra := range []int{0, 100} {
			p := openIn(t, l.nsB, l.ifB, withRing(r.ring, &Config{Headroom: extra}))
			pool, _ := frame.NewPool(nil)
			sendFrames(t, a, pool, []txFrame{{data: testFrame(1, 1514)}})
			got := recvFrames(t, p, 1, 2*time.Second)
			if len(got) != 1 || int(got[0].head) < RingHeadroom+extra || len(got[0].data) != 1514 {
				t.Fatalf("rx=%s Headroom %d: %d frames, head %v", r.name, extra, len(got), got)
			}
			p.Close()
		}
	}
}

// TestTruncated: a frame longer than the receive ring's room (a TPACKET_V3 block, a FrameRing
// slot) is cut by the kernel (tp_snaplen < tp_len); Recv drops and counts it and hands out the
// frames around it.
func TestTruncated(t *testing.T) {
	l := newLink(t)
	l.nsA.Exec(t, "ip", "link", "set", l.ifA, "mtu", "9000")
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "mtu", "9000")
	a := openIn(t, l.nsA, l.ifA, nil)
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64, BufSize: 10240})
	for _, c := range []struct {
		name      string
		cfg       *Config
		big, fits int // a frame longer than the ring's room (0: none), the largest that fits
	}{
		{"blocks", &Config{BlockSize: 8192, BlockCount: 16}, 8500, 8000},
		{"frames", &Config{FrameRing: &FrameRing{Frames: 16}}, 2000, DefaultFrameRingSize - FrameSlotOverhead},
		{"frames-jumbo", &Config{FrameRing: &FrameRing{Frames: 16, FrameSize: 9088}}, 0, 9014}, // the MTU's largest
	} {
		t.Run(c.name, func(t *testing.T) {
			p := openIn(t, l.nsB, l.ifB, c.cfg)
			defer p.Close()
			tx := []txFrame{{data: testFrame(1, 1514)}, {data: testFrame(2, c.fits)}, {data: testFrame(3, 60)}}
			want := []uint32{1, 2, 3}
			if c.big > 0 {
				tx = append(tx, txFrame{data: testFrame(4, c.big)}, txFrame{data: testFrame(5, 60)})
				want = append(want, 5)
			}
			if k := sendFrames(t, a, pool, tx); k != len(tx) {
				t.Fatalf("sent %d of %d", k, len(tx))
			}
			got := recvFrames(t, p, len(want), 2*time.Second)
			var seqs []uint32
			for _, g := range got {
				s, _ := seqOf(g.data)
				seqs = append(seqs, s)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(want) {
				t.Fatalf("received frames %v, want %v (%+v %+v)", seqs, want, p.Stats(), p.RingStats())
			}
			if len(got[1].data) != c.fits {
				t.Fatalf("the largest frame that fits: %d bytes, want %d", len(got[1].data), c.fits)
			}
			dropped := uint64(len(tx) - len(want))
			if st := p.Stats(); st.RxDropped != dropped || st.RxPackets != uint64(len(want)) {
				t.Fatalf("stats %+v, want %d received and %d dropped", st, len(want), dropped)
			}
		})
	}
}
