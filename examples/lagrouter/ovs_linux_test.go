package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestOVSAFPacket runs lagrouter -lag 802.3ad (AF_PACKET, two workers: one controller for both
// workers' aggregates) against Open vSwitch: a userspace bridge (datapath_type=netdev) whose bond
// (lacp=active, lacp-time=fast, balance-tcp) is the router's two members over veth pairs, with a
// third bridge port where the test plays the VLAN hosts. It checks:
//
//   - negotiation: ovs-appctl lacp/show has both members current and attached, both ends
//     collecting and distributing; bond/show has both enabled; the router has both distributing;
//   - traffic both ways crosses, each frame arriving exactly once, on both members (OVS's interface
//     counters of each bond member);
//   - member 1's link goes down while frames stream downstream: the router stops distributing on
//     it, OVS disables it, the frames lost are counted (sent minus received, and the router's drops
//     on member 1); the time from the carrier change to the last frame lost is logged; the link
//     comes back and member 1 rejoins on both sides, carrying traffic again;
//   - member 1's partner goes silent (an XDP program on the router's end drops the slow-protocols
//     frames OVS sends): the router times OVS out (3 s at the fast rate) and stops distributing on
//     it, OVS follows; the times are logged; the PDUs pass again and it rejoins;
//   - the event log has the members' link and distribution changes and the aggregate coming up,
//     the final report the per-member line with the LACPDU counters, and the counters add up.
//
// No time is asserted: the waits fail only after generous deadlines.
func TestOVSAFPacket(t *testing.T) { testOVS(t, app.AFPacket, 2) }

// TestOVSAFXDP is the same on AF_XDP with one worker, without the silent-partner part (the XDP
// program slot of the router's member is the back-end's).
func TestOVSAFXDP(t *testing.T) { testOVS(t, app.AFXDP, 1) }

// syncBuffer is a bytes.Buffer for the event log, written by the controller's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// seqs records, by the sequence number in their IP identification, how many times each frame
// of a stream arrived.
type seqs struct {
	mu    sync.Mutex
	seen  map[uint16]int
	total int
	errs  []error
}

func (q *seqs) reset() {
	q.mu.Lock()
	q.seen, q.total = map[uint16]int{}, 0
	q.mu.Unlock()
}

func (q *seqs) add(seq uint16) {
	q.seen[seq]++
	q.total++
}

func (q *seqs) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// hostsAndUplink play the VLAN hosts on the OVS bridge's host port and the gateway on the router's
// uplink: the hosts answer the router's ARP and echo requests (trunkgen.AnswerHost) and check
// every downstream frame (trunkgen.CheckDownstream), the gateway every upstream one
// (trunkgen.CheckUpstream); both record the frames' sequence numbers.
type hostsAndUplink struct {
	host, up        xmit.Port
	pool            *frame.Pool
	trunkMAC, upMAC frame.MAC
	stop, done      chan struct{}
	down, upward    seqs
}

func newHostsAndUplink(host, up xmit.Port, pool *frame.Pool, trunkMAC, upMAC frame.MAC) *hostsAndUplink {
	h := &hostsAndUplink{host: host, up: up, pool: pool, trunkMAC: trunkMAC, upMAC: upMAC, stop: make(chan struct{}), done: make(chan struct{})}
	h.down.reset()
	h.upward.reset()
	go h.run()
	return h
}

func (h *hostsAndUplink) run() {
	defer close(h.done)
	rb, answers := frame.NewBatch(64), frame.NewBatch(64)
	for {
		select {
		case <-h.stop:
			return
		default:
		}
		idle := true
		if n, _ := h.host.Recv(rb); n > 0 {
			idle = false
			h.down.mu.Lock()
			for i := range rb.Frames {
				f, d := &rb.Frames[i], rb.Bytes(i)
				if trunkgen.AnswerHost(h.pool, f, d, answers) != trunkgen.HostOther || len(d) < frame.EtherLen || frame.Ether(d).Dst()[0]&1 != 0 {
					continue // answered, or the bridge's own multicast
				}
				if err := trunkgen.CheckDownstream(f, d, h.trunkMAC); err != nil {
					h.down.errs = append(h.down.errs, err)
					continue
				}
				l3 := 18
				if f.Flags&frame.FlagVLAN != 0 {
					l3 = 14
				}
				h.down.add(binary.BigEndian.Uint16(d[l3+4:]))
			}
			h.down.mu.Unlock()
			rb.Free()
			if len(answers.Frames) > 0 {
				h.host.Send(answers)
			}
		}
		if n, _ := h.up.Recv(rb); n > 0 {
			idle = false
			h.upward.mu.Lock()
			for i := range rb.Frames {
				d := rb.Bytes(i)
				if len(d) < 34 || frame.Ether(d).Type() != frame.TypeIPv4 || frame.IPv4(d[14:]).Protocol() != frame.ProtoUDP {
					continue
				}
				if err := trunkgen.CheckUpstream(d, h.upMAC); err != nil {
					h.upward.errs = append(h.upward.errs, err)
					continue
				}
				h.upward.add(binary.BigEndian.Uint16(d[14+4:]))
			}
			h.upward.mu.Unlock()
			rb.Free()
		}
		if idle {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

func (h *hostsAndUplink) close() {
	close(h.stop)
	<-h.done
}

// sendStream sends n frames, sequence number k in the IP identification, `per` frames every
// millisecond on p: downstream (upstream false) from the gateway to the hosts
// 10.0.(1+k%20).(2+k%200) addressed to the router's uplink MAC, or upstream from the hosts of VLAN
// 1+k%20 to 198.18.0.(k%256) addressed to its trunk MAC. It returns when each one was sent.
func sendStream(t *testing.T, p xmit.Port, pool *frame.Pool, routerMAC frame.MAC, upstream bool, n, per int) []time.Time {
	sent := make([]time.Time, n)
	b := frame.NewBatch(per)
	next := time.Now()
	for k := 0; k < n; {
		if _, err := pool.Alloc(b, min(per, n-k)); err != nil || len(b.Frames) == 0 {
			t.Errorf("pool: %v", err)
			return sent[:k]
		}
		for i := range b.Frames {
			s := k + i
			vl := 1 + s%20
			l3 := 14
			if upstream {
				b.Frames[i].Resize(64)
				l3 = 18
			} else {
				b.Frames[i].Resize(60)
			}
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(routerMAC)
			if upstream {
				e.SetSrc(trunkgen.HostMAC(vl, 2))
				binary.BigEndian.PutUint16(d[12:], 0x8100)
				binary.BigEndian.PutUint16(d[14:], trunkgen.VID(vl))
				binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
				trunkgen.UDP(d[l3:], 0x0a000002|uint32(vl)<<8, 0xc6120000|uint32(s%256), 64)
			} else {
				e.SetSrc(trunkgen.GatewayMAC)
				e.SetType(frame.TypeIPv4)
				trunkgen.UDP(d[l3:], 0xc6120001, 0x0a000000|uint32(vl)<<8|uint32(2+s%200), 33)
			}
			binary.BigEndian.PutUint16(d[l3+4:], uint16(s))
			frame.IPv4(d[l3 : l3+20]).SetChecksum()
		}
		m := len(b.Frames)
		now := time.Now()
		if _, err := p.Send(b); err != nil {
			t.Error(err)
			return sent[:k]
		}
		for i := 0; i < m; i++ {
			sent[k+i] = now
		}
		k += m
		next = next.Add(time.Millisecond)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
	return sent
}

// dropSlow attaches to ifindex an XDP program (generic mode) that drops the slow-protocols
// frames the interface receives and passes everything else; closing the link detaches it.
func dropSlow(ifindex int) (link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ws_drop_slow", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R0, 2),                    // XDP_PASS
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),  // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),  // data_end
		asm.Mov.Reg(asm.R4, asm.R2),               //
		asm.Add.Imm(asm.R4, 14),                   //
		asm.JGT.Reg(asm.R4, asm.R3, "out"),        // shorter than an Ethernet header: pass
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half), // the EtherType as a little-endian load
		asm.JNE.Imm(asm.R5, 0x0988, "out"),        // not 0x8809: pass
		asm.Mov.Imm(asm.R0, 1),                    // XDP_DROP
		asm.Return().WithSymbol("out"),            //
	}})
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	return link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPGenericMode})
}

