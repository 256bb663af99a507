package dsa

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

func newPool(t testing.TB) *frame.Pool {
	t.Helper()
	p, err := frame.NewPool(&frame.PoolConfig{Buffers: 512, BufSize: 2048, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fill allocates one frame per element of data into an empty batch.
func fill(t testing.TB, pool *frame.Pool, b *frame.Batch, data ...[]byte) {
	t.Helper()
	if n, err := pool.Alloc(b, len(data)); n != len(data) || err != nil {
		t.Fatalf("alloc %d: %d %v", len(data), n, err)
	}
	base := b.Len() - len(data)
	for i, d := range data {
		setFrame(b, base+i, d)
	}
}

// opaque hides the built-in codec so that the conduit takes its generic (interface) path.
type opaque struct{ Tagger }

func TestConduitRecv(t *testing.T) {
	for _, generic := range []bool{false, true} {
		for _, withDrop := range []bool{false, true} {
			tg := mustTagger(t, "edsa")
			if generic {
				tg = opaque{tg}
			}
			c, err := NewConduit(Config{Tagger: tg, Ports: 8, Switches: 2})
			if err != nil {
				t.Fatal(err)
			}
			pool := newPool(t)
			b := frame.NewBatch(16)
			in := hx(inner)
			fwd := func(dev, port byte) []byte { return naiveRx("edsa", in, int(dev), int(port)) }
			frames := [][]byte{
				fwd(0, 3), // user port 3
				hx(macs + " dada0000 40180000 " + et + pl), // FROM_CPU: bad tag
				fwd(1, 5), // user port 8+5 = 13
				fwd(0, 9), // port 9 >= 8: out of range
				fwd(4, 1), // switch 4 >= 2: out of range
				hx(macs),  // truncated
				hx(macs + " dada0000 c01c0000 " + et + pl),  // trunk
				hx(macs + " dada0000 0118 1000 " + et + pl), // FRAME2REG: unsupported
				fwd(1, 0), // user port 8
			}
			fill(t, pool, b, frames...)
			var drop *frame.Batch
			if withDrop {
				drop = frame.NewBatch(16)
			}
			n := c.Recv(b, drop)
			if n != 3 || b.Len() != 3 {
				t.Fatalf("kept %d", n)
			}
			for i, want := range []uint16{3, 13, 8} {
				if b.Frames[i].Port != want || !bytes.Equal(b.Bytes(i), in) {
					t.Fatalf("frame %d: port %d, bytes % x", i, b.Frames[i].Port, b.Bytes(i))
				}
			}
			wantDrops := map[Reason]uint64{ReasonBadTag: 1, ReasonPort: 2, ReasonTruncated: 1, ReasonTrunk: 1, ReasonUnsupported: 1}
			for r := ReasonNone; r < NumReasons; r++ {
				if got := c.RxDrops(r); got != wantDrops[r] {
					t.Errorf("drops %v: %d, want %d", r, got, wantDrops[r])
				}
			}
			if s := c.Stats(13); s.RxFrames != 1 || s.RxBytes != uint64(len(in)) {
				t.Errorf("stats port 13: %+v", s)
			}
			if withDrop {
				if drop.Len() != 6 {
					t.Fatalf("drop batch holds %d", drop.Len())
				}
				if pool.InUse() != 9 {
					t.Fatalf("in use %d", pool.InUse())
				}
				drop.Free()
			}
			if pool.InUse() != 3 {
				t.Fatalf("%d buffers in use, want the 3 kept frames (dropped ones released)", pool.InUse())
			}
			b.Free()
			if pool.InUse() != 0 {
				t.Fatal("buffers lost")
			}
		}
	}
}

func TestConduitSend(t *testing.T) {
	c, err := NewConduit(Config{Tagger: mustTagger(t, "ksz9477"), Ports: 7, Prio: 1})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t)
	b := frame.NewBatch(8)
	in := hx(inner)
	fill(t, pool, b, in, in, in, in)
	b.Frames[0].Out = 2
	b.Frames[1].Out = 7 // no such user port
	b.Frames[2].Out = 6
	b.Frames[3].Out = 2
	b.Frames[3].Tail = 1 // no room for the tag
	if n := c.Send(b, nil); n != 2 {
		t.Fatalf("sent %d", n)
	}
	if !bytes.Equal(b.Bytes(0), cat(in, []byte{0, 0x84})) || !bytes.Equal(b.Bytes(1), cat(in, []byte{0, 0xc0})) {
		t.Fatalf("tags: % x / % x", b.Bytes(0)[60:], b.Bytes(1)[60:])
	}
	if c.TxDrops(ReasonPort) != 1 || c.TxDrops(ReasonNoTailroom) != 1 {
		t.Fatal("tx drop counters")
	}
	if s := c.Stats(2); s.TxFrames != 1 || s.TxBytes != 62 {
		t.Fatalf("stats %+v", s)
	}
	b.Free()
	// SendTo floods a mask; every port of it counts the frames.
	fill(t, pool, b, in, in)
	if n := c.SendTo(b, Dest{Ports: Port(0) | Port(5)}, nil); n != 2 {
		t.Fatal(n)
	}
	if c.Stats(0).TxFrames != 2 || c.Stats(5).TxFrames != 2 || c.Stats(2).TxFrames != 1 {
		t.Fatal("SendTo counters")
	}
	b.Free()
	if pool.InUse() != 0 {
		t.Fatal("buffers lost")
	}
}

// ptpL2 is a PTPv2 Sync over Ethernet (EtherType 0x88F7); ptpUDP a Sync to UDP port 319.
var (
	ptpL2  = hx("011b19000000 00aabbccddee 88f7 0002002c" + zeros(40))
	ptpUDP = hx("01005e000181 00aabbccddee 0800 4500003c 00000000 0111 0000 0a000001 e0000181 013f013f 00280000" + zeros(32))
)

func TestConduitTimestamps(t *testing.T) {
	c, err := NewConduit(Config{Tagger: mustTagger(t, "ksz9477")})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t)
	b := frame.NewBatch(8)
	ts := []byte{0x40, 0, 0, 7}
	frames := func() [][]byte {
		return [][]byte{
			cat(ptpL2, ts, []byte{0x81}),     // port 1, PTP, stamped
			cat(ptpUDP, ts, []byte{0x81}),    // port 1, PTP over UDP, stamped
			cat(hx(inner), ts, []byte{0x81}), // port 1, not PTP
			cat(ptpL2, ts, []byte{0x82}),     // port 2: timestamping off
			cat(ptpL2, []byte{0x01}),         // port 1, PTP, no timestamp in the tag
		}
	}
	check := func(on bool) {
		fill(t, pool, b, frames()...)
		c.Recv(b, nil)
		for i := range b.Frames {
			f := &b.Frames[i]
			want := on && (i == 0 || i == 1)
			if got := f.Flags&frame.FlagTimestamp != 0; got != want || (want && f.Meta != 0x40000007) {
				t.Fatalf("on=%v frame %d: stamped %v meta %#x", on, i, got, f.Meta)
			}
		}
		b.Free()
	}
	check(false)
	if c.Stats(1).RxPTP != 0 {
		t.Fatal("classified while off")
	}
	if err := c.EnableTimestamps(1, true); ptpCompiled && err != nil || !ptpCompiled && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("EnableTimestamps: %v (classifier compiled in: %v)", err, ptpCompiled)
	}
	check(ptpCompiled)
	if want := map[bool]uint64{true: 3, false: 0}[ptpCompiled]; c.Stats(1).RxPTP != want {
		t.Fatalf("RxPTP %d, want %d", c.Stats(1).RxPTP, want)
	}
	_ = c.EnableTimestamps(1, false)
	check(false)
	if c.EnableTimestamps(7, true) != ErrPort {
		t.Fatal("port 7 accepted")
	}
}

