package lacp_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
)

// Two link aggregates negotiate LACP over two in-memory links. Each end is a lag.Aggregate whose
// Recv hands the LACPDUs to its Controller (lag.Config.SlowProtocols), and the Controller sets
// the aggregate's members usable (Attach). A real program calls ctl.Run(ctx) in a goroutine; here
// the clock is stepped by hand, one 100 ms tick at a time.
func Example() {
	pool, _ := frame.NewPool(nil)
	var left, right []*xmit.MemPort
	for i := 0; i < 2; i++ {
		l, r := xmit.Pipe(pool, nil)
		left, right = append(left, l), append(right, r)
	}
	build := func(ports []*xmit.MemPort, sys byte, events func(lacp.Event)) (*lag.Aggregate, *lacp.Controller) {
		cfg := &lacp.Config{System: frame.MAC{2, 0, 0, 0, sys, 0}, Fast: true, Events: events}
		var members []xmit.Port
		for i, p := range ports {
			// One goroutine does everything here, so the members send the PDUs themselves;
			// with workers, give each member a port of its own (lacp.OpenSender).
			cfg.Ports = append(cfg.Ports, lacp.PortConfig{Tx: p, MAC: frame.MAC{2, 0, 0, 0, sys, byte(i + 1)}})
			members = append(members, p)
		}
		ctl, _ := lacp.New(cfg)
		agg, _ := lag.New(members, &lag.Config{Mode: lag.XOR, Policy: lag.Layer34, SlowProtocols: ctl})
		ctl.Attach(agg)
		return agg, ctl
	}
	print := func(e lacp.Event) {
		switch e.Kind {
		case lacp.EventMember, lacp.EventAggregate, lacp.EventLink:
			fmt.Printf("%.1f s: %v\n", float64(e.Tick)/lacp.TicksPerSecond, e)
		}
	}
	aggL, ctlL := build(left, 0xa, print)
	aggR, ctlR := build(right, 0xb, nil)
	defer aggL.Close()
	defer aggR.Close()

	rx := frame.NewBatch(64)
	step := func(ticks int) {
		for i := 0; i < ticks; i++ {
			ctlL.Tick()
			ctlR.Tick()
			for _, a := range []*lag.Aggregate{aggL, aggR} {
				for n, _ := a.Recv(rx); n > 0; n, _ = a.Recv(rx) {
					rx.Free() // data would be forwarded here; the LACPDUs never show up
				}
			}
		}
	}
	step(40)
	fmt.Println("usable:", aggL.Usable())
	left[1].SetLinkUp(false) // member 1's cable is pulled
	right[1].SetLinkUp(false)
	step(1)
	fmt.Println("usable:", aggL.Usable())
	// Output:
	// 2.5 s: tick 25: member 1 member up=true
	// 2.5 s: tick 25: aggregate up=true
	// 2.6 s: tick 26: member 0 member up=true
	// usable: [0 1]
	// 4.1 s: tick 41: member 1 link up=false
	// 4.1 s: tick 41: member 1 member up=false
	// usable: [0]
}
