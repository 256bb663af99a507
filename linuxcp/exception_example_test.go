package linuxcp_test

import (
	"fmt"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/linuxcp"
	"github.com/wirespeed/wirespeed/vlan"
)

// mirrorDev is a Device that plays the kernel by sending back every frame written to it.
type mirrorDev struct {
	frames chan []byte
	closed chan struct{}
}

func (d *mirrorDev) Read(bufs [][]byte, sizes []int) (int, error) {
	select {
	case f := <-d.frames:
		sizes[0] = copy(bufs[0], f)
		return 1, nil
	case <-d.closed:
		return 0, fmt.Errorf("closed")
	}
}

func (d *mirrorDev) Write(frames [][]byte) (int, error) {
	for _, f := range frames {
		fmt.Printf("kernel got %d bytes, EtherType %#04x\n", len(f), uint16(f[12])<<8|uint16(f[13]))
		d.frames <- append([]byte(nil), f...)
	}
	return len(frames), nil
}

func (d *mirrorDev) Close() error { close(d.closed); return nil }

// An exception path for VLAN 100 on port 0: a frame the stage delivered locally goes up without
// its tag, and what the kernel sends back comes down tagged, for the worker to send on port 0. A
// real router gives each interface a TAP (OpenTAP) instead of this device.
func ExampleException() {
	demux := vlan.NewDemux(1, vlan.Parser{})
	demux.Add(vlan.Interface{ID: 0, Port: 0, Outer: vlan.C(100)})
	dev := &mirrorDev{frames: make(chan []byte, 8), closed: make(chan struct{})}
	x, err := linuxcp.New(&linuxcp.Config{Demux: demux, Devices: []linuxcp.Device{dev}})
	if err != nil {
		panic(err)
	}
	x.Start()
	defer x.Close()
	w := x.Worker(0)

	// A local frame as fwd's Output.Local holds it: tagged, Frame.Port its interface, Frame.L3
	// after the tag.
	pool, _ := frame.NewPool(nil)
	local := frame.NewBatch(1)
	pool.Alloc(local, 1)
	local.Frames[0].Resize(64)
	d := local.Bytes(0)
	copy(d, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 100, 0x08, 0x06})
	local.Frames[0].Port, local.Frames[0].L3 = 0, 18
	w.Up(local)

	down := frame.NewBatch(8)
	for w.Take(0, down) == 0 {
		time.Sleep(time.Millisecond)
	}
	f := down.Bytes(0)
	fmt.Printf("port 0 sends %d bytes, tag %#04x VLAN %d\n", len(f), uint16(f[12])<<8|uint16(f[13]), uint16(f[14]&0x0f)<<8|uint16(f[15]))
	down.Free()
	// Output:
	// kernel got 60 bytes, EtherType 0x0806
	// port 0 sends 64 bytes, tag 0x8100 VLAN 100
}
