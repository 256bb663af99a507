package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

var errBroken = errors.New("broken port")

// brokenPort fails every Recv and every Send (releasing what it is given, as Send must).
type brokenPort struct{ sends int }

func (p *brokenPort) Name() string                     { return "broken" }
func (p *brokenPort) Recv(b *frame.Batch) (int, error) { return 0, errBroken }
func (p *brokenPort) Send(b *frame.Batch) (int, error) { p.sends++; b.Free(); return 0, errBroken }
func (p *brokenPort) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *brokenPort) Close() error                     { return nil }

// twoPortRouter routes everything from port 0 to port 1 (for the worker loop tests).
func twoPortRouter(t testing.TB) *fwd.Router {
	t.Helper()
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 0})
	d.Add(vlan.Interface{ID: 1, Port: 1})
	var routes fwd.Static
	routes.Add(netip.MustParsePrefix("0.0.0.0/0"), 0)
	var nh fib.NextHops
	nh.Set(0, fib.NextHop{Ifindex: 1, DstMAC: frame.MAC{2, 0, 0, 0, 0, 2}})
	r, err := fwd.New(d, &fwd.Config{Ifaces: []fwd.Iface{{Name: "a", MAC: frame.MAC{2, 0, 0, 0, 1, 0}}, {Name: "b", MAC: frame.MAC{2, 0, 0, 0, 1, 1}}}, Routes: &routes, NextHops: &nh})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// queueUDP puts n UDP frames for the router on the far end of port 0.
func queueUDP(t *testing.T, pool *frame.Pool, far xmit.Port, n int) {
	t.Helper()
	b := frame.NewBatch(n)
	pool.Alloc(b, n)
	for i := range b.Frames {
		b.Frames[i].Resize(60)
		d := b.Bytes(i)
		frame.Ether(d).SetDst(frame.MAC{2, 0, 0, 0, 1, 0})
		frame.Ether(d).SetSrc(frame.MAC{2, 0, 0, 0, 0, 1})
		frame.Ether(d).SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:34])
		ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoUDP
		ip[2], ip[3] = 0, 46
		copy(ip[12:], []byte{10, 0, 1, 2, 198, 18, 0, 1})
		ip.SetChecksum()
	}
	if q, err := far.Send(b); q != n || err != nil {
		t.Fatalf("queued %d of %d: %v", q, n, err)
	}
}

// TestRunCountsPortErrors: the worker loop counts the errors its Recv and Send calls return and
// keeps the first, and the report shows them.
func TestRunCountsPortErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	a, far := xmit.Pipe(pool, nil)
	queueUDP(t, pool, far, 3)
	broken := &brokenPort{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one pass, then the drain
	e := Run(ctx, twoPortRouter(t).NewWorker(8), []xmit.Port{a, broken}, 8, 4)
	if broken.sends != 1 || e.Send != 1 || e.Recv < 1 || !errors.Is(e.First, errBroken) {
		t.Fatalf("%d sends: %+v", broken.sends, e)
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", pool.InUse())
	}
	tl := Tally{Errors: e}
	var out strings.Builder
	tl.Report(&out, nil)
	if !strings.Contains(out.String(), "port errors: recv ") || !strings.Contains(out.String(), "send 1 (first: broken port)") {
		t.Fatalf("report:\n%s", out.String())
	}
	var sum PortErrors
	sum.Add(PortErrors{})
	sum.Add(e)
	sum.Add(e)
	if sum.Send != 2 || sum.Recv != 2*e.Recv || sum.First != e.First {
		t.Fatalf("sum %+v of twice %+v", sum, e)
	}
}

// TestRunResolvingAnnouncesEveryInterface: at start the worker loop sends a gratuitous ARP for
// every interface of the demux, VLAN sub-interfaces included, each tagged as its interface is, not
// one per physical port.
func TestRunResolvingAnnouncesEveryInterface(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})                     // untagged on port 1
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(101)}) // VLAN 101 on port 0
	d.Add(vlan.Interface{ID: 2, Port: 0, Outer: vlan.C(102)})
	mac := func(i byte) frame.MAC { return frame.MAC{2, 0, 0, 0, 1, i} }
	addr := func(i byte) netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, i, 1}), 24) }
	var ifs []fwd.Iface
	var nifs []neigh.Iface
	for i := range byte(3) {
		ifs = append(ifs, fwd.Iface{Name: fmt.Sprint("if", i), MAC: mac(i), Addrs: []netip.Prefix{addr(i)}})
		nifs = append(nifs, neigh.Iface{MAC: mac(i), Addrs: []netip.Prefix{addr(i)}})
	}
	nh := new(fib.NextHops)
	var routes fwd.Static
	r, err := fwd.New(d, &fwd.Config{Ifaces: ifs, Routes: &routes, NextHops: nh, Pool: pool, HoldUnresolved: true})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := neigh.New(&neigh.Config{Ifaces: nifs, NextHops: nh, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	p0, far0 := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"p0", "far0"}})
	p1, far1 := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"p1", "far1"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	RunResolving(ctx, r.NewWorker(8), NewResolver(tab, d, 8), []xmit.Port{p0, p1}, 8, 4)
	got := map[string]bool{}
	b := frame.NewBatch(8)
	for _, far := range []*xmit.MemPort{far0, far1} {
		for n, _ := far.Recv(b); n > 0; n, _ = far.Recv(b) {
			for i := range b.Frames {
				e := b.Bytes(i)
				vid, l3 := 0, 14
				if frame.Ether(e).Type() == vlan.TPID8021Q {
					vid, l3 = int(e[14]&0x0f)<<8|int(e[15]), 18
				}
				if len(e) >= l3+28 && e[l3-2] == 0x08 && e[l3-1] == 0x06 {
					got[fmt.Sprintf("%s vid %d %d.%d.%d.%d", far.Name(), vid, e[l3+14], e[l3+15], e[l3+16], e[l3+17])] = true
				}
			}
			b.Free()
		}
	}
	for _, want := range []string{"far1 vid 0 10.0.0.1", "far0 vid 101 10.0.1.1", "far0 vid 102 10.0.2.1"} {
		if !got[want] {
			t.Errorf("no announcement %q; got %v", want, got)
		}
	}
}

