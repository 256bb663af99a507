package main

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/internal/benchutil"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// BenchmarkEgressMatrix runs the example's forwarding step (fwd.Worker.Forward: VLAN demux, IPv4
// checks, route lookup, TTL/checksum/MAC rewrite, egress tag push, Send) over in-memory ports with
// ingress and egress each untagged or 802.1Q-tagged: the 2010 netdev lesson, where tagged egress cost
// Linux 3.5x. One op is one batch of 64 frames; ns/frame is the figure to compare. Refilling the
// ingress queue (every 8 batches) is not timed.
func BenchmarkEgressMatrix(b *testing.B) {
	for _, in := range []string{"untagged", "tagged"} {
		for _, out := range []string{"untagged", "tagged"} {
			b.Run("in="+in+"/out="+out, func(b *testing.B) { benchEgress(b, in == "tagged", out == "tagged") })
		}
	}
}

// The ingress queue holds benchBatches batches, refilled (untimed) when empty: 512 frames, whose
// headers stay in the CPU caches as they are right after a NIC or the kernel has copied them in. With
// many more batches (17 MB of buffers at 128) it would measure cold caches, a property of the
// benchmark rather than of the forwarder.
const (
	benchBatch   = 64
	benchBatches = 8
)

func benchEgress(b *testing.B, inTagged, outTagged bool) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4 * benchBatch * benchBatches})
	if err != nil {
		b.Fatal(err)
	}
	depth := benchBatch * benchBatches
	rIn, hIn := xmit.Pipe(pool, &xmit.PipeConfig{Depth: depth})
	rOut, hOut := xmit.Pipe(pool, &xmit.PipeConfig{Depth: depth})
	ports := []xmit.Port{rIn, rOut}

	d := vlan.NewDemux(2, vlan.Parser{})
	a, z := vlan.Interface{ID: 0, Port: 0}, vlan.Interface{ID: 1, Port: 1}
	if inTagged {
		a.Outer = vlan.C(10)
	}
	if outTagged {
		z.Outer = vlan.C(20)
	}
	d.Add(a)
	d.Add(z)
	var routes fwd.Static
	routes.Add(netip.MustParsePrefix("0.0.0.0/0"), 0)
	var nh fib.NextHops
	nh.Set(0, fib.NextHop{Ifindex: 1, DstMAC: gatewayMAC})
	r, err := fwd.New(d, &fwd.Config{Ifaces: []fwd.Iface{{Name: "a", MAC: routerMAC(0)}, {Name: "z", MAC: routerMAC(1)}}, Routes: &routes, NextHops: &nh, Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	w := r.NewWorker(benchBatch)

	tmpl := make([]byte, 64)
	e := frame.Ether(tmpl)
	e.SetDst(routerMAC(0))
	e.SetSrc(hostMAC(1, 2))
	l3 := 14
	if inTagged {
		binary.BigEndian.PutUint16(tmpl[12:], vlan.TPID8021Q)
		binary.BigEndian.PutUint16(tmpl[14:], 10)
		binary.BigEndian.PutUint16(tmpl[16:], frame.TypeIPv4)
		l3 = 18
	} else {
		e.SetType(frame.TypeIPv4)
	}
	udp(tmpl[l3:], 0x0a000102, 0xc6120001, 64)
	tmpl = tmpl[:l3+46]

	fb := frame.NewBatch(benchBatch)
	refill := func() {
		for {
			n, _ := hOut.Recv(fb)
			if n == 0 {
				break
			}
			fb.Free()
		}
		for i := 0; i < benchBatches; i++ {
			pool.Alloc(fb, benchBatch)
			for j := range fb.Frames {
				fb.Frames[j].Resize(len(tmpl))
				copy(fb.Bytes(j), tmpl)
			}
			if n, _ := hIn.Send(fb); n != benchBatch {
				b.Fatalf("refill queued %d", n)
			}
		}
	}
	refill()
	in := frame.NewBatch(benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	m := benchutil.Start(b)
	left := benchBatches
	for i := 0; i < b.N; i++ {
		if left == 0 {
			m.Pause() // before StopTimer, whose memory statistics stop the world
			b.StopTimer()
			refill()
			left = benchBatches
			b.StartTimer()
			m.Resume()
		}
		rIn.Recv(in)
		w.Forward(0, in, ports)
		left--
	}
	b.StopTimer()
	w.Flush()
	c := r.Counters()
	if c.Forwarded != uint64(b.N*benchBatch) {
		b.Fatalf("forwarded %d of %d frames: %+v", c.Forwarded, b.N*benchBatch, c)
	}
	m.Report(b, b.N*benchBatch)
}
