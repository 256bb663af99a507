package ops_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/ops"
)

// waitArmed waits until a request has armed tr.
func waitArmed(t *testing.T, tr *ops.Trace) {
	t.Helper()
	for !tr.Armed() {
		time.Sleep(100 * time.Microsecond)
	}
}

// corrupt sends one frame from host p to dst whose IPv4 checksum is wrong.
func (g *rig) sendBadChecksum(p int, dst netip.Addr) {
	b := g.hb
	g.sendBatchKeep(p, dst)
	d := b.Bytes(0)
	binary.BigEndian.PutUint16(d[24:], binary.BigEndian.Uint16(d[24:])^0xffff)
	g.hosts[p].Send(b)
}

// sendBatchKeep builds one frame in g.hb without sending it.
func (g *rig) sendBatchKeep(p int, dst netip.Addr) {
	g.pool.Alloc(g.hb, 1)
	b := g.hb
	b.Frames[0].Resize(60)
	d := b.Bytes(0)
	e := frame.Ether(d)
	e.SetDst(routerMAC[p])
	e.SetSrc(hostMAC[p])
	e.SetType(frame.TypeIPv4)
	ip := frame.IPv4(d[14:])
	clear(ip[:46])
	ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoUDP
	binary.BigEndian.PutUint16(ip[2:], 46)
	src, da := hostAddr[p].As4(), dst.As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], da[:])
	ip.SetChecksum()
}

// TestTraceVerdicts: a trace of the next 6 frames returns crafted frames with their verdicts
// (forwarded, ttl, blackhole, no-route, local, checksum), the forwarded one with its rewritten
// headers and its egress, and nothing of the frames after the sixth.
func TestTraceVerdicts(t *testing.T) {
	g := newRig(t)
	tr := ops.NewTrace(16, 0)
	hook := tr.Hook(3, g.w, nil, 1)
	done := make(chan ops.TraceResult)
	go func() { done <- tr.Capture(context.Background(), 6, ops.EgressLookup(g.source())) }()
	waitArmed(t, tr)
	hook.Poll()
	for _, s := range []struct {
		dst netip.Addr
		ttl byte
	}{{hostAddr[1], 64}, {hostAddr[1], 1}, {netip.MustParseAddr("192.0.2.7"), 64}, {netip.MustParseAddr("203.0.113.9"), 64},
		{netip.MustParseAddr("10.0.1.1"), 64}} {
		g.send(0, 1, s.dst, s.ttl)
		g.forward()
	}
	g.sendBadChecksum(0, hostAddr[1])
	g.forward()
	g.send(0, 1, hostAddr[1], 64) // the seventh: not traced
	g.forward()
	res := <-done
	hook.Poll()
	if tr.Armed() {
		t.Fatal("still armed after the request returned")
	}
	want := []string{"forwarded", "ttl", "blackhole", "no-route", "local", "checksum"}
	if res.Requested != 6 || res.Captured != 6 || res.TimedOut || len(res.Frames) != 6 {
		t.Fatalf("%+v", res)
	}
	for i, f := range res.Frames {
		if f.Verdict != want[i] || f.Dropped != (i != 0 && i != 4) || f.Worker != 3 || f.Len != 60 {
			t.Errorf("frame %d: %s dropped %v worker %d len %d, want %s", i, f.Verdict, f.Dropped, f.Worker, f.Len, want[i])
		}
	}
	f := res.Frames[0]
	if f.Src != hostAddr[0] || f.Dst != hostAddr[1] || f.TTL != 63 || f.Protocol != frame.ProtoUDP ||
		f.DstMAC != hostMAC[1].String() || f.SrcMAC != routerMAC[1].String() || f.EtherType != "0x0800" {
		t.Errorf("forwarded frame: %+v", f)
	}
	if e := f.Egress; e == nil || e.Interface != "port1" || e.NextHop == nil || *e.NextHop != nhHost1 || e.MAC != hostMAC[1].String() || e.Prefix != "10.0.2.0/24" {
		t.Errorf("forwarded frame's egress: %+v", f.Egress)
	}
	if res.Frames[1].TTL != 1 || res.Frames[1].Egress != nil || res.Frames[1].Ingress != "" {
		t.Errorf("ttl frame: %+v", res.Frames[1])
	}
	// The worker's tap is off again: more traffic is not captured anywhere, and a new request
	// starts from an empty ring.
	g.send(0, 10, hostAddr[1], 64)
	g.forward()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if r := tr.Capture(ctx, 2, nil); r.Captured != 0 || !r.TimedOut {
		t.Fatalf("a request with no traffic: %+v", r)
	}
}

