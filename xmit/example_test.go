package xmit_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// Two ends of an in-memory link: what one sends, the other receives, as descriptors into one pool.
func Example() {
	pool, _ := frame.NewPool(nil)
	a, z := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"left", "right"}, Depth: 4})

	b := frame.NewBatch(8)
	pool.Alloc(b, 6)
	for i := range b.Frames {
		b.Frames[i].Resize(60)
	}
	sent, _ := a.Send(b) // Send owns the batch: 4 fit the queue, 2 are dropped and counted
	fmt.Println("sent", sent, "left in batch", b.Len(), "dropped", a.Stats().TxDropped)

	n, _ := z.Recv(b)
	fmt.Println(z.Name(), "received", n, "frames of", len(b.Bytes(0)), "bytes")
	b.Free()
	fmt.Println("buffers in use", pool.InUse())
	// Output:
	// sent 4 left in batch 0 dropped 2
	// right received 4 frames of 60 bytes
	// buffers in use 0
}
