package neigh_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/neigh"
)

// A next hop is resolved: the table sends a request, the neighbour's reply comes in through
// Input (as fwd's Output.Local would hand it over), and the next hop carries its MAC.
func Example() {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	hops := new(fib.NextHops)
	now := time.Unix(0, 0)
	router := frame.MAC{2, 0, 0, 0, 0, 1}
	tab, err := neigh.New(&neigh.Config{
		Ifaces:   []neigh.Iface{{MAC: router, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}}},
		NextHops: hops,
		Pool:     pool,
		Now:      func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	tab.AddNextHop(5, 0, netip.MustParseAddr("10.0.0.2"))
	h, _ := hops.Get(5)
	fmt.Println("next hop 5 unresolved:", h.Flags&fib.NextHopUnresolved != 0)

	out, ready, failed := frame.NewBatch(8), frame.NewBatch(8), frame.NewBatch(8)
	tab.Poll(out, ready, failed)
	req := out.Bytes(0)
	fmt.Printf("sent %d bytes on interface %d: who has %v? tell %v\n", len(req), out.Frames[0].Out,
		netip.AddrFrom4([4]byte(req[38:42])), netip.AddrFrom4([4]byte(req[28:32])))

	// The neighbour's reply, made from the request as the host would.
	host := frame.MAC{2, 0, 0, 0, 0, 2}
	local := frame.NewBatch(8)
	pool.Alloc(local, 1)
	f := &local.Frames[0]
	f.Resize(len(req))
	d := f.Data(local.Mem)
	copy(d, req)
	copy(d[0:6], router[:])
	copy(d[6:12], host[:])
	d[21] = 2 // reply
	copy(d[22:28], host[:])
	copy(d[28:32], req[38:42])
	copy(d[32:38], router[:])
	copy(d[38:42], req[28:32])
	f.Port, f.L3 = 0, 14
	out.Free()
	fmt.Println("ARP frames taken:", tab.Input(local, out))

	h, _ = hops.Get(5)
	fmt.Println("next hop 5:", frame.MAC(h.DstMAC), "unresolved:", h.Flags&fib.NextHopUnresolved != 0)
	for _, e := range tab.Entries() {
		fmt.Println(e.Addr, e.MAC, e.State)
	}
	// Output:
	// next hop 5 unresolved: true
	// sent 60 bytes on interface 0: who has 10.0.0.2? tell 10.0.0.1
	// ARP frames taken: 1
	// next hop 5: 02:00:00:00:00:02 unresolved: false
	// 10.0.0.2 02:00:00:00:00:02 REACHABLE
}
