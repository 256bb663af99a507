package linuxcp

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// FuzzException: any bytes as a local frame (with any Frame.L3 and interface) going up, and as a
// frame the kernel sends on a device (any length, up to a buffer and past it) going down, are
// copied, tagged or counted as a drop, never a panic, and no buffer is lost.
func FuzzException(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 100, 8, 6, 0, 1}, uint16(18), uint16(1), 20)
	f.Add(make([]byte, 60), uint16(14), uint16(0), 60)
	f.Add([]byte{1, 2, 3}, uint16(0), uint16(7), 3)
	f.Add(make([]byte, 300), uint16(300), uint16(1), 5000)
	f.Fuzz(func(t *testing.T, data []byte, l3, ifc uint16, kernelLen int) {
		pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8, BufSize: 128 + 512})
		if err != nil {
			t.Fatal(err)
		}
		demux := testDemux(t)
		x, err := New(&Config{Demux: demux, Devices: []Device{newMemDev(), newMemDev()}, Pool: pool, Queue: 4, Batch: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 512 {
			data = data[:512]
		}
		// Up.
		b := frame.NewBatch(1)
		pool.Alloc(b, 1)
		b.Frames[0].Resize(len(data))
		copy(b.Bytes(0), data)
		b.Frames[0].L3, b.Frames[0].Port = l3, ifc
		x.Worker(0).Up(b)
		drain := make([]frame.Frame, 4)
		for i := range x.up {
			n := x.up[i].DequeueBurst(drain)
			pool.Release(drain[:n])
		}
		// Down: a read of kernelLen bytes (data, then zeros) into a fresh buffer of the down pool.
		b.Frames = b.Frames[:0]
		x.Pool().Alloc(b, 1)
		r := b.Frames[0].Room(x.Pool().Mem())
		copy(r[:cap(r)], data)
		sizes := []int{max(kernelLen, 0)}
		vw := demux.NewWorker()
		for dev := range 2 {
			if k := x.prepare(vw, b, dev, 1, sizes); k == 1 {
				if d := b.Bytes(0); dev == 1 && (len(d) < 18 || d[12] != 0x81) {
					t.Fatalf("down frame for VLAN 100 not tagged: %x", d)
				}
				break
			}
		}
		x.Pool().Release(b.Frames)
		if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
			t.Fatalf("%d and %d buffers lost", n, m)
		}
	})
}
