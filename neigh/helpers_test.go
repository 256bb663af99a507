package neigh

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// The test network: interface 0 is 10.0.0.1/24, interface 1 has 192.168.1.1/24 and
// 192.168.2.1/24.
var (
	mac0  = frame.MAC{0x02, 0, 0, 0, 0, 0x10}
	mac1  = frame.MAC{0x02, 0, 0, 0, 0, 0x11}
	macA  = frame.MAC{0x02, 0xaa, 0, 0, 0, 1}
	macB  = frame.MAC{0x02, 0xbb, 0, 0, 0, 2}
	macC  = frame.MAC{0x02, 0xcc, 0, 0, 0, 3}
	macBC = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

	own0   = netip.MustParseAddr("10.0.0.1")
	own1   = netip.MustParseAddr("192.168.1.1")
	own1b  = netip.MustParseAddr("192.168.2.1")
	hostN  = netip.MustParseAddr("10.0.0.2") // the neighbour of most tests
	hostM  = netip.MustParseAddr("10.0.0.3")
	host1  = netip.MustParseAddr("192.168.2.9")
	zeroIP = netip.IPv4Unspecified()
)

// fakeClock is the tests' clock: it moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

// rig is a table with its clock, pools and the batches a caller passes.
type rig struct {
	t      testing.TB
	tab    *Table
	clk    *fakeClock
	start  time.Time
	pool   *frame.Pool // the table's
	rx     *frame.Pool // the input arena (a port's)
	out    *frame.Batch
	ready  *frame.Batch
	failed *frame.Batch
	rnd    uint64
}

func testConfig() Config {
	return Config{
		Ifaces: []Iface{
			{MAC: mac0, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}},
			{MAC: mac1, Addrs: []netip.Prefix{netip.MustParsePrefix("192.168.1.1/24"), netip.MustParsePrefix("192.168.2.1/24")}},
		},
	}
}

// newRig makes a table of testConfig edited by edit. Rand is fixed so that the reachable time is
// BaseReachable exactly (unless a test sets r.rnd).
func newRig(t testing.TB, edit ...func(*Config)) *rig {
	t.Helper()
	return newRigPools(t, 4096, 2048, edit...)
}

// newRigPools is newRig with a table pool of bufs buffers and an input pool of rxBufs buffers.
func newRigPools(t testing.TB, bufs, rxBufs int, edit ...func(*Config)) *rig {
	t.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: bufs})
	if err != nil {
		t.Fatal(err)
	}
	rx, err := frame.NewPool(&frame.PoolConfig{Buffers: rxBufs, BufSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &rig{t: t, clk: &fakeClock{start}, start: start, pool: pool, rx: rx,
		out: frame.NewBatch(256), ready: frame.NewBatch(256), failed: frame.NewBatch(256)}
	c := testConfig()
	c.Pool = pool
	c.NextHops = new(fib.NextHops)
	c.Now = r.clk.Now
	for _, e := range edit {
		e(&c)
	}
	base := c.BaseReachable
	if base == 0 {
		base = 30 * time.Second
	}
	r.rnd = uint64(base / 2)
	c.Rand = func() uint64 { return r.rnd }
	if r.tab, err = New(&c); err != nil {
		t.Fatal(err)
	}
	return r
}

// at sets the clock to d after the start.
func (r *rig) at(d time.Duration) { r.clk.t = r.start.Add(d) }

// arpBytes builds an Ethernet frame carrying an ARP packet with gopacket.
func arpBytes(t testing.TB, op uint16, ethDst, sha frame.MAC, spa netip.Addr, tha frame.MAC, tpa netip.Addr) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(sha[:]), DstMAC: net.HardwareAddr(ethDst[:]), EthernetType: layers.EthernetTypeARP}
	s4, t4 := spa.As4(), tpa.As4()
	a := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: op, SourceHwAddress: sha[:], SourceProtAddress: s4[:], DstHwAddress: tha[:], DstProtAddress: t4[:]}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, a); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// batch puts the given frames, received on interface port, in a batch of the rx pool (Frame.L3 14).
func (r *rig) batch(port uint16, frames ...[]byte) *frame.Batch {
	r.t.Helper()
	b := frame.NewBatch(max(len(frames), 1))
	if n, _ := r.rx.Alloc(b, len(frames)); n != len(frames) {
		r.t.Fatalf("rx pool: %d of %d buffers", n, len(frames))
	}
	for i, d := range frames {
		f := &b.Frames[i]
		if !f.Resize(len(d)) {
			r.t.Fatalf("rx pool: no room for %d bytes", len(d))
		}
		copy(f.Data(b.Mem), d)
		f.Port, f.L3 = port, frame.EtherLen
	}
	return b
}

// input hands the frames to Input on interface port and checks that they were all taken.
func (r *rig) input(port uint16, frames ...[]byte) {
	r.t.Helper()
	b := r.batch(port, frames...)
	if n := r.tab.Input(b, r.out); n != len(frames) || len(b.Frames) != 0 {
		r.t.Fatalf("Input took %d of %d frames, left %d", n, len(frames), len(b.Frames))
	}
}

// Shorthands for frames neighbours send.
func (r *rig) replyFrom(port uint16, mac frame.MAC, from netip.Addr, to netip.Addr, ethDst frame.MAC) {
	r.t.Helper()
	r.input(port, arpBytes(r.t, 2, ethDst, mac, from, r.tab.ifaces[port].mac, to))
}

