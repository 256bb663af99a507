package fib_test

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/wirespeed/wirespeed/fib"
)

func Example() {
	var t fib.Table // the zero value is an empty table
	t.Insert(netip.MustParsePrefix("0.0.0.0/0"), 0)
	t.Insert(netip.MustParsePrefix("10.0.0.0/8"), 1)
	t.Insert(netip.MustParsePrefix("10.1.0.0/16"), 2)

	nh, ok := t.Lookup(netip.MustParseAddr("10.1.2.3"))
	fmt.Println(nh, ok)

	// The fast path: IPv4 addresses as uint32, many at once.
	addrs := []uint32{0x0A010203, 0x0A020304, 0xC0000201}
	out := make([]uint32, len(addrs))
	t.LookupBatch(addrs, out)
	fmt.Println(out)

	// Many changes, published at once.
	t.Apply([]fib.Change{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Delete: true},
		{Prefix: netip.MustParsePrefix("10.1.2.0/24"), NextHop: 3},
	})
	t.LookupBatch(addrs, out)
	fmt.Println(out[0], out[2] == fib.NoRoute)
	// Output:
	// 2 true
	// [2 1 0]
	// 3 true
}

func ExampleParseIPRoute() {
	const show = `default via 192.0.2.1 dev eth0 proto static
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.5
198.51.100.0/24 via 192.0.2.1 dev eth0
blackhole 203.0.113.0/24 proto static
default via fe80::1 dev eth0 proto ra metric 1024 pref medium
`
	var hops fib.HopSet
	var t fib.Table
	st, err := t.LoadIPRoute(strings.NewReader(show), hops.Assign)
	if err != nil {
		fmt.Println(err)
		return
	}
	// One NextHop per distinct (type, gateway, device); the blackhole's drops frames.
	var nexthops fib.NextHops
	for i, h := range hops.Hops {
		nexthops.Set(uint32(i), fib.NextHop{Ifindex: 1, Flags: h.Flags()})
	}
	fmt.Printf("%d routes, %d IPv6 skipped\n", t.Len(), st.IPv6)
	for _, a := range []string{"192.0.2.77", "203.0.113.9"} {
		nh, _ := t.Lookup(netip.MustParseAddr(a))
		e, _ := nexthops.Get(nh)
		fmt.Printf("%s -> %+v, drop %v\n", a, hops.Hops[nh], e.Flags&fib.NextHopDrop != 0)
	}
	// Output:
	// 4 routes, 1 IPv6 skipped
	// 192.0.2.77 -> {Type:unicast Gateway:invalid IP Dev:eth0}, drop false
	// 203.0.113.9 -> {Type:blackhole Gateway:invalid IP Dev:}, drop true
}

func ExampleNextHops() {
	var hops fib.NextHops
	hops.Set(1, fib.NextHop{Ifindex: 2, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}})

	// A forwarding worker takes one view per batch and reads entries from it without locks or refcounts.
	v := hops.View()
	if e, ok := v.Get(1); ok {
		fmt.Printf("if %d dst %x\n", e.Ifindex, e.DstMAC)
	}
	// Output:
	// if 2 dst 020000000001
}
