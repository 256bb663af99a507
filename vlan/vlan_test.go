package vlan

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

var (
	dstMAC = []byte{0x02, 0, 0, 0, 0, 0xbb}
	srcMAC = []byte{0x02, 0, 0, 0, 0, 0xaa}
)

// gpFrame serialises Ethernet + tags + IPv4/UDP with gopacket: the independent reference.
func gpFrame(t testing.TB, tags []Tag, payload int) []byte {
	t.Helper()
	ls := []gopacket.SerializableLayer{}
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
	if len(tags) > 0 {
		eth.EthernetType = layers.EthernetType(tags[0].TPID)
	}
	ls = append(ls, eth)
	for i, tg := range tags {
		next := layers.EthernetTypeIPv4
		if i+1 < len(tags) {
			next = layers.EthernetType(tags[i+1].TPID)
		}
		ls = append(ls, &layers.Dot1Q{Priority: tg.TCI.PCP(), DropEligible: tg.TCI.DEI(), VLANIdentifier: tg.TCI.VID(), Type: next})
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: 49152, DstPort: 49153}
	udp.SetNetworkLayerForChecksum(ip)
	ls = append(ls, ip, udp, gopacket.Payload(make([]byte, payload)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// load puts pkt in a fresh pool frame and returns its batch.
func load(t testing.TB, p *frame.Pool, pkts ...[]byte) *frame.Batch {
	t.Helper()
	b := frame.NewBatch(64)
	if n, err := p.Alloc(b, len(pkts)); n != len(pkts) || err != nil {
		t.Fatalf("Alloc %d: %d %v", len(pkts), n, err)
	}
	for i, pkt := range pkts {
		if !b.Frames[i].Resize(len(pkt)) {
			t.Fatal("frame too small")
		}
		copy(b.Bytes(i), pkt)
	}
	return b
}

func newPool(t testing.TB) *frame.Pool {
	p, err := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTCI(t *testing.T) {
	c := NewTCI(5, true, 100)
	if c != 0xb064 || c.PCP() != 5 || !c.DEI() || c.VID() != 100 {
		t.Fatalf("NewTCI = %#04x (%v)", uint16(c), c)
	}
	if c.WithVID(4094).VID() != 4094 || c.WithVID(4094).PCP() != 5 || c.WithPCP(1).PCP() != 1 || c.WithPCP(1).VID() != 100 {
		t.Fatal("With* changed other fields")
	}
	if NewTCI(9, false, 0x1fff) != 0x2fff {
		t.Fatal("NewTCI does not mask")
	}
	if c.String() != "vid=100 pcp=5 dei=1" {
		t.Fatal(c.String())
	}
}

func TestParse(t *testing.T) {
	p9100, err := NewParser(TPID9100, 0, TPID8021Q)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pkt  []byte
		p    Parser
		want Header
		err  error
	}{
		{"untagged", gpFrame(t, nil, 0), Parser{}, Header{EtherType: frame.TypeIPv4, Len: 14}, nil},
		{"dot1q", gpFrame(t, []Tag{{TPID8021Q, NewTCI(3, false, 42)}}, 0), Parser{},
			Header{Outer: Tag{TPID8021Q, NewTCI(3, false, 42)}, N: 1, EtherType: frame.TypeIPv4, Len: 18}, nil},
		{"qinq", gpFrame(t, []Tag{S(100), C(200)}, 0), Parser{},
			Header{Outer: S(100), Inner: C(200), N: 2, EtherType: frame.TypeIPv4, Len: 22}, nil},
		{"triple stops at two", gpFrame(t, []Tag{S(1), C(2), C(3)}, 0), Parser{},
			Header{Outer: S(1), Inner: C(2), N: 2, EtherType: TPID8021Q, Len: 22}, nil},
		{"9100 unknown by default", gpFrame(t, []Tag{{TPID9100, 7}, C(8)}, 0), Parser{},
			Header{EtherType: TPID9100, Len: 14}, nil},
		{"9100 with parser", gpFrame(t, []Tag{{TPID9100, 7}, C(8)}, 0), p9100,
			Header{Outer: Tag{TPID9100, 7}, Inner: C(8), N: 2, EtherType: frame.TypeIPv4, Len: 22}, nil},
		{"short", make([]byte, 13), Parser{}, Header{}, ErrTruncated},
		{"tag cut", gpFrame(t, []Tag{C(5)}, 0)[:17], Parser{}, Header{}, ErrTruncated},
	}
	for _, c := range cases {
		var h Header
		err := c.p.Parse(c.pkt, &h)
		if err != c.err || (err == nil && h != c.want) {
			t.Errorf("%s: Parse = %+v, %v; want %+v, %v", c.name, h, err, c.want, c.err)
		}
	}
	if _, err := NewParser(1, 2, 3, 4, 5); err == nil {
		t.Error("NewParser took 5 extra TPIDs")
	}
}

// TestPushAgainstGopacket: every frame Push writes decodes in gopacket exactly as gopacket's own
// serialisation of the same tags.
func TestPushAgainstGopacket(t *testing.T) {
	p := newPool(t)
	for _, tags := range [][]Tag{
		{C(1)}, {C(4094)}, {{TPID8021Q, NewTCI(7, true, 2)}}, {S(100), C(200)}, {S(4094), {TPID8021Q, NewTCI(1, false, 3)}},
	} {
		b := load(t, p, gpFrame(t, nil, 30))
		for j := len(tags) - 1; j >= 0; j-- {
			if err := Push(b, 0, tags[j]); err != nil {
				t.Fatal(err)
			}
		}
		got, want := b.Bytes(0), gpFrame(t, tags, 30)
		if !bytes.Equal(got, want) {
			t.Fatalf("tags %v:\n got % x\nwant % x", tags, got, want)
		}
		pk := gopacket.NewPacket(got, layers.LayerTypeEthernet, gopacket.Default)
		if pk.ErrorLayer() != nil {
			t.Fatal(pk.ErrorLayer().Error())
		}
		var dq []*layers.Dot1Q
		for _, l := range pk.Layers() {
			if d, ok := l.(*layers.Dot1Q); ok {
				dq = append(dq, d)
			}
		}
		if len(dq) != len(tags) || pk.Layer(layers.LayerTypeUDP) == nil {
			t.Fatalf("gopacket saw %d tags", len(dq))
		}
		for j, d := range dq {
			if d.VLANIdentifier != tags[j].TCI.VID() || d.Priority != tags[j].TCI.PCP() || d.DropEligible != tags[j].TCI.DEI() {
				t.Fatalf("tag %d: gopacket %+v, want %v", j, d, tags[j])
			}
		}
		if b.Frames[0].Head != 128-4*uint16(len(tags)) {
			t.Fatal("push did not use headroom")
		}
		b.Free()
	}
	if p.InUse() != 0 {
		t.Fatal("leak")
	}
}

func TestPopAndPad(t *testing.T) {
	p := newPool(t)
	tagged := gpFrame(t, []Tag{S(10), C(20)}, 100)
	b := load(t, p, tagged)
	if tg, err := Pop(b, 0); err != nil || tg != S(10) {
		t.Fatalf("Pop = %v %v", tg, err)
	}
	if !bytes.Equal(b.Bytes(0), gpFrame(t, []Tag{C(20)}, 100)) {
		t.Fatal("after one pop")
	}
	if tg, err := Pop(b, 0); err != nil || tg != C(20) {
		t.Fatalf("Pop = %v %v", tg, err)
	}
	if !bytes.Equal(b.Bytes(0), gpFrame(t, nil, 100)) {
		t.Fatal("after two pops")
	}
	if _, err := Pop(b, 0); err != ErrNotTagged {
		t.Fatalf("Pop untagged: %v", err)
	}
	b.Free()

	// A minimal 64-byte tagged frame pops to 60, not 56 (VLAN_ETH_ZLEN → ETH_ZLEN).
	small := gpFrame(t, []Tag{C(5)}, 0) // 18+20+8 = 46 bytes
	small = append(small, make([]byte, 64-len(small))...)
	for i := 38 + 8; i < 64; i++ {
		small[i] = 0xee // padding garbage that must not leak past the new end
	}
	b = load(t, p, small)
	// Dirty the bytes behind the frame to prove Pop zeroes what it adds.
	f := b.Frames[0]
	for i := f.Off + uint32(f.Len); i < f.Off+uint32(f.Len)+8; i++ {
		b.Mem[i] = 0x77
	}
	if _, err := Pop(b, 0); err != nil {
		t.Fatal(err)
	}
	if b.Frames[0].Len != 60 {
		t.Fatalf("popped runt has %d bytes, want 60", b.Frames[0].Len)
	}
	b.Free()

	b = load(t, p, tagged[:16])
	if _, err := Pop(b, 0); err != ErrTruncated {
		t.Fatalf("Pop of a 16-byte frame: %v", err)
	}
	b.Free()
}

func TestRewriteAndOOB(t *testing.T) {
	p := newPool(t)
	b := load(t, p, gpFrame(t, []Tag{C(20)}, 30), gpFrame(t, nil, 30))
	if err := SetTCI(b, 0, NewTCI(6, true, 21)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(0), gpFrame(t, []Tag{{TPID8021Q, NewTCI(6, true, 21)}}, 30)) {
		t.Fatal("SetTCI wrote the wrong bytes")
	}
	if err := SetTCI(b, 1, 5); err != ErrNotTagged {
		t.Fatalf("SetTCI untagged: %v", err)
	}

	// AF_PACKET style: kernel stripped an S-tag, reports it out of band.
	f := &b.Frames[1]
	f.Flags |= frame.FlagVLAN
	f.TPID, f.TCI = TPID8021AD, uint16(NewTCI(2, false, 300))
	if tg, ok := std.Outer(b, 1); !ok || tg != (Tag{TPID8021AD, NewTCI(2, false, 300)}) {
		t.Fatalf("Outer OOB = %v %v", tg, ok)
	}
	if err := SetTCI(b, 1, NewTCI(2, false, 301)); err != nil || f.TCI != uint16(NewTCI(2, false, 301)) {
		t.Fatal("SetTCI OOB")
	}
	// Pushing a new outer tag must first put the OOB one back: order S(301) under the new one.
	if err := Push(b, 1, S(7)); err != nil {
		t.Fatal(err)
	}
	if f.Flags&frame.FlagVLAN != 0 {
		t.Fatal("flag still set after Push")
	}
	if !bytes.Equal(b.Bytes(1), gpFrame(t, []Tag{S(7), {TPID8021AD, NewTCI(2, false, 301)}}, 30)) {
		t.Fatalf("OOB reinsert order wrong: % x", b.Bytes(1))
	}
	// TPID 0 reported by old kernels means 0x8100.
	g := &b.Frames[0]
	Pop(b, 0)
	g.Flags |= frame.FlagVLAN
	g.TCI = 9
	if err := Reinsert(b, 0); err != nil || !bytes.Equal(b.Bytes(0), gpFrame(t, []Tag{C(9)}, 30)) {
		t.Fatalf("Reinsert TPID 0: %v % x", err, b.Bytes(0))
	}
	// Pop of an OOB tag touches no byte.
	g.Flags |= frame.FlagVLAN
	g.TPID, g.TCI = TPID8021Q, 77
	before := append([]byte(nil), b.Bytes(0)...)
	if tg, err := Pop(b, 0); err != nil || tg != C(77) || !bytes.Equal(before, b.Bytes(0)) || g.Flags&frame.FlagVLAN != 0 {
		t.Fatal("Pop OOB")
	}
	b.Free()
}

func TestPushNoHeadroom(t *testing.T) {
	mem := make([]byte, 100)
	b := &frame.Batch{Frames: []frame.Frame{{Off: 2, Len: 60, Head: 2}, {Off: 10, Len: 11, Head: 10}}, Mem: mem}
	if err := Push(b, 0, C(1)); err != ErrNoHeadroom {
		t.Fatalf("Push without headroom: %v", err)
	}
	if err := Push(b, 1, C(1)); err != ErrTruncated {
		t.Fatalf("Push on an 11-byte frame: %v", err)
	}
	if b.Frames[0] != (frame.Frame{Off: 2, Len: 60, Head: 2}) {
		t.Fatal("failed Push changed the frame")
	}
}

func TestZeroAllocs(t *testing.T) {
	p := newPool(t)
	b := load(t, p, gpFrame(t, []Tag{C(20)}, 10))
	pkt := gpFrame(t, []Tag{S(1), C(2)}, 10)
	var sink int
	fns := map[string]func(){
		"Parse":   func() { var h Header; Parse(pkt, &h); sink += int(h.Len) },
		"PopPush": func() { Pop(b, 0); Push(b, 0, C(20)) },
		"SetTCI":  func() { SetTCI(b, 0, 20) },
		"Outer":   func() { tg, _ := std.Outer(b, 0); sink += int(tg.TPID) },
	}
	for name, fn := range fns {
		if a := testing.AllocsPerRun(500, fn); a != 0 {
			t.Errorf("%s: %v allocs", name, a)
		}
	}
	_ = sink
	_ = binary.BigEndian
}
