package vlan_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// A trunk port 0 with VLAN 10 and a QinQ service 100/200: classify a tagged frame to its interface,
// then tag it for another interface on the way out.
func Example() {
	d := vlan.NewDemux(1, vlan.Parser{})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	d.Add(vlan.Interface{ID: 2, Port: 0, Outer: vlan.S(100), Inner: vlan.C(200)})
	w := d.NewWorker()

	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(8)
	pool.Alloc(b, 1)
	b.Frames[0].Resize(64)
	pkt := b.Bytes(0)
	copy(pkt[12:], []byte{0x81, 0x00, 0x20, 0x0a, 0x08, 0x00}) // 802.1Q PCP 1 VID 10, then IPv4

	var h vlan.Header
	vlan.Parse(pkt, &h)
	fmt.Println("parsed:", h.N, "tag,", h.Outer.TCI, "inner type", fmt.Sprintf("%#04x", h.EtherType))

	w.Classify(0, b)
	fmt.Println("interface", b.Frames[0].Port, "untagged length", b.Frames[0].Len)

	b.Frames[0].Out = 2
	port, _ := w.Egress(b, 0)
	vlan.Parse(b.Bytes(0), &h)
	fmt.Println("out port", port, "tags", h.Outer.TCI.VID(), h.Inner.TCI.VID(), "length", b.Frames[0].Len)
	b.Free()
	// Output:
	// parsed: 1 tag, vid=10 pcp=1 dei=0 inner type 0x0800
	// interface 1 untagged length 60
	// out port 0 tags 100 200 length 68
}

// A router on a stick: a frame from VLAN 10 is classified in place and leaves on the QinQ service
// 100/200 towards a neighbour, its whole L2 header replaced by a Rewrite built once for that
// interface and neighbour.
func ExampleWorker_Apply() {
	d := vlan.NewDemux(1, vlan.Parser{})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	d.Add(vlan.Interface{ID: 2, Port: 0, Outer: vlan.S(100), Inner: vlan.C(200)})
	w := d.NewWorker()
	neighbour, router := frame.MAC{2, 0, 0, 0, 0, 9}, frame.MAC{2, 0, 0, 0, 0, 1}
	rw, _ := d.Rewrite(2, neighbour, router, frame.TypeIPv4)

	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(8)
	pool.Alloc(b, 1)
	pkt := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 7, 0x81, 0x00, 0x00, 0x0a, 0x08, 0x00, 0x45}
	b.Frames[0].Resize(60)
	copy(b.Bytes(0), pkt)
	w.ClassifyInPlace(0, b)
	fmt.Println("from interface", b.Frames[0].Port, "L3 at", b.Frames[0].L3)
	if err := w.Apply(b, 0, &rw); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("to interface %d on port %d: % x\n", b.Frames[0].Out, rw.Port(), b.Bytes(0)[:rw.Len()+1])
	b.Free()
	// Output:
	// from interface 1 L3 at 18
	// to interface 2 on port 0: 02 00 00 00 00 09 02 00 00 00 00 01 88 a8 00 64 81 00 00 c8 08 00 45
}
