package neigh

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// TestParseARPOracle: parseARP accepts exactly the packets gopacket decodes as Ethernet/IPv4 ARP
// requests and replies, with the same fields, on random and mutated packets of every length.
func TestParseARPOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	valid := []byte{0, 1, 8, 0, 6, 4, 0, 1, 2, 3, 4, 5, 6, 7, 10, 0, 0, 9, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1}
	for n := 0; n < 20000; n++ {
		var b []byte
		switch n % 3 {
		case 0: // a valid packet with a few bytes changed, of random length
			b = append([]byte(nil), valid...)
			for k := rng.IntN(3); k > 0; k-- {
				b[rng.IntN(8)] = byte(rng.IntN(4)) * byte(rng.IntN(256)&0x87)
			}
			b = append(b, make([]byte, rng.IntN(20))...)
			b = b[:rng.IntN(len(b)+1)]
		case 1: // random bytes after a valid header
			b = append([]byte(nil), valid[:8]...)
			b[7] = byte(rng.IntN(4))
			for k := rng.IntN(40); k > 0; k-- {
				b = append(b, byte(rng.Uint32()))
			}
		default:
			for k := rng.IntN(40); k > 0; k-- {
				b = append(b, byte(rng.Uint32()))
			}
		}
		p, why := parseARP(b)
		var a layers.ARP
		err := a.DecodeFromBytes(b, gopacket.NilDecodeFeedback)
		want := err == nil && a.AddrType == layers.LinkTypeEthernet && a.Protocol == layers.EthernetTypeIPv4 &&
			a.HwAddressSize == 6 && a.ProtAddressSize == 4 && (a.Operation == 1 || a.Operation == 2)
		if (why == arpOK) != want {
			t.Fatalf("%x: parseARP %d, gopacket %v %+v", b, why, err, a)
		}
		if !want {
			continue
		}
		if p.op != a.Operation || p.sha != frame.MAC(a.SourceHwAddress) || p.tha != frame.MAC(a.DstHwAddress) ||
			p.spa != binary.BigEndian.Uint32(a.SourceProtAddress) || p.tpa != binary.BigEndian.Uint32(a.DstProtAddress) {
			t.Fatalf("%x: parseARP %+v, gopacket %+v", b, p, a)
		}
	}
}

// TestBuildOracle: every kind of generated frame decodes with gopacket to what it should say.
func TestBuildOracle(t *testing.T) {
	r := newRig(t)
	// A request for an address of interface 1, answered from interface 1.
	r.requestFrom(1, macA, host1, own1b)
	// A request on interface 1 for interface 0's address: answered too (weak host), from mac1.
	r.requestFrom(1, macB, netip.MustParseAddr("192.168.1.7"), own0)
	// An RFC 5227 probe.
	r.input(0, arpBytes(t, 1, macBC, macC, zeroIP, frame.MAC{}, own0))
	// Announcements of interface 1's two addresses.
	r.tab.Announce(1, r.out)
	r.tab.Announce(9, r.out) // no such interface: nothing
	// A request for a next hop on interface 1, from the address on its subnet.
	if err := r.tab.AddNextHop(1, 1, netip.MustParseAddr("192.168.2.200")); err != nil {
		t.Fatal(err)
	}
	r.poll()
	want := []sent{
		{ethDst: macA, ethSrc: mac1, op: 2, sha: mac1, spa: own1b, tha: macA, tpa: host1, out: 1},
		{ethDst: macB, ethSrc: mac1, op: 2, sha: mac1, spa: own0, tha: macB, tpa: netip.MustParseAddr("192.168.1.7"), out: 1},
		{ethDst: macC, ethSrc: mac0, op: 2, sha: mac0, spa: own0, tha: macC, tpa: zeroIP, out: 0},
		{ethDst: macBC, ethSrc: mac1, op: 1, sha: mac1, spa: own1, tpa: own1, out: 1},
		{ethDst: macBC, ethSrc: mac1, op: 1, sha: mac1, spa: own1b, tpa: own1b, out: 1},
		{ethDst: macBC, ethSrc: mac1, op: 1, sha: mac1, spa: own1b, tpa: netip.MustParseAddr("192.168.2.200"), out: 1},
	}
	got := r.drainOut()
	if len(got) != len(want) {
		t.Fatalf("sent %d frames, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: %+v\nwant %+v", i, got[i], want[i])
		}
	}
	c := r.tab.Counters()
	if c.RepliesSent != 3 || c.ProbeReplies != 1 || c.AnnouncesSent != 2 || c.RequestsSent != 1 || c.Learned != 2 {
		t.Fatalf("counters %+v", c)
	}
	if e := r.entry(1, host1); e.State != StateStale || e.MAC != macA {
		t.Fatalf("sender not learned: %+v", e)
	}
	if e := r.entry(0, zeroIP); e.State != StateNone {
		t.Fatalf("a probe taught %+v", e)
	}
	r.checkConserved()
}

