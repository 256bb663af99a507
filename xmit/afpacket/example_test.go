package afpacket_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// Open validates the configuration before it touches the system.
func ExampleOpen() {
	_, err := afpacket.Open("eth0", &afpacket.Config{BlockSize: 1000}) // not a multiple of the page size
	fmt.Println(errors.Is(err, afpacket.ErrConfig))
	// Output: true
}

// A forwarding worker: frames received on one interface leave through another without a copy (the
// egress port's sendmmsg points into the ingress ring). Several workers would each open both
// interfaces with the same Fanout group.
func Example_forward() {
	cfg := &afpacket.Config{Fanout: &afpacket.Fanout{Group: 1, Mode: afpacket.FanoutHash}}
	in, err := afpacket.Open("veth0", cfg)
	if err != nil {
		log.Print(err) // needs root (CAP_NET_RAW) and the interface
		return
	}
	defer in.Close()
	out, err := afpacket.Open("veth1", nil)
	if err != nil {
		log.Print(err)
		return
	}
	defer out.Close()
	b := frame.NewBatch(64)
	for {
		n, err := in.Recv(b)
		if err != nil {
			return // closed
		}
		if n == 0 {
			if in.Wait(-1) != nil {
				return
			}
			continue
		}
		// ... stages read and rewrite the frames in place (b.Bytes(i)) ...
		out.Send(b) // takes every frame; each one it cannot queue is counted in out.Stats().TxDropped
	}
}

// The TX ring is opt-in: Config.TxRing with zero fields takes the defaults (1024 slots of 2048
// bytes). Its geometry is checked before the system is touched.
func ExampleTxRing() {
	_, err := afpacket.Open("eth0", &afpacket.Config{TxRing: &afpacket.TxRing{FrameSize: 100}}) // < 48+60
	fmt.Println(errors.Is(err, afpacket.ErrConfig))
	// Output: true
}
