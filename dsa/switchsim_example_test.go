package dsa_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/frame"
)

// A simulated switch tags a frame from its port 2 for the CPU; the conduit demultiplexes it,
// tags the reply toward the same port, and the switch reads where the CPU sent it.
func ExampleSwitchSide() {
	tagger, _ := dsa.ByName("brcm")
	sw, _ := dsa.NewSwitchSide(tagger)
	conduit, _ := dsa.NewConduit(dsa.Config{Tagger: tagger})
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4})

	b := frame.NewBatch(4)
	pool.Alloc(b, 1)
	b.Frames[0].Resize(60)
	copy(b.Bytes(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06})
	sw.Encode(b, 0, dsa.Info{Port: 2})
	fmt.Printf("from the switch: % x\n", b.Bytes(0)[12:16])

	conduit.Recv(b, nil)
	fmt.Println("user port", b.Frames[0].Port)
	b.Frames[0].Out = b.Frames[0].Port
	conduit.Send(b, nil)
	fmt.Printf("to the switch:   % x\n", b.Bytes(0)[12:16])

	d, err := sw.Decode(b, 0)
	fmt.Println("switch sends it out of port", d.Ports.First(), err)
	b.Free()
	// Output:
	// from the switch: 00 00 00 02
	// user port 2
	// to the switch:   20 00 00 04
	// switch sends it out of port 2 <nil>
}
