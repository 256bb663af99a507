package app

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
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
func twoPortRouter(t *testing.T) *fwd.Router {
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