func testOVS(t *testing.T, backend app.Backend, workers int) {
	nettest.RequirePriv(t)
	nettest.RequireOVS(t)
	sw, rtr, wan := nettest.NewNS(t, "ovs"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "wan")
	var ovsIf, members [numMembers]string
	for i := range ovsIf {
		ovsIf[i], members[i] = nettest.Veth(t, sw, rtr, "o", "m")
	}
	hostIf, hostPeer := nettest.Veth(t, sw, sw, "h", "hp")
	uplink, upPeer := nettest.Veth(t, rtr, wan, "up", "upp")
	for _, ns := range []*nettest.NS{sw, rtr, wan} { // no IPv6 chatter
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	o := nettest.StartOVS(t, sw)
	o.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "other_config:hwaddr=02:00:00:00:0f:01")
	o.Vsctl("add-bond", "br0", "bond0", ovsIf[0], ovsIf[1], "lacp=active", "other_config:lacp-time=fast", "bond_mode=balance-tcp",
		"other_config:bond-rebalance-interval=1000")
	o.Vsctl("add-port", "br0", hostIf)
	// ovsStat reads the kernel's counter of OVS's end of a member (OVS's own are updated every 5 s).
	ovsStat := func(member int, which string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(sw.Exec(t, "cat", "/sys/class/net/"+ovsIf[member]+"/statistics/"+which)))
		return n
	}

	var trunkMAC, upMAC frame.MAC
	var m1Index int
	if err := rtr.Do(func() (err error) {
		if trunkMAC, err = app.IfaceMAC(members[0]); err == nil {
			upMAC, err = app.IfaceMAC(uplink)
		}
		if ifi, e := net.InterfaceByName(members[1]); e == nil {
			m1Index = ifi.Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var hostPort, wanPort *afpacket.Port
	if err := sw.Do(func() (err error) { hostPort, err = afpacket.Open(hostPeer, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer hostPort.Close()
	if err := wan.Do(func() (err error) { wanPort, err = afpacket.Open(upPeer, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer wanPort.Close()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8192})
	var hosts *hostsAndUplink // started with the router (the MACs are known then)

	// The router.
	cfg := defaultConfig()
	cfg.Backend, cfg.Members, cfg.Uplink, cfg.Workers, cfg.Interval = backend, members[:], uplink, workers, time.Hour
	cfg.LAG, cfg.LACPRate = "802.3ad", "fast"
	if err := cfg.Neighbours.Set("uplink=" + trunkgen.GatewayMAC.String()); err != nil { // nobody answers ARP upstream here
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.logw = logs
	var ctl *lacp.Controller
	cfg.onLACP = func(c *lacp.Controller) { ctl = c }
	var ports *app.Ports
	var aggs []*lag.Aggregate
	cfg.onOpen = func(p *app.Ports, a []*lag.Aggregate) { ports, aggs = p, a }
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
	hosts = newHostsAndUplink(hostPort, wanPort, pool, trunkMAC, upMAC)
	defer hosts.close()
	usable := func(m int) bool { return ctl.Usable(m) }
	both := func() bool {
		show, bond := nettest.LACPShow(o.Appctl("lacp/show", "bond0")), o.Appctl("bond/show", "bond0")
		return show[ovsIf[0]].Up() && show[ovsIf[1]].Up() && nettest.BondEnabled(bond, ovsIf[0]) && nettest.BondEnabled(bond, ovsIf[1]) && usable(0) && usable(1)
	}
	waitFor := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > limit {
				t.Fatalf("%s: not after %v\nours %+v\nlacp/show:\n%s\nbond/show:\n%s\nevent log:\n%s%s", what, limit, ctl.Status(),
					o.Appctl("lacp/show", "bond0"), o.Appctl("bond/show", "bond0"), logs.String(), o.LogTail())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	// waitSoft is waitFor without the failure: the checks after it say what is missing.
	waitSoft := func(limit time.Duration, cond func() bool) {
		for start := time.Now(); !cond() && time.Since(start) < limit; {
			time.Sleep(10 * time.Millisecond)
		}
	}
	d := waitFor("negotiation", 30*time.Second, both)
	t.Logf("both members current, in sync, collecting and distributing on both sides %v after the router started", d.Round(10*time.Millisecond))

	// stream sends n frames (per a millisecond) one way and checks that none arrived twice and
	// that the router passed on every frame it received, but for those it counted as dropped
	// (on a member whose link is down, on a member not collecting): OVS's userspace datapath, on
	// a loaded machine, loses frames of its own (reconfiguring after a link change, or behind),
	// which are logged, not failed. during, if not nil, runs 150 ms in. It returns how many were
	// lost end to end and when the last of them was sent, from the start of during.
	routerIO := func(upstream bool) (in, out, dropped uint64) {
		m0, m1, up := ports.Stats(0), ports.Stats(1), ports.Stats(2)
		if upstream {
			var inactive uint64
			for _, a := range aggs {
				inactive += a.RxInactive()
			}
			return m0.RxPackets + m1.RxPackets, up.TxPackets, inactive
		}
		return up.RxPackets, m0.TxPackets + m1.TxPackets, m0.TxDropped + m1.TxDropped
	}
	stream := func(upstream bool, n, per int, during func()) (lost int, last time.Duration) {
		in0, out0, drop0 := routerIO(upstream)
		q, p, mac := &hosts.down, xmit.Port(wanPort), upMAC
		if upstream {
			q, p, mac = &hosts.upward, hostPort, trunkMAC
		}
		q.reset()
		var sent []time.Time
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); sent = sendStream(t, p, pool, mac, upstream, n, per) }()
		time.Sleep(150 * time.Millisecond)
		start := time.Now()
		if during != nil {
			during()
		}
		wg.Wait()
		waitSoft(2*time.Second, func() bool { return q.count() >= len(sent) })
		time.Sleep(100 * time.Millisecond) // a duplicate would come now
		q.mu.Lock()
		defer q.mu.Unlock()
		for k := range sent {
			switch c := q.seen[uint16(k)]; {
			case c == 0:
				lost++
				if at := sent[k].Sub(start); at > last {
					last = at
				}
			case c > 1:
				t.Errorf("upstream %v: frame %d arrived %d times", upstream, k, c)
			}
		}
		// The router's part: what it received of the stream it sent on or counted, give or take
		// the few control frames (LACPDUs on AF_XDP, ARP) that share the counters.
		in1, out1, drop1 := routerIO(upstream)
		in, out, dropped := int(in1-in0), int(out1-out0), int(drop1-drop0)
		if d := in - out - dropped; d > 50 || d < -50 || in < len(sent) && !upstream {
			t.Errorf("upstream %v: the router received %d frames, sent %d and counted %d dropped: %d unaccounted", upstream, in, out, dropped, d)
		}
		if lost > 0 {
			t.Logf("upstream %v: %d of %d frames lost end to end; the router received %d, sent %d, dropped %d (counted)", upstream, lost, len(sent), in, out, dropped)
		}
		return lost, last
	}

	// Traffic both ways, each frame exactly once, on both members. The first downstream frames
	// wait in the router for their hosts' ARP replies; OVS puts every upstream flow on one member
	// until it rebalances (every second here), so the upstream stream lasts 2.5 s.
	rx0, rx1, tx0, tx1 := ovsStat(0, "rx_packets"), ovsStat(1, "rx_packets"), ovsStat(0, "tx_packets"), ovsStat(1, "tx_packets")
	if _, err := trunkgen.SendTraffic(wanPort, pool, upMAC, false, 200); err != nil { // the router resolves the 200 hosts
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	stream(false, 2000, 10, nil)
	stream(true, 12500, 5, nil)
	drx0, drx1, dtx0, dtx1 := ovsStat(0, "rx_packets")-rx0, ovsStat(1, "rx_packets")-rx1, ovsStat(0, "tx_packets")-tx0, ovsStat(1, "tx_packets")-tx1
	t.Logf("OVS bond members: received from the router %d, %d; sent to it %d, %d", drx0, drx1, dtx0, dtx1)
	if drx0 < 100 || drx1 < 100 || dtx0 < 100 || dtx1 < 100 {
		t.Errorf("a member carried (almost) nothing: OVS received %d, %d and sent %d, %d", drx0, drx1, dtx0, dtx1)
	}

	// Member 1's link goes down in the middle of a downstream stream.
	// The router's own share of the loss is what it sent on member 1 after the carrier went and
	// before its poller (-miimon 10ms) took the member out: member 1's drops, at member 1's share
	// of the stream (frames it sent in the 100 ms before) that is a time.
	var m1tx uint64
	m1drop := ports.Stats(1).TxDropped
	lost, last := stream(false, 4000, 10, func() {
		before := ports.Stats(1).TxPackets
		time.Sleep(100 * time.Millisecond)
		m1tx = ports.Stats(1).TxPackets - before // member 1's frames in 100 ms
		rtr.Exec(t, "ip", "link", "set", members[1], "down")
	})
	m1drop = ports.Stats(1).TxDropped - m1drop
	t.Logf("member 1 link down during a 10-frames-a-millisecond downstream stream: the router dropped %d frames on member 1 (it sent %d in the 100 ms before: about %.1f ms of its traffic); %d frames lost end to end, the last of them sent %v after `ip link set down` began",
		m1drop, m1tx, float64(m1drop)*100/float64(max(m1tx, 1)), lost, (last - 100*time.Millisecond).Round(100*time.Microsecond))
	waitFor("the router leaving member 1", 10*time.Second, func() bool { return !usable(1) })
	waitFor("OVS leaving member 1", 10*time.Second, func() bool { return !nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[1]) })
	if !usable(0) || !nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[0]) {
		t.Fatal("member 0 lost too")
	}

	rtr.Exec(t, "ip", "link", "set", members[1], "up")
	d = waitFor("member 1 rejoining after its link came back", 30*time.Second, both)
	t.Logf("member 1 back on both sides %v after its link came up", d.Round(10*time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	rx0, rx1 = ovsStat(0, "rx_packets"), ovsStat(1, "rx_packets")
	stream(false, 1000, 10, nil)
	if drx0, drx1 = ovsStat(0, "rx_packets")-rx0, ovsStat(1, "rx_packets")-rx1; drx0 == 0 || drx1 == 0 {
		t.Errorf("after the rejoin OVS received %d, %d from the router: both members should carry", drx0, drx1)
	}

	if backend == app.AFPacket {
		// Member 1's partner goes silent: OVS's LACPDUs to it are dropped before any socket sees
		// them. The router times OVS out and stops distributing on member 1; OVS follows.
		// An upstream stream runs meanwhile: what OVS sends on member 1 after the router left it
		// and before OVS does is lost (the router drops what a member not collecting receives).
		var l link.Link
		var ours, theirs time.Duration
		lost, _ := stream(true, 14000, 2, func() {
			if err := rtr.Do(func() (err error) { l, err = dropSlow(m1Index); return err }); err != nil {
				t.Fatalf("XDP: %v", err)
			}
			ours = waitFor("the router leaving silent member 1", 15*time.Second, func() bool { return !usable(1) })
			theirs = waitFor("OVS leaving member 1", 15*time.Second, func() bool { return !nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[1]) }) + ours
		})
		t.Logf("member 1's partner silent (fast rate): the router stopped distributing on it %v later, OVS %v later; %d frames of a 2-a-millisecond upstream stream lost meanwhile",
			ours.Round(10*time.Millisecond), theirs.Round(10*time.Millisecond), lost)
		l.Close()
		d = waitFor("member 1 rejoining after its partner spoke again", 30*time.Second, both)
		t.Logf("member 1 back on both sides %v after OVS's LACPDUs passed again", d.Round(10*time.Millisecond))
	}

	tally, out := rt.Stop()
	if rt.Err() != nil {
		t.FailNow()
	}
	t.Logf("router output:\n%s", out)
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	for _, q := range []*seqs{&hosts.down, &hosts.upward} {
		q.mu.Lock()
		for _, err := range q.errs {
			t.Error(err)
		}
		q.mu.Unlock()
	}
	l := logs.String()
	for _, want := range []string{"lag up", "lag member distributing", "lag member link down", "lag member stopped distributing", "lag member link up", "lacp state"} {
		if !strings.Contains(l, want) {
			t.Errorf("event log lacks %q:\n%s", want, l)
		}
	}
	for _, want := range []string{members[0] + " rx ", members[1] + " rx ", "LACPDUs in ", "lag0 LACP: aggregate up", "accounting: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if m := regexp.MustCompile(regexp.QuoteMeta(members[1]) + ` rx [0-9,]+, tx [0-9,]+ \(dropped ([0-9,]+)\)`).FindStringSubmatch(out); m != nil {
		t.Logf("the router counted %s frames dropped on member 1 (sent while its link was down)", m[1])
	}
}