// TestSourceAddress: requests go out from the interface's address on the target's subnet, else
// its first address, else the router's first address.
func TestSourceAddress(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Ifaces = append(c.Ifaces, Iface{MAC: macC}) })
	for _, tc := range []struct {
		iface  uint16
		target string
		src    netip.Addr
	}{
		{1, "192.168.2.77", own1b},
		{1, "192.168.1.77", own1},
		{1, "172.16.0.1", own1}, // off every subnet: the first address
		{0, "10.0.0.77", own0},
		{2, "10.9.9.9", own0}, // an interface without addresses
	} {
		if err := r.tab.AddNextHop(0, tc.iface, netip.MustParseAddr(tc.target)); err != nil {
			t.Fatal(err)
		}
		r.poll()
		s := r.drainOut()
		if len(s) != 1 || s[0].spa != tc.src || s[0].out != tc.iface {
			t.Fatalf("request for %s on %d: %+v, want from %v", tc.target, tc.iface, s, tc.src)
		}
		r.tab.RemoveNextHop(0)
	}
}

// TestInputDrops: each malformed or suspect ARP frame is counted under its reason, teaches nothing,
// is answered by nothing, and its buffer goes back.
func TestInputDrops(t *testing.T) {
	good := func() []byte { return arpBytes(t, 1, macBC, macA, hostN, frame.MAC{}, own0) }
	set := func(off int, v ...byte) []byte {
		b := good()
		copy(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		port  uint16
		count func(c *Counters) uint64
	}{
		{"truncated", good()[:14+27], 0, func(c *Counters) uint64 { return c.Malformed }},
		{"empty", good()[:14], 0, func(c *Counters) uint64 { return c.Malformed }},
		{"hw-type", set(14, 0, 6), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"proto-type", set(16, 0x86, 0xdd), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"hw-len", set(18, 8), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"proto-len", set(19, 16), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"op-rarp", set(20, 0, 3), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"op-zero", set(20, 0, 0), 0, func(c *Counters) uint64 { return c.Malformed }},
		{"sender-mac-broadcast", arpBytes(t, 1, macBC, macBC, hostN, frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-mac-multicast", arpBytes(t, 1, macBC, frame.MAC{1, 0, 0x5e, 0, 0, 1}, hostN, frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-mac-zero", arpBytes(t, 1, macBC, frame.MAC{}, hostN, frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-loopback", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("127.0.0.1"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-multicast", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("224.0.0.1"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-broadcast", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("255.255.255.255"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"sender-0/8", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("0.1.2.3"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"reply-from-zero", arpBytes(t, 2, mac0, macA, zeroIP, mac0, own0), 0, func(c *Counters) uint64 { return c.BadSender }},
		{"looped", arpBytes(t, 1, macBC, mac0, hostN, frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.Looped }},
		{"conflict", arpBytes(t, 1, macBC, macA, own0, frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.Conflicts }},
		{"conflict-other-iface", arpBytes(t, 2, macBC, macA, own1, mac0, hostN), 0, func(c *Counters) uint64 { return c.Conflicts }},
		{"no-iface", good(), 5, func(c *Counters) uint64 { return c.NoIface }},
		{"probe-other", arpBytes(t, 1, macBC, macA, zeroIP, frame.MAC{}, hostM), 0, func(c *Counters) uint64 { return c.Ignored }},
		{"request-other", arpBytes(t, 1, macBC, macA, hostN, frame.MAC{}, hostM), 0, func(c *Counters) uint64 { return c.Ignored }},
		{"unsolicited-reply", arpBytes(t, 2, mac0, macA, hostN, mac0, own0), 0, func(c *Counters) uint64 { return c.Ignored }},
		{"off-link", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("10.0.1.2"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.NotOnLink }},
		{"subnet-broadcast-sender", arpBytes(t, 1, macBC, macA, netip.MustParseAddr("10.0.0.255"), frame.MAC{}, own0), 0, func(c *Counters) uint64 { return c.NotOnLink }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.input(tc.port, tc.b)
			c := r.tab.Counters()
			if tc.count(&c) != 1 || c.ARPIn != 1 {
				t.Fatalf("counters %+v", c)
			}
			if e := r.tab.Entries(); len(e) != 0 {
				t.Fatalf("learned %+v", e)
			}
			if s := r.drainOut(); len(s) != 0 && tc.name != "off-link" && tc.name != "subnet-broadcast-sender" {
				t.Fatalf("sent %+v", s)
			}
			if r.rx.InUse() != 0 {
				t.Fatalf("%d input buffers not released", r.rx.InUse())
			}
			r.checkConserved()
		})
	}
}

// TestInputKeepsOthers: Input takes exactly the ARP frames (by the EtherType before Frame.L3, VLAN
// tagged ones included) and leaves every other frame in order.
func TestInputKeepsOthers(t *testing.T) {
	r := newRig(t)
	arp := arpBytes(t, 1, macBC, macA, hostN, frame.MAC{}, own0)
	ipv4 := make([]byte, 60)
	ipv4[12], ipv4[13] = 0x08, 0x00
	ipv6 := make([]byte, 60)
	ipv6[12], ipv6[13] = 0x86, 0xdd
	tagged := append(append(append([]byte(nil), arp[:12]...), 0x81, 0x00, 0x00, 0x0a), arp[12:]...)
	b := r.batch(0, ipv4, arp, ipv6, tagged, arp[:13], arp, ipv4)
	b.Frames[3].L3 = 18
	b.Frames[4].L3 = 0 // 13 bytes: shorter than the header it claims
	b.Frames[5].L3 = 0 // 0 means 14
	b.Frames[6].L3 = 5 // no Ethernet header: not ARP as far as Input is concerned
	wantLeft := []uint32{b.Frames[0].Buf, b.Frames[2].Buf, b.Frames[4].Buf, b.Frames[6].Buf}
	if n := r.tab.Input(b, r.out); n != 3 {
		t.Fatalf("took %d frames, want 3", n)
	}
	if len(b.Frames) != len(wantLeft) {
		t.Fatalf("%d frames left, want %d", len(b.Frames), len(wantLeft))
	}
	for i, buf := range wantLeft {
		if b.Frames[i].Buf != buf {
			t.Fatalf("frame %d left is buffer %d, want %d", i, b.Frames[i].Buf, buf)
		}
	}
	if r.rx.InUse() != len(wantLeft) {
		t.Fatalf("%d input buffers in use, want %d", r.rx.InUse(), len(wantLeft))
	}
	if c := r.tab.Counters(); c.ARPIn != 3 || c.Requests != 3 || c.RepliesSent != 3 {
		t.Fatalf("counters %+v", c)
	}
	b.Free()
	r.drainOut()
}

// TestOutFull: replies that find no room in out are counted, not lost, and the learning still
// happens.
func TestOutFull(t *testing.T) {
	r := newRig(t)
	r.out = frame.NewBatch(2)
	var frames [][]byte
	for i := range 5 {
		frames = append(frames, arpBytes(t, 1, macBC, macA, netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)}), frame.MAC{}, own0))
	}
	r.input(0, frames...)
	if c := r.tab.Counters(); c.RepliesSent != 2 || c.GenNoBuffer != 3 || c.Learned != 5 {
		t.Fatalf("counters %+v", c)
	}
	if len(r.drainOut()) != 2 {
		t.Fatal("out")
	}
	// A nil out: every reply is counted as not sent.
	r.tab.Input(r.batch(0, frames[0]), nil)
	if c := r.tab.Counters(); c.GenNoBuffer != 4 {
		t.Fatalf("counters %+v", c)
	}
	r.checkConserved()
}

// TestForeignBatch: Poll refuses to mix its frames into a batch of another arena.
func TestForeignBatch(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(1, 0, hostN)
	foreign := r.batch(0, make([]byte, 60))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
		foreign.Free()
	}()
	r.tab.Poll(foreign, r.ready, r.failed)
}
