package dsa_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/frame"
)

// A Marvell switch (EDSA tags) delivers frames from its ports on one conduit: the conduit maps
// each frame to its user port, and tags a reply toward the port it came from.
func Example() {
	tagger, _ := dsa.ByName("edsa")
	conduit, _ := dsa.NewConduit(dsa.Config{Tagger: tagger, Ports: 8})
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8})

	b := frame.NewBatch(4)
	pool.Alloc(b, 2)
	mac := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1}
	for i, port := range []byte{3, 9} { // port 9 does not exist (Ports: 8)
		f := &b.Frames[i]
		f.Resize(60)
		p := f.Data(b.Mem)
		copy(p, mac)
		// 0xDADA 0x0000, then FORWARD from device 0, port<<3, VID 0; EtherType ARP.
		copy(p[12:], []byte{0xda, 0xda, 0, 0, 0xc0, port << 3, 0, 0, 0x08, 0x06})
	}
	n := conduit.Recv(b, nil)
	f := &b.Frames[0]
	fmt.Println("kept", n, "frame from port", f.Port, "length", f.Len, "EtherType", fmt.Sprintf("%#04x", frame.Ether(b.Bytes(0)).Type()))
	fmt.Println("dropped, bad port:", conduit.RxDrops(dsa.ReasonPort))

	f.Out = f.Port
	conduit.Send(b, nil)
	fmt.Printf("tagged reply: % x\n", b.Bytes(0)[12:20])
	fmt.Println("port 3:", conduit.Stats(3).RxFrames, "in,", conduit.Stats(3).TxFrames, "out")
	b.Free()
	fmt.Println("buffers in use:", pool.InUse())
	// Output:
	// kept 1 frame from port 3 length 52 EtherType 0x0806
	// dropped, bad port: 1
	// tagged reply: da da 00 00 40 18 00 00
	// port 3: 1 in, 1 out
	// buffers in use: 0
}

// Decode fills the caller's Info; DecodeBatch decodes a whole batch with the format chosen once.
func ExampleTagger_DecodeBatch() {
	tagger, _ := dsa.ByName("mtk")
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4})
	b := frame.NewBatch(4)
	pool.Alloc(b, 3)
	for i := range b.Frames {
		f := &b.Frames[i]
		f.Resize(64)
		p := f.Data(b.Mem)
		// MACs, then the MediaTek tag (source port in byte 13's low 3 bits), then IPv4.
		copy(p[12:], []byte{0, byte(i + 1), 0, 0, 0x08, 0x00})
	}
	ins := make([]dsa.Info, b.Len())
	rs := make([]dsa.Reason, b.Len())
	n := tagger.DecodeBatch(b, ins, rs)
	for i := range ins {
		fmt.Println("frame", i, "port", ins[i].Port, "length", b.Frames[i].Len, rs[i])
	}
	fmt.Println("decoded", n)
	b.Free()
	// Output:
	// frame 0 port 1 length 60 none
	// frame 1 port 2 length 60 none
	// frame 2 port 3 length 60 none
	// decoded 3
}