func (r *rig) requestFrom(port uint16, mac frame.MAC, from netip.Addr, target netip.Addr) {
	r.t.Helper()
	r.input(port, arpBytes(r.t, 1, macBC, mac, from, frame.MAC{}, target))
}

// held is a frame fwd would hand to Hold: an IPv4 packet of n bytes in all, for next hop nh.
func (r *rig) held(nh uint32, port uint16, n int, fill byte) *frame.Batch {
	r.t.Helper()
	d := make([]byte, n)
	for i := range d {
		d[i] = fill
	}
	d[12], d[13] = 0x08, 0x00
	b := r.batch(port, d)
	b.Frames[0].Meta = nh
	return b
}

func (r *rig) hold(nh uint32, port uint16, n int, fill byte) {
	r.t.Helper()
	b := r.held(nh, port, n, fill)
	r.tab.Hold(b, r.out)
	if len(b.Frames) != 0 {
		r.t.Fatal("Hold left frames in its input")
	}
}

func (r *rig) poll() { r.tab.Poll(r.out, r.ready, r.failed) }

// entry returns the entry of addr on port, or one with StateNone.
func (r *rig) entry(port uint16, addr netip.Addr) Entry {
	for _, e := range r.tab.Entries() {
		if e.Iface == port && e.Addr == addr {
			return e
		}
	}
	return Entry{}
}

// sent is one generated frame as gopacket decodes it.
type sent struct {
	ethDst, ethSrc frame.MAC
	op             uint16
	sha, tha       frame.MAC
	spa, tpa       netip.Addr
	out            uint16
}

// drainOut decodes and frees every frame of r.out, checking each with gopacket: a 60-byte Ethernet
// frame of type ARP, Frame.L3 14, zero padding, the ARP source address the Ethernet source.
func (r *rig) drainOut() []sent {
	r.t.Helper()
	var s []sent
	for i := range r.out.Frames {
		f := &r.out.Frames[i]
		d := f.Data(r.out.Mem)
		if len(d) != 60 || f.L3 != 14 {
			r.t.Fatalf("generated frame of %d bytes, L3 %d", len(d), f.L3)
		}
		p := gopacket.NewPacket(d, layers.LayerTypeEthernet, gopacket.Default)
		eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		a, _ := p.Layer(layers.LayerTypeARP).(*layers.ARP)
		if eth == nil || a == nil || p.ErrorLayer() != nil {
			r.t.Fatalf("gopacket does not decode %x as Ethernet/ARP: %v", d, p.ErrorLayer())
		}
		if a.AddrType != layers.LinkTypeEthernet || a.Protocol != layers.EthernetTypeIPv4 || a.HwAddressSize != 6 || a.ProtAddressSize != 4 {
			r.t.Fatalf("ARP header %+v", a)
		}
		for _, b := range d[42:] {
			if b != 0 {
				r.t.Fatalf("padding not zero: %x", d)
			}
		}
		x := sent{ethDst: frame.MAC(eth.DstMAC), ethSrc: frame.MAC(eth.SrcMAC), op: a.Operation,
			sha: frame.MAC(a.SourceHwAddress), tha: frame.MAC(a.DstHwAddress),
			spa: netip.AddrFrom4([4]byte(a.SourceProtAddress)), tpa: netip.AddrFrom4([4]byte(a.DstProtAddress)), out: f.Out}
		if x.sha != x.ethSrc || int(x.out) >= len(r.tab.ifaces) || x.sha != r.tab.ifaces[x.out].mac {
			r.t.Fatalf("frame from %v (ARP %v) on interface %d", x.ethSrc, x.sha, x.out)
		}
		s = append(s, x)
	}
	r.out.Free()
	return s
}

// nextHop returns next hop idx as the workers see it.
func (r *rig) nextHop(idx uint32) fib.NextHop {
	h, ok := r.tab.NextHops().Get(idx)
	if !ok {
		r.t.Fatalf("next hop %d not set", idx)
	}
	return h
}

// checkConserved checks that every buffer of the table's pool is accounted for: in out, ready,
// failed, a hold queue or a backlog; and that every held frame is counted once.
func (r *rig) checkConserved() {
	r.t.Helper()
	held := 0
	for _, e := range r.tab.Entries() {
		held += e.Held
	}
	tab := r.tab
	tab.mu.Lock()
	backlog := tab.ready.n + tab.failed.n
	tab.mu.Unlock()
	if got, want := r.pool.InUse(), len(r.out.Frames)+len(r.ready.Frames)+len(r.failed.Frames)+held+backlog; got != want {
		r.t.Fatalf("table pool: %d buffers in use, %d accounted for", got, want)
	}
	c := tab.Counters()
	if c.HoldIn != c.Held+c.HoldNoNeighbour+c.HoldNoHost+c.HoldTooBig+c.HoldNoBuffer {
		r.t.Fatalf("Hold counters do not add up: %+v", c)
	}
	if c.Held != c.Ready+c.Failed+c.QueueOverflow+c.BacklogOverflow+uint64(held+backlog) {
		r.t.Fatalf("held frames do not add up: %+v, %d queued, %d in backlogs", c, held, backlog)
	}
	if c.ARPIn != c.Requests+c.Replies+c.Updates+c.Ignored+c.Malformed+c.BadSender+c.Looped+c.Conflicts+c.NoIface {
		r.t.Fatalf("Input counters do not add up: %+v", c)
	}
}
