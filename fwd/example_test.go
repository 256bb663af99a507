package fwd_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/vlan"
)

// A router with two untagged ports: a packet from 10.0.1.2 to 10.0.2.2 leaves on port 1 with the
// neighbour's MAC and TTL 63; the same packet with TTL 1 is answered with ICMP time exceeded from
// 10.0.1.1, back out port 0.
func Example() {
	pool, _ := frame.NewPool(nil)
	demux := vlan.NewDemux(2, vlan.Parser{})
	demux.Add(vlan.Interface{ID: 0, Port: 0})
	demux.Add(vlan.Interface{ID: 1, Port: 1})
	mac0, mac1 := frame.MAC{2, 0, 0, 0, 0, 10}, frame.MAC{2, 0, 0, 0, 0, 11}
	host2 := frame.MAC{2, 0, 0, 0, 2, 2}

	routes := fib.New()
	routes.Insert(netip.MustParsePrefix("10.0.2.0/24"), 1)
	var hops fib.NextHops
	hops.Set(1, fib.NextHop{Ifindex: 1, DstMAC: host2})
	r, err := fwd.New(demux, &fwd.Config{
		Ifaces: []fwd.Iface{
			{Name: "port0", MAC: mac0, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}},
			{Name: "port1", MAC: mac1, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.2.1/24")}},
		},
		Routes: routes, NextHops: &hops, Pool: pool,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := r.NewWorker(64)

	in := frame.NewBatch(64)
	for _, ttl := range []byte{64, 1} {
		pool.Alloc(in, 1)
		f := &in.Frames[len(in.Frames)-1]
		f.Resize(60)
		d := f.Data(pool.Mem())
		clear(d)
		frame.Ether(d).SetDst(mac0)
		frame.Ether(d).SetSrc(frame.MAC{2, 0, 0, 0, 1, 2})
		frame.Ether(d).SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:])
		ip[0], ip[8], ip[9] = 0x45, ttl, frame.ProtoUDP
		binary.BigEndian.PutUint16(ip[2:], 46)
		binary.BigEndian.PutUint32(ip[12:], 0x0a000102) // 10.0.1.2
		binary.BigEndian.PutUint32(ip[16:], 0x0a000202) // 10.0.2.2
		ip.SetChecksum()
	}

	out := w.Process(0, in)
	for p := range out.Egress {
		for i := range out.Egress[p].Frames {
			d := out.Egress[p].Bytes(i)
			fmt.Printf("port %d: forwarded to %v, TTL %d\n", p, frame.Ether(d).Dst(), frame.IPv4(d[14:]).TTL())
		}
		for i := range out.Generated[p].Frames {
			ip := frame.IPv4(out.Generated[p].Bytes(i)[14:])
			fmt.Printf("port %d: ICMP type %d from %v to %v\n", p, ip.Payload()[0], ip.SrcAddr(), ip.DstAddr())
		}
		out.Egress[p].Free() // an application sends these: ports[p].Send(out.Egress[p])
		out.Generated[p].Free()
	}
	w.Flush()
	c := r.Counters()
	fmt.Printf("forwarded %d, dropped for TTL %d, ICMP errors %d\n", c.Forwarded, c.Drops[fwd.DropTTL], c.ICMPErrors)
	// Output:
	// port 0: ICMP type 11 from 10.0.1.1 to 10.0.1.2
	// port 1: forwarded to 02:00:00:00:02:02, TTL 63
	// forwarded 1, dropped for TTL 1, ICMP errors 1
}
