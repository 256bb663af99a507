package app_test

import (
	"flag"
	"fmt"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
)

// Static neighbour MACs from a -nexthop flag, with a default for every VLAN.
func ExampleNeighbours() {
	nb := app.Neighbours{}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(nb, "nexthop", "static neighbour MACs")
	fs.Parse([]string{"-nexthop", "uplink=02:67:77:00:00:09", "-nexthop", "trunk=02:00:00:00:00:01,vlan105=02:00:00:00:00:05"})
	def := frame.MAC{0x02, 0xff, 0, 0, 0, 0}
	for _, name := range []string{"uplink", "vlan101", "vlan105"} {
		m := nb.Get(name, "trunk", def)
		fmt.Printf("%s %x\n", name, m[:])
	}
	b, err := app.ParseBackend("afxdp")
	fmt.Println(b, err)
	// Output:
	// uplink 026777000009
	// vlan101 020000000001
	// vlan105 020000000005
	// afxdp <nil>
}