// The owner runs batches while other goroutines read counters and toggle timestamping.
func TestConduitConcurrentReaders(t *testing.T) {
	c, err := NewConduit(Config{Tagger: mustTagger(t, "qca"), Ports: 7})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			var last uint64
			for !stop.Load() {
				s := c.Stats(3)
				if s.RxFrames < last {
					t.Error("counter went backwards")
				}
				last = s.RxFrames
				_ = c.RxDrops(ReasonBadTag)
				_ = c.EnableTimestamps(g, last%2 == 0)
			}
		})
	}
	b := frame.NewBatch(64)
	good := naiveRx("qca", hx(inner), 0, 3)
	bad := hx(macs + " 4004 " + et + pl)
	const rounds = 200
	for range rounds {
		for i := range 64 {
			d := good
			if i%8 == 0 {
				d = bad
			}
			fill(t, pool, b, d)
		}
		c.Recv(b, nil)
		b.Free()
	}
	stop.Store(true)
	wg.Wait()
	if s := c.Stats(3); s.RxFrames != rounds*56 || c.RxDrops(ReasonBadTag) != rounds*8 {
		t.Fatalf("stats %+v drops %d", s, c.RxDrops(ReasonBadTag))
	}
	if pool.InUse() != 0 {
		t.Fatal("buffers lost")
	}
}