// TestTraceAllocatesNothing: with a trace armed, the forwarding step copies the frames into the
// ring and allocates nothing.
func TestTraceAllocatesNothing(t *testing.T) {
	g := newRig(t)
	tr := ops.NewTrace(ops.MaxTrace, 0)
	hook := tr.Hook(0, g.w, nil, 1)
	for range 4 {
		forwardStep(g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ops.TraceResult)
	go func() { done <- tr.Capture(ctx, ops.MaxTrace, nil) }()
	waitArmed(t, tr)
	hook.Poll()
	runs := 0
	a := testing.AllocsPerRun(10, func() { forwardStep(g); hook.Poll(); runs++ })
	cancel()
	res := <-done
	if a != 0 {
		t.Fatalf("traced forwarding step: %v allocs", a)
	}
	if res.Captured != runs*64 {
		t.Fatalf("captured %d frames in %d steps of 64", res.Captured, runs)
	}
	for _, f := range res.Frames {
		if f.Verdict != fwd.Forwarded.String() {
			t.Fatalf("%+v", f)
		}
	}
}

// TestTraceBase: a worker's own tap keeps seeing its sample while the trace is on and after.
func TestTraceBase(t *testing.T) {
	g := newRig(t)
	tr := ops.NewTrace(8, 0)
	var base countTap
	hook := tr.Hook(0, g.w, &base, 2)
	g.send(0, 10, hostAddr[1], 64)
	g.forward()
	if base.n != 5 {
		t.Fatalf("base tap saw %d of 10 frames, want 5", base.n)
	}
	done := make(chan ops.TraceResult)
	go func() { done <- tr.Capture(context.Background(), 4, nil) }()
	waitArmed(t, tr)
	hook.Poll()
	g.send(0, 10, hostAddr[1], 64)
	g.forward()
	if r := <-done; r.Captured != 4 || base.n != 10 {
		t.Fatalf("trace %d frames, base %d", r.Captured, base.n)
	}
	hook.Poll()
	g.send(0, 10, hostAddr[1], 64)
	g.forward()
	if base.n != 15 {
		t.Fatalf("base tap saw %d, want 15", base.n)
	}
}

type countTap struct{ n int }

func (c *countTap) Capture(d []byte, v fwd.Reason) { c.n++ }

// TestTraceHTTP: /trace answers with the frames; bad parameters are refused with the reason.
func TestTraceHTTP(t *testing.T) {
	g := newRig(t)
	src := g.source()
	src.Trace = ops.NewTrace(8, 64)
	hook := src.Trace.Hook(0, g.w, nil, 1)
	h := ops.NewHandler(src)
	for _, bad := range []string{"/trace?n=0", "/trace?n=9", "/trace?n=x", "/trace?timeout=-1s", "/trace?timeout=1h"} {
		if c := get(t, h, "GET", bad, nil); c != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, c)
		}
	}
	go func() {
		waitArmed(t, src.Trace)
		hook.Poll()
		hook.Ingress(0)
		g.send(0, 3, hostAddr[1], 64)
		g.forward()
		hook.Ingress(-1)
	}()
	var res ops.TraceResult
	if c := get(t, h, "POST", "/trace?n=3&timeout=10s", &res); c != http.StatusOK || res.Captured != 3 || len(res.Frames[0].Data) != 2*60 {
		t.Fatalf("%d %+v", c, res)
	}
	for _, f := range res.Frames {
		if f.Ingress != "port0" || f.Port == nil || *f.Port != 0 {
			t.Errorf("ingress %q %v, want port0", f.Ingress, f.Port)
		}
	}
}
