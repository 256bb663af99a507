package lag

import (
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/race"
)

// adversarialTemplates are whole frames of every shape the XOR loops' paths decide on, and of the
// shapes next to them that they must leave to the general path: each path's own frame (untagged
// IPv4 TCP/UDP, IPv4 and IPv6 behind one in-band tag of either TPID, untagged IPv6), and IPv4 with
// options, fragments (MF, an offset, DF alone), other protocols, a bad version or IHL, QinQ, an
// out-of-band tag with and without an in-band one, IPv6 extension and fragment headers, ICMP,
// ARP and unknown EtherTypes.
func adversarialTemplates() []synthFrame {
	r := rand.New(rand.NewPCG(21, 22))
	src, dst := []byte{192, 0, 2, 1}, []byte{198, 51, 100, 7}
	s6, d6 := rnd(r, 16), rnd(r, 16)
	pl := func(n int) []byte { return rnd(r, n) }
	tag := func(tpid, tci uint16) []byte { return cat(be16(tpid), be16(tci)) }
	v4 := func(proto uint8, frag uint16) []byte { return cat(be16(0x0800), ipv4(src, dst, proto, frag)) }
	v6 := func(next uint8) []byte { return cat(be16(0x86dd), ipv6(s6, d6, next)) }
	l4 := cat(be16(40000), be16(443), pl(20))
	opts := ipv4(src, dst, protoTCP, 0)
	opts[0] = 0x46
	opts = cat(opts, pl(4))
	badVer := ipv4(src, dst, protoTCP, 0)
	badVer[0] = 0x65
	ihl4 := ipv4(src, dst, protoUDP, 0)
	ihl4[0] = 0x44
	udpOpts := ipv4(src, dst, protoUDP, 0)
	udpOpts[0] = 0x47
	udpOpts = cat(udpOpts, pl(8))
	fragOpts := ipv4(src, dst, protoTCP, 0x2001)
	fragOpts[0] = 0x46
	fragOpts = cat(fragOpts, pl(4))
	var t []synthFrame
	add := func(oob bool, tci uint16, parts ...[]byte) {
		t = append(t, synthFrame{b: cat(append([][]byte{rnd(r, 6), rnd(r, 6)}, parts...)...), oob: oob, tci: tci})
	}
	for _, oob := range []bool{false, true} {
		for _, pre := range [][]byte{nil, tag(0x8100, 0x0064), tag(0x88a8, 0x0fff), cat(tag(0x88a8, 5), tag(0x8100, 6))} {
			add(oob, 0xa07b, pre, v4(protoTCP, 0), l4)
			add(oob, 0xa07b, pre, v4(protoUDP, 0), l4)
			add(oob, 0xa07b, pre, v4(protoUDP, 0x4000), l4) // DF: not a fragment
			add(oob, 0xa07b, pre, v4(protoTCP, 0x2000), l4) // MF
			add(oob, 0xa07b, pre, v4(protoUDP, 0x0003), l4) // an offset
			add(oob, 0xa07b, pre, v4(1, 0), cat([]byte{8, 0, 0, 0, 0x12, 0x34}, pl(20)))
			add(oob, 0xa07b, pre, v4(132, 0), l4)
			add(oob, 0xa07b, pre, be16(0x0800), opts, l4)
			add(oob, 0xa07b, pre, be16(0x0800), badVer, l4)
			add(oob, 0xa07b, pre, be16(0x0800), ihl4, l4)
			add(oob, 0xa07b, pre, v6(protoTCP), l4)
			add(oob, 0xa07b, pre, v6(protoUDP), l4)
			add(oob, 0xa07b, pre, v6(0), cat([]byte{protoTCP, 0}, pl(6)), l4) // hop-by-hop, then TCP
			add(oob, 0xa07b, pre, v6(44), []byte{protoUDP, 0, 0, 0, 1, 2, 3, 4}, l4)
			add(oob, 0xa07b, pre, v6(58), []byte{128, 0, 0, 0, 0x12, 0x34}, pl(20))
			// The layer2+3 and encap2+3 loops check less than the port policies' (any fragment
			// state, IHL or version for layer2+3); their neighbours: ICMP errors (whose addresses
			// are the embedded header's), ICMPv6's protocol number in IPv4, tunnels, options
			// with UDP, a fragment with options.
			add(oob, 0xa07b, pre, v4(1, 0), []byte{3, 3, 0, 0, 0, 0, 0, 0}, ipv4(dst, src, protoUDP, 0), l4)
			add(oob, 0xa07b, pre, v4(58, 0), []byte{1, 0, 0, 0, 0, 0, 0, 0}, ipv4(dst, src, protoUDP, 0), l4)
			add(oob, 0xa07b, pre, v4(4, 0), ipv4(dst, src, protoTCP, 0), l4)
			add(oob, 0xa07b, pre, v4(47, 0), []byte{0, 0, 0x08, 0}, ipv4(dst, src, protoUDP, 0), l4)
			add(oob, 0xa07b, pre, be16(0x0800), udpOpts, l4)
			add(oob, 0xa07b, pre, be16(0x0800), fragOpts, l4)
			add(oob, 0xa07b, pre, v6(58), []byte{1, 4, 0, 0, 0, 0, 0, 0}, ipv6(d6, s6, protoUDP), l4)
			add(oob, 0xa07b, pre, v6(1), l4)
			add(oob, 0xa07b, pre, be16(0x0806), pl(28))
			add(oob, 0xa07b, pre, be16(0x88cc), pl(40))
		}
	}
	return t
}

