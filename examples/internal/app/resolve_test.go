package app

import (
	"net/netip"
	"testing"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestResolverResumesMoreThanABatch: when more frames become ready at once than the worker's batch
// holds (ten hosts with three frames held each, resolved together), Poll hands them back to the
// worker a batch at a time, and every one is forwarded.
func TestResolverResumesMoreThanABatch(t *testing.T) {
	const batch = 8
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 0})
	d.Add(vlan.Interface{ID: 1, Port: 1})
	mac := func(i byte) frame.MAC { return frame.MAC{2, 0, 0, 0, 1, i} }
	addr := func(i byte) netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, i, 1}), 24) }
	ifs := []fwd.Iface{{Name: "a", MAC: mac(0), Addrs: []netip.Prefix{addr(0)}}, {Name: "b", MAC: mac(1), Addrs: []netip.Prefix{addr(1)}}}
	nifs := []neigh.Iface{{MAC: mac(0), Addrs: []netip.Prefix{addr(0)}}, {MAC: mac(1), Addrs: []netip.Prefix{addr(1)}}}
	nh := new(fib.NextHops)
	routes := fib.New()
	routes.Insert(netip.MustParsePrefix("10.0.1.0/24"), 1)
	r, err := fwd.New(d, &fwd.Config{Ifaces: ifs, Routes: routes, NextHops: nh, Pool: pool, HoldUnresolved: true})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := neigh.New(&neigh.Config{Ifaces: nifs, NextHops: nh, Pool: pool, Hosts: neigh.FIBHosts(routes), HostNextHops: neigh.IndexRange{First: 100, Count: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.AddSubnet(1, 1); err != nil {
		t.Fatal(err)
	}
	p0, far0 := xmit.Pipe(pool, nil)
	p1, far1 := xmit.Pipe(pool, nil)
	ports := []xmit.Port{p0, p1}
	res := NewResolver(tab, d, batch)
	w := r.NewWorker(batch)
	b := frame.NewBatch(batch)
	for k := 0; k < 30; k++ {
		pool.Alloc(b, 1)
		i := len(b.Frames) - 1
		b.Frames[i].Resize(60)
		f := b.Bytes(i)
		frame.Ether(f).SetDst(mac(0))
		frame.Ether(f).SetSrc(frame.MAC{2, 0, 0, 0, 0, 1})
		frame.Ether(f).SetType(frame.TypeIPv4)
		ip := frame.IPv4(f[14:34])
		ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoUDP
		ip[2], ip[3] = 0, 46
		copy(ip[12:], []byte{10, 0, 0, 2, 10, 0, 1, byte(10 + k%10)})
		ip.SetChecksum()
		if len(b.Frames) == batch || k == 29 {
			res.Step(w, 0, b, ports)
		}
	}
	if c := tab.Counters(); c.Held != 30 {
		t.Fatalf("%d frames held, want 30", c.Held)
	}
	for h := range 10 {
		if err := tab.AddStatic(1, netip.AddrFrom4([4]byte{10, 0, 1, byte(10 + h)}), frame.MAC{2, 0, 0, 0, 2, byte(h)}); err != nil {
			t.Fatal(err)
		}
	}
	res.Poll(w, ports)
	udp := 0
	for n, _ := far1.Recv(b); n > 0; n, _ = far1.Recv(b) {
		for i := range b.Frames {
			if frame.Ether(b.Bytes(i)).Type() == frame.TypeIPv4 {
				udp++
			}
		}
		b.Free()
	}
	for n, _ := far0.Recv(b); n > 0; n, _ = far0.Recv(b) {
		b.Free()
	}
	if c := tab.Counters(); udp != 30 || c.Ready != 30 {
		t.Fatalf("%d of 30 held frames forwarded (%d ready)", udp, c.Ready)
	}
}
