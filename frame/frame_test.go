package frame

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func TestPoolAllocRelease(t *testing.T) {
	p, err := NewPool(&PoolConfig{Buffers: 100, BufSize: 256, Headroom: 32})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch(64)
	n, err := p.Alloc(b, 1000)
	if err != nil || n != 64 {
		t.Fatalf("Alloc = %d, %v; want 64 (batch capacity)", n, err)
	}
	seen := map[uint32]bool{}
	for i, f := range b.Frames {
		if f.Len != 0 || f.Head != 32 || f.Tail != 224 || f.Off != f.Buf*256+32 {
			t.Fatalf("frame %d = %+v", i, f)
		}
		if seen[f.Buf] {
			t.Fatalf("buffer %d handed out twice", f.Buf)
		}
		seen[f.Buf] = true
	}
	b2 := NewBatch(64)
	n, _ = p.Alloc(b2, 64)
	if n != 36 || p.InUse() != 100 {
		t.Fatalf("second Alloc = %d, InUse %d; want 36, 100", n, p.InUse())
	}
	for _, f := range b2.Frames {
		if seen[f.Buf] {
			t.Fatalf("buffer %d handed out twice", f.Buf)
		}
	}
	if n, _ := p.Alloc(NewBatch(8), 8); n != 0 {
		t.Fatalf("empty pool gave %d frames", n)
	}
	b.Free()
	b2.Free()
	if p.InUse() != 0 || b.Len() != 0 {
		t.Fatalf("InUse after Free = %d, batch len %d", p.InUse(), b.Len())
	}
}

func TestPoolForeignAndDoubleRelease(t *testing.T) {
	p1, _ := NewPool(&PoolConfig{Buffers: 8})
	p2, _ := NewPool(&PoolConfig{Buffers: 8})
	b := NewBatch(8)
	if n, err := p1.Alloc(b, 2); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := p2.Alloc(b, 2); err != ErrForeign {
		t.Fatalf("Alloc into a batch of another pool: err %v, want ErrForeign", err)
	}
	f := b.Frames[0]
	b.Free()
	defer func() {
		if recover() == nil {
			t.Fatal("double release did not panic")
		}
	}()
	p1.Release([]Frame{f})
}

func TestPoolConfigErrors(t *testing.T) {
	for _, c := range []PoolConfig{
		{Buffers: -1}, {BufSize: 64, Headroom: 64}, {BufSize: 70000, Headroom: 100}, {Buffers: 1 << 22, BufSize: 2048},
	} {
		if _, err := NewPool(&c); err == nil {
			t.Errorf("NewPool(%+v) accepted", c)
		}
	}
}

func TestHeadTail(t *testing.T) {
	f := Frame{Off: 100, Len: 10, Head: 8, Tail: 60}
	if f.PushHead(9) || f.PushHead(-1) {
		t.Fatal("PushHead beyond headroom succeeded")
	}
	if !f.PushHead(4) || f.Off != 96 || f.Len != 14 || f.Head != 4 {
		t.Fatalf("PushHead(4) -> %+v", f)
	}
	if f.PullHead(15) || !f.PullHead(4) || f.Off != 100 || f.Len != 10 || f.Head != 8 {
		t.Fatalf("PullHead -> %+v", f)
	}
	if f.Resize(71) || !f.Resize(70) || f.Tail != 0 || !f.Resize(10) || f.Tail != 60 {
		t.Fatalf("Resize -> %+v", f)
	}
	arena := make([]byte, 200)
	for i := range arena {
		arena[i] = 0xee
	}
	if err := f.Pad(arena, MinEthernetLen); err != nil || f.Len != 60 {
		t.Fatalf("Pad: %v %+v", err, f)
	}
	for _, c := range arena[110:160] {
		if c != 0 {
			t.Fatal("Pad did not zero the bytes it added")
		}
	}
	if arena[160] != 0xee {
		t.Fatal("Pad wrote past the frame")
	}
	g := Frame{Off: 0, Len: 10, Tail: 5}
	if err := g.Pad(arena, 60); err != ErrNoTailroom {
		t.Fatalf("Pad without tailroom: %v", err)
	}
}