// TestSelectEqualsGeneralAdversarial: every XOR loop chooses what the general path does for each
// adversarial template cut at every length (the rest of the frame's bytes still in memory after
// its end, where the header window reads them, so a missing length check shows), at the arena's
// end (the window then runs past it), and with each of the first 70 bytes replaced by values that
// turn one shape into a neighbouring one.
func TestSelectEqualsGeneralAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const slot = 256
	var pending []synthFrame
	var whole [][]byte // the template each pending frame was cut from (its bytes after the cut)
	flush := func(atEnd bool) {
		if len(pending) == 0 {
			return
		}
		b := &frame.Batch{Mem: make([]byte, len(pending)*slot), Frames: make([]frame.Frame, len(pending))}
		for i, sf := range pending {
			off := i*slot + 64
			if atEnd && i == len(pending)-1 {
				off = len(b.Mem) - len(sf.b)
			}
			copy(b.Mem[off:], whole[i]) // the full template: the bytes past the cut are real headers
			copy(b.Mem[off:], sf.b)
			b.Frames[i] = frame.Frame{Off: uint32(off), Len: uint16(len(sf.b)), TCI: sf.tci}
			if sf.oob {
				b.Frames[i].Flags |= frame.FlagVLAN
			}
		}
		checkSelectEqualsGeneral(t, b)
		pending, whole = pending[:0], whole[:0]
	}
	push := func(sf synthFrame, full []byte, atEnd bool) {
		pending = append(pending, sf)
		whole = append(whole, full)
		if len(pending) == 64 {
			flush(atEnd)
		}
	}
	values := []byte{0x00, 0xff, 0x08, 0x00, 0x81, 0x88, 0xa8, 0x86, 0xdd, 0x45, 0x46, 0x60, protoTCP, protoUDP, 0x20, 0x40}
	for _, tp := range adversarialTemplates() {
		if len(tp.b) > slot-64 {
			t.Fatalf("template of %d bytes", len(tp.b))
		}
		for n := 0; n <= len(tp.b); n++ {
			sf := tp
			sf.b = tp.b[:n]
			push(sf, tp.b, false)
		}
		flush(false)
		for n := 0; n <= len(tp.b); n++ {
			sf := tp
			sf.b = tp.b[:n]
			pending = append(pending, sf)
			whole = append(whole, tp.b)
			flush(true)
		}
		vs := values
		if race.Enabled { // a single goroutine: the detector adds time, not coverage
			vs = values[:4]
		}
		for pos := 0; pos < min(70, len(tp.b)); pos++ {
			for _, v := range append(vs, byte(r.IntN(256))) {
				m := append([]byte(nil), tp.b...)
				m[pos] = v
				sf := tp
				sf.b = m
				push(sf, m, false)
			}
		}
		flush(false)
	}
}
