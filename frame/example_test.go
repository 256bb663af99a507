package frame_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// A frame's life: allocated from a pool, written, given headroom for a tag, released.
func Example() {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	b := frame.NewBatch(4)
	n, _ := pool.Alloc(b, 1)
	f := &b.Frames[0]
	f.Resize(34) // Ethernet + IPv4 header
	pkt := b.Bytes(0)
	frame.Ether(pkt).SetType(frame.TypeIPv4)
	ip := frame.IPv4(pkt[frame.EtherLen:])
	ip[0], ip[3], ip[8] = 0x45, 20, 64 // version/IHL, total length 20, TTL 64
	ip.SetChecksum()
	ip.DecTTL()
	fmt.Println(n, "frame, TTL", ip.TTL(), "checksum ok:", ip.ChecksumOK())
	fmt.Println("headroom for a tag:", f.PushHead(4), "len", f.Len)
	b.Free()
	fmt.Println("buffers in use:", pool.InUse())
	// Output:
	// 1 frame, TTL 63 checksum ok: true
	// headroom for a tag: true len 38
	// buffers in use: 0
}