func TestBatchAppendAdopt(t *testing.T) {
	p, _ := NewPool(nil)
	in := NewBatch(4)
	p.Alloc(in, 4)
	out := NewBatch(3)
	out.Adopt(in)
	if !out.SameArena(in) {
		t.Fatal("Adopt did not take the arena")
	}
	for i := 0; i < 3; i++ {
		if !out.Append(in.Frames[i]) {
			t.Fatal("Append failed with room")
		}
	}
	if out.Append(in.Frames[3]) {
		t.Fatal("Append beyond capacity succeeded")
	}
	rest := NewBatch(1)
	rest.Adopt(in)
	rest.Append(in.Frames[3])
	in.Reset()
	out.Free()
	rest.Free()
	if p.InUse() != 0 {
		t.Fatalf("InUse %d", p.InUse())
	}
	if (&Batch{}).SameArena(out) {
		t.Fatal("empty batch claims out's arena")
	}
}

// naiveChecksum is RFC 1071 word by word.
func naiveChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

func TestChecksumAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if n%7 == 0 {
			for i := range b {
				b[i] = 0xff
			}
		}
		if got, want := Checksum(b), naiveChecksum(b); got != want {
			t.Fatalf("len %d: Checksum %#04x, naive %#04x", n, got, want)
		}
	}
}

func TestIncrementalUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hdr := make([]byte, 20)
	for i := 0; i < 20000; i++ {
		for j := range hdr {
			hdr[j] = byte(r.Uint32())
		}
		if i%5 == 0 {
			clear(hdr[12:20]) // exercise all-zero words
		}
		hdr[0] = 0x45
		ip := IPv4(hdr)
		ip.SetChecksum()
		switch i % 3 {
		case 0:
			ip.SetSrc(r.Uint32())
		case 1:
			ip.SetDst(uint32(i % 4)) // small values flip many bits
		case 2:
			hdr[8] = byte(2 + r.IntN(254))
			ip.SetChecksum()
			if !ip.DecTTL() {
				t.Fatal("DecTTL refused a TTL > 1")
			}
		}
		if !ip.ChecksumOK() {
			t.Fatalf("iteration %d: incremental checksum wrong: % x", i, hdr)
		}
	}
}

func TestDecTTLExpired(t *testing.T) {
	for _, ttl := range []byte{0, 1} {
		h := make(IPv4, 20)
		h[0], h[8] = 0x45, ttl
		h.SetChecksum()
		c := h.Checksum()
		if h.DecTTL() || h.TTL() != ttl || h.Checksum() != c {
			t.Fatalf("DecTTL with TTL %d changed the packet", ttl)
		}
	}
}

func buildUDP(t testing.TB, src, dst [4]byte, sport, dport uint16, payload int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src[:], DstIP: dst[:], Flags: layers.IPv4DontFragment}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(make([]byte, payload))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestIPv4AgainstGopacket(t *testing.T) {
	pkt := buildUDP(t, [4]byte{10, 1, 2, 3}, [4]byte{192, 0, 2, 9}, 1234, 53, 10)
	e, err := ParseEther(pkt)
	if err != nil || e.Type() != TypeIPv4 || e.Src() != (MAC{2, 0, 0, 0, 0, 1}) || e.Dst().String() != "02:00:00:00:00:02" {
		t.Fatalf("Ether: %v %v", err, e)
	}
	ip, err := ParseIPv4(pkt[EtherLen:])
	if err != nil {
		t.Fatal(err)
	}
	if !ip.ChecksumOK() || ip.TTL() != 64 || ip.Protocol() != ProtoUDP || !ip.DontFragment() || ip.IsFragment() {
		t.Fatalf("fields wrong: % x", ip)
	}
	if ip.SrcAddr().String() != "10.1.2.3" || ip.Dst() != 0xc0000209 {
		t.Fatalf("addresses: %v %#x", ip.SrcAddr(), ip.Dst())
	}
	if s, d, ok := ip.Ports(); !ok || s != 1234 || d != 53 {
		t.Fatalf("Ports = %d %d %v", s, d, ok)
	}
	if !ip.DecTTL() {
		t.Fatal("DecTTL")
	}
	ip.SetDst(0x0a0a0a0a)
	// gopacket recomputes nothing on decode: its view of our rewritten header must agree.
	p := gopacket.NewPacket(pkt, layers.LayerTypeEthernet, gopacket.Default)
	gip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if gip.TTL != 63 || gip.DstIP.String() != "10.10.10.10" {
		t.Fatalf("gopacket sees TTL %d dst %v", gip.TTL, gip.DstIP)
	}
	want := gip.Checksum
	gip.Checksum = 0
	buf := gopacket.NewSerializeBuffer()
	gip.SerializeTo(buf, gopacket.SerializeOptions{ComputeChecksums: true})
	if got := binary.BigEndian.Uint16(buf.Bytes()[10:12]); got != want {
		t.Fatalf("incremental checksum %#04x, gopacket computes %#04x", want, got)
	}
}