func TestNewConduitErrors(t *testing.T) {
	for _, cfg := range []Config{{}, {Tagger: mustTagger(t, "dsa"), Ports: 40}, {Tagger: mustTagger(t, "dsa"), Switches: 33}} {
		if _, err := NewConduit(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := ByName("nope"); err == nil {
		t.Error("unknown name accepted")
	}
}

func TestAllocs(t *testing.T) {
	for _, name := range Names() {
		tg := mustTagger(t, name)
		spec := tg.Spec()
		port := 1 % min(spec.Ports, rxWidth[name])
		rx := naiveRx(name, hx(inner), 0, port)
		_, b := oneFrame(t, rx)
		orig := b.Frames[0]
		in := new(Info)
		if a := testing.AllocsPerRun(100, func() {
			b.Frames[0] = orig
			setFrame(b, 0, rx)
			if err := tg.Decode(b, 0, in); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s Decode: %v allocs", name, a)
		}
		if a := testing.AllocsPerRun(100, func() {
			if err := tg.Parse(rx, in); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s Parse: %v allocs", name, a)
		}
		ins, rs := make([]Info, 1), make([]Reason, 1)
		if a := testing.AllocsPerRun(100, func() {
			b.Frames[0] = orig
			setFrame(b, 0, rx)
			if tg.DecodeBatch(b, ins, rs) != 1 {
				t.Fatal(rs[0])
			}
		}); a != 0 {
			t.Errorf("%s DecodeBatch: %v allocs", name, a)
		}
		tx := hx(inner)
		if a := testing.AllocsPerRun(100, func() {
			b.Frames[0] = orig
			setFrame(b, 0, tx)
			if err := tg.Encode(b, 0, To(port)); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s Encode: %v allocs", name, a)
		}
		if a := testing.AllocsPerRun(100, func() {
			b.Frames[0] = orig
			setFrame(b, 0, tx)
			if tg.EncodeBatch(b, To(port), rs) != 1 {
				t.Fatal(rs[0])
			}
		}); a != 0 {
			t.Errorf("%s EncodeBatch: %v allocs", name, a)
		}
	}
	// The conduit, with timestamping on and with drops.
	c, _ := NewConduit(Config{Tagger: mustTagger(t, "ksz9477")})
	_ = c.EnableTimestamps(1, true)
	pool := newPool(t)
	b := frame.NewBatch(64)
	drop := frame.NewBatch(64)
	good := cat(ptpL2, []byte{0x40, 0, 0, 1, 0x81})
	bad := hx(macs)
	if a := testing.AllocsPerRun(50, func() {
		for i := range 64 {
			if i%16 == 0 {
				fill(t, pool, b, bad)
			} else {
				fill(t, pool, b, good)
			}
		}
		c.Recv(b, drop)
		for i := range b.Frames {
			b.Frames[i].Out = 1
		}
		c.Send(b, nil)
		b.Free()
		drop.Free()
	}); a != 0 {
		t.Errorf("conduit: %v allocs", a)
	}
}

// Frames from an offloaded LAG (Marvell FORWARD with the trunk bit) reach the trunk ports of
// Config.Trunks, tag stripped, whatever the switch index: Linux hands them to the LAG's bond
// (tag_dsa.c dsa_rcv_ll). A trunk ID with no trunk port is dropped as ReasonTrunk.
func TestConduitTrunks(t *testing.T) {
	for _, name := range []string{"dsa", "edsa"} {
		for _, generic := range []bool{false, true} {
			tg := mustTagger(t, name)
			if generic {
				tg = opaque{tg}
			}
			c, err := NewConduit(Config{Tagger: tg, Ports: 8, Switches: 2, Trunks: 4})
			if err != nil {
				t.Fatal(err)
			}
			if c.NumPorts() != 16 || c.NumRxPorts() != 20 || c.TrunkPort(0) != 16 || c.TrunkPort(3) != 19 ||
				c.TrunkPort(4) != -1 || c.TrunkPort(-1) != -1 || c.LocalPort() != -1 {
				t.Fatalf("ports %d rx %d trunk 0 %d 3 %d 4 %d local %d", c.NumPorts(), c.NumRxPorts(),
					c.TrunkPort(0), c.TrunkPort(3), c.TrunkPort(4), c.LocalPort())
			}
			pre := ""
			if name == "edsa" {
				pre = "dada0000 "
			}
			in := hx(inner)
			frames := [][]byte{
				hx(macs + " " + pre + "c10c0000 " + et + pl), // FORWARD, dev 1, trunk 1 (b1 1<<3 | trunk bit)
				hx(macs + " " + pre + "e01da064 " + et + pl), // FORWARD tagged, dev 0, trunk 3, CFI: 802.1Q restored
				hx(macs + " " + pre + "c02c0000 " + et + pl), // trunk 5: no such trunk port
				naiveRx(name, in, 1, 2),                      // user port 8+2
			}
			pool := newPool(t)
			b := frame.NewBatch(8)
			fill(t, pool, b, frames...)
			if n := c.Recv(b, nil); n != 3 {
				t.Fatalf("%s generic %v: kept %d, drops %d", name, generic, n, c.RxDrops(ReasonTrunk))
			}
			tagged := hx(macs + " 8100b064 " + et + pl)
			for i, w := range []struct {
				port  int
				bytes []byte
			}{{c.TrunkPort(1), in}, {c.TrunkPort(3), tagged}, {10, in}} {
				if int(b.Frames[i].Port) != w.port || !bytes.Equal(b.Bytes(i), w.bytes) {
					t.Fatalf("%s frame %d: port %d want %d\n got % x\nwant % x", name, i, b.Frames[i].Port, w.port, b.Bytes(i), w.bytes)
				}
			}
			if c.RxDrops(ReasonTrunk) != 1 {
				t.Errorf("%s: trunk drops %d, want 1", name, c.RxDrops(ReasonTrunk))
			}
			if s := c.Stats(c.TrunkPort(1)); s.RxFrames != 1 || s.RxBytes != uint64(len(in)) {
				t.Errorf("%s: trunk 1 stats %+v", name, s)
			}
			if s := c.Stats(c.TrunkPort(3)); s.RxFrames != 1 || s.RxBytes != uint64(len(tagged)) {
				t.Errorf("%s: trunk 3 stats %+v", name, s)
			}
			// The trunk ports are receive-only.
			b.Free()
			fill(t, pool, b, in)
			b.Frames[0].Out = uint16(c.TrunkPort(1))
			if n := c.Send(b, nil); n != 0 || c.TxDrops(ReasonPort) != 1 {
				t.Fatalf("%s: Send to a trunk port kept %d, port drops %d", name, n, c.TxDrops(ReasonPort))
			}
			if err := c.EnableTimestamps(c.TrunkPort(0), true); err != ErrPort {
				t.Fatalf("EnableTimestamps on a trunk port: %v", err)
			}
			b.Free()
			if pool.InUse() != 0 {
				t.Fatal("buffers lost")
			}
		}
	}
	// Without Config.Trunks every trunk frame is dropped, counted.
	c, _ := NewConduit(Config{Tagger: mustTagger(t, "dsa")})
	pool := newPool(t)
	b := frame.NewBatch(4)
	fill(t, pool, b, hx(macs+" c00c0000 "+et+pl))
	if n := c.Recv(b, nil); n != 0 || c.RxDrops(ReasonTrunk) != 1 || pool.InUse() != 0 {
		t.Fatalf("kept %d, trunk drops %d, in use %d", n, c.RxDrops(ReasonTrunk), pool.InUse())
	}
	if _, err := NewConduit(Config{Tagger: mustTagger(t, "dsa"), Trunks: 33}); err == nil {
		t.Fatal("33 trunks accepted")
	}
}

// With Config.Local, an rtl4a frame whose EtherType is not 0x8899 stays in the batch unchanged
// with Frame.Port = LocalPort(), as tag_rtl4_a.c hands it to the conduit interface; without it,
// such a frame is dropped as ReasonNotTagged. A 0x8899 frame with another protocol is still a bad
// tag, and a tagged frame still goes to its port.
func TestConduitLocal(t *testing.T) {
	in := hx(inner)
	arp := hx(runt)
	frames := [][]byte{
		naiveRx("rtl4a", in, 0, 3),
		in,                                // IPv4, no Realtek tag
		arp,                               // ARP, no Realtek tag
		hx(macs + " 88999003 " + et + pl), // protocol 9: bad tag
	}
	for _, local := range []bool{false, true} {
		c, err := NewConduit(Config{Tagger: mustTagger(t, "rtl4a"), Trunks: 2, Local: local})
		if err != nil {
			t.Fatal(err)
		}
		pool := newPool(t)
		b := frame.NewBatch(8)
		fill(t, pool, b, frames...)
		n := c.Recv(b, nil)
		if c.RxDrops(ReasonBadTag) != 1 {
			t.Fatalf("local %v: bad-tag drops %d", local, c.RxDrops(ReasonBadTag))
		}
		if !local {
			if n != 1 || c.RxDrops(ReasonNotTagged) != 2 || c.LocalPort() != -1 || c.NumRxPorts() != 10 {
				t.Fatalf("kept %d, not-tagged drops %d, local port %d, rx ports %d", n, c.RxDrops(ReasonNotTagged), c.LocalPort(), c.NumRxPorts())
			}
		} else {
			if c.LocalPort() != 10 || c.NumRxPorts() != 11 {
				t.Fatalf("local port %d, rx ports %d", c.LocalPort(), c.NumRxPorts())
			}
			if n != 3 || c.RxDrops(ReasonNotTagged) != 0 {
				t.Fatalf("kept %d, not-tagged drops %d", n, c.RxDrops(ReasonNotTagged))
			}
			for i, w := range []struct {
				port  int
				bytes []byte
			}{{3, in}, {c.LocalPort(), in}, {c.LocalPort(), arp}} {
				if int(b.Frames[i].Port) != w.port || !bytes.Equal(b.Bytes(i), w.bytes) || b.Frames[i].Flags&frame.FlagTrapped != 0 {
					t.Fatalf("frame %d: port %d want %d, flags %v\n got % x\nwant % x", i, b.Frames[i].Port, w.port, b.Frames[i].Flags, b.Bytes(i), w.bytes)
				}
			}
			if s := c.Stats(c.LocalPort()); s.RxFrames != 2 || s.RxBytes != uint64(len(in)+len(arp)) || s.RxTrapped != 0 {
				t.Fatalf("local port stats %+v", s)
			}
		}
		b.Free()
		if pool.InUse() != 0 {
			t.Fatal("buffers lost")
		}
	}
	// Formats whose driver never passes a frame to the conduit keep dropping as before.
	c, _ := NewConduit(Config{Tagger: mustTagger(t, "edsa"), Local: true})
	pool := newPool(t)
	b := frame.NewBatch(4)
	fill(t, pool, b, in)
	if n := c.Recv(b, nil); n != 0 || c.RxDrops(ReasonNotTagged) != 1 || pool.InUse() != 0 {
		t.Fatalf("edsa: kept %d, not-tagged drops %d", n, c.RxDrops(ReasonNotTagged))
	}
}