// waitLog is a port that logs when its Recv last got frames and when the worker loop blocked in
// its Wait.
type waitLog struct {
	*xmit.MemPort
	last  time.Time   // the last Recv that got frames
	waits []time.Time // each Wait call, with the last frame's time before it in gaps
	gaps  []time.Duration
}

func (p *waitLog) Recv(b *frame.Batch) (int, error) {
	n, err := p.MemPort.Recv(b)
	if n > 0 {
		p.last = time.Now()
	}
	return n, err
}

func (p *waitLog) Wait(timeoutNs int64) error {
	now := time.Now()
	p.waits = append(p.waits, now)
	p.gaps = append(p.gaps, now.Sub(p.last))
	return p.MemPort.Wait(timeoutNs)
}

// TestRunIdleSpin: with Options.IdleSpin the worker loop blocks only once its ports have been
// empty that long (never sooner after a frame), and it does block then; without it, it blocks
// after a few empty polls. Every frame is forwarded either way.
func TestRunIdleSpin(t *testing.T) {
	for _, spin := range []time.Duration{0, 40 * time.Millisecond} {
		pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
		a, far := xmit.Pipe(pool, nil)
		b, sink := xmit.Pipe(pool, nil)
		in := &waitLog{MemPort: a}
		ctx, cancel := context.WithCancel(context.Background())
		w := twoPortRouter(t).NewWorker(8) // here: t.Fatal belongs to the test's goroutine
		done := make(chan PortErrors)
		go func() { done <- RunWith(ctx, w, nil, nil, []xmit.Port{in, b}, 8, 4, Options{IdleSpin: spin}) }()
		for range 3 { // bursts 15 ms apart: shorter gaps than the IdleSpin
			queueUDP(t, pool, far, 4)
			time.Sleep(15 * time.Millisecond)
		}
		time.Sleep(spin + 30*time.Millisecond)
		cancel()
		if e := <-done; e.Recv+e.Send != 0 {
			t.Fatalf("port errors %+v", e)
		}
		got := frame.NewBatch(64)
		if n, _ := sink.Recv(got); n != 12 {
			t.Fatalf("idle spin %v: %d of 12 frames forwarded", spin, n)
		}
		got.Free()
		if len(in.waits) == 0 {
			t.Fatalf("idle spin %v: the loop never blocked", spin)
		}
		for i, g := range in.gaps {
			if g < spin {
				t.Errorf("idle spin %v: blocked %v after the last frame (wait %d of %d)", spin, g, i+1, len(in.gaps))
			}
		}
		t.Logf("idle spin %v: %d waits, the first %v after the last frame", spin, len(in.waits), in.gaps[0])
	}
}

// TestIdleChores checks which empty rounds do the loop's chores: the first after traffic, one in
// idleChores while polling, every one once the loop blocks.
func TestIdleChores(t *testing.T) {
	for _, spin := range []bool{true, false} {
		i := Idle{Options: Options{Spin: spin}}
		for burst := range 2 {
			i.Reset()
			var chores, blocks []int
			for r := range 3*idleChores + 1 {
				if i.Chores() {
					chores = append(chores, r)
				}
				if i.Empty() {
					blocks = append(blocks, r)
				}
			}
			var want, wantBlocks []int
			for r := range 3*idleChores + 1 {
				switch {
				case spin && r%idleChores == 0, !spin && (r == 0 || r > 8):
					want = append(want, r)
				}
				if !spin && r >= 8 {
					wantBlocks = append(wantBlocks, r)
				}
			}
			if !slices.Equal(chores, want) || !slices.Equal(blocks, wantBlocks) {
				t.Errorf("spin %v, burst %d: chores in rounds %v, want %v; blocks in %v, want %v", spin, burst, chores, want, blocks, wantBlocks)
			}
		}
	}
}