func TestIPv4Malformed(t *testing.T) {
	good := buildUDP(t, [4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 1, 2, 0)[EtherLen:]
	cases := map[string]struct {
		mut  func([]byte) []byte
		want error
	}{
		"short":        {func(b []byte) []byte { return b[:19] }, ErrTruncated},
		"version6":     {func(b []byte) []byte { b[0] = 0x65; return b }, ErrBadHeader},
		"ihl4":         {func(b []byte) []byte { b[0] = 0x44; return b }, ErrBadHeader},
		"totlen<hl":    {func(b []byte) []byte { b[2], b[3] = 0, 19; return b }, ErrBadHeader},
		"totlen>buf":   {func(b []byte) []byte { b[2], b[3] = 0, 200; return b }, ErrTruncated},
		"ihl>totlen":   {func(b []byte) []byte { b[0] = 0x4f; return b }, ErrBadHeader},
		"options-fits": {func(b []byte) []byte { b[0] = 0x46; return b }, nil},
	}
	for name, c := range cases {
		b := c.mut(append([]byte(nil), good...))
		if _, err := ParseIPv4(b); err != c.want {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
	frag := append([]byte(nil), good...)
	frag[6], frag[7] = 0, 1
	if _, _, ok := IPv4(frag).Ports(); ok {
		t.Error("Ports of a non-first fragment")
	}
	frag[6], frag[7] = 0x20, 0
	if _, _, ok := IPv4(frag).Ports(); ok {
		t.Error("Ports of a first fragment")
	}
}

func TestZeroAllocs(t *testing.T) {
	pkt := buildUDP(t, [4]byte{10, 1, 2, 3}, [4]byte{192, 0, 2, 9}, 1234, 53, 10)
	p, _ := NewPool(nil)
	b := NewBatch(64)
	var sink uint32
	cases := map[string]func(){
		"ParseIPv4+Ports+DecTTL": func() {
			pkt[EtherLen+8] = 64
			ip, err := ParseIPv4(pkt[EtherLen:])
			if err != nil {
				t.Fatal(err)
			}
			s, d, _ := ip.Ports()
			ip.DecTTL()
			sink += uint32(s) + uint32(d) + ip.Dst()
		},
		"Checksum":      func() { sink += uint32(Checksum(pkt[EtherLen : EtherLen+20])) },
		"Alloc+Free":    func() { p.Alloc(b, 64); b.Free() },
		"PushPull+Data": func() { f := Frame{Off: 8, Head: 8, Len: 4}; f.PushHead(4); sink += uint32(len(f.Data(pkt))) },
	}
	for name, fn := range cases {
		if a := testing.AllocsPerRun(200, fn); a != 0 {
			t.Errorf("%s: %v allocs, want 0", name, a)
		}
	}
	_ = sink
}

func TestClearMeta(t *testing.T) {
	f := Frame{Off: 1, Buf: 2, Len: 3, Head: 4, Tail: 5, Flags: 6, TPID: 7, TCI: 8, Port: 9, Out: 10, L3: 11, Meta: 12}
	f.ClearMeta()
	if f != (Frame{Off: 1, Buf: 2, Len: 3, Head: 4, Tail: 5}) {
		t.Fatalf("ClearMeta: %+v", f)
	}
}

// TestDecTTLEqualsRecompute: the checksum DecTTL leaves is the one a full recomputation writes, bit
// for bit (not just an equivalent ones'-complement zero), for random headers, every TTL and the
// checksum values next to the end-around carry.
func TestDecTTLEqualsRecompute(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	hdr := make(IPv4, 20)
	want := make(IPv4, 20)
	for i := 0; i < 300000; i++ {
		for j := range hdr {
			hdr[j] = byte(r.Uint32())
		}
		hdr[0] = 0x45
		hdr[8] = byte(2 + i%254)
		if i%7 == 0 {
			clear(hdr[1:8]) // small sums: checksums near 0xffff
			clear(hdr[12:20])
		}
		hdr.SetChecksum()
		copy(want, hdr)
		want[8]--
		want.SetChecksum()
		if !hdr.DecTTL() || hdr.Checksum() != want.Checksum() || hdr.TTL() != want.TTL() {
			t.Fatalf("% x: DecTTL gave TTL %d checksum %#04x, recomputed %#04x", want, hdr.TTL(), hdr.Checksum(), want.Checksum())
		}
	}
}

// TestChecksumOKAgrees: the option-less fast path of ChecksumOK says what Checksum(header) == 0 says,
// for correct headers and for headers with one random bit flipped.
func TestChecksumOKAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	hdr := make(IPv4, 20)
	for i := 0; i < 200000; i++ {
		for j := range hdr {
			hdr[j] = byte(r.Uint32())
		}
		hdr[0] = 0x45
		if i%5 == 0 {
			clear(hdr[2:10])
		}
		hdr.SetChecksum()
		if i%2 == 1 {
			b := 8 + r.IntN(152) // any bit after the version/IHL byte
			hdr[b/8] ^= 1 << (b % 8)
		}
		if got, want := hdr.ChecksumOK(), Checksum(hdr) == 0; got != want {
			t.Fatalf("% x: ChecksumOK %v, Checksum()==0 %v", hdr, got, want)
		}
	}
}

// TestChecksumOKEdges: headers whose sums sit on the carries of the fast path (all-ones words, words
// that sum to exactly 2^32 or 2^64), and headers the fast path does not take (options, IHL < 5, IHL
// beyond the slice): never a panic, and the answer of the generic sum.
func TestChecksumOKEdges(t *testing.T) {
	var cases []IPv4
	for _, fill := range []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff} {
		h := make(IPv4, 20)
		for i := range h {
			h[i] = fill
		}
		h[0] = 0x45
		cases = append(cases, append(IPv4(nil), h...))
		h.SetChecksum()
		cases = append(cases, h)
	}
	for _, tail := range [][]byte{{0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 1}, {0xff, 0xff, 0, 0}} {
		h := IPv4{0x45, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff}
		h = append(h, tail...)
		cases = append(cases, append(IPv4(nil), h...))
		h.SetChecksum()
		cases = append(cases, h)
	}
	for _, c := range cases {
		if got, want := c.ChecksumOK(), Checksum(c) == 0; got != want {
			t.Errorf("% x: ChecksumOK %v, Checksum()==0 %v", c, got, want)
		}
	}
	opt := make(IPv4, 24)
	opt[0] = 0x46
	opt.SetChecksum()
	if !opt.ChecksumOK() {
		t.Error("24-byte header with options and a correct checksum: not OK")
	}
	for _, bad := range []IPv4{{0x44, 0, 0, 0}, append(make(IPv4, 0, 20), 0x4f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19), {0x45, 0}, nil} {
		if bad.ChecksumOK() {
			t.Errorf("% x: ChecksumOK on a header shorter than its IHL or than 20 bytes", bad)
		}
	}
}
