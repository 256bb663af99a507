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

// openForward opens the two ports of a forwarding worker. Several workers would each open both
// interfaces with the same Fanout group.
func openForward(inName, outName string) (in, out *afpacket.Port, err error) {
	cfg := &afpacket.Config{Fanout: &afpacket.Fanout{Group: 1, Mode: afpacket.FanoutHash}}
	if in, err = afpacket.Open(inName, cfg); err != nil {
		return nil, nil, err // needs root (CAP_NET_RAW) and the interface: the error says which is missing
	}
	if out, err = afpacket.Open(outName, nil); err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, out, nil
}

// forward is a forwarding worker: frames received on in leave through out without a copy (out's
// sendmmsg points into in's ring). It returns when in is closed.
func forward(in, out *afpacket.Port) error {
	b := frame.NewBatch(64)
	for {
		n, err := in.Recv(b)
		if err != nil {
			return err // closed
		}
		if n == 0 {
			if err := in.Wait(-1); err != nil {
				return err
			}
			continue
		}
		// ... stages read and rewrite the frames in place (b.Bytes(i)) ...
		out.Send(b) // takes every frame; each one it cannot queue is counted in out.Stats().TxDropped
	}
}

// A forwarding worker from veth0 to veth1 until veth0's port is closed. It needs root and the two
// interfaces, so it has no Output and is compiled, not run: TestExampleForward runs openForward and
// forward between veths in network namespaces of its own and checks that every frame arrives.
func Example_forward() {
	in, out, err := openForward("veth0", "veth1")
	if err != nil {
		log.Print(err)
		return
	}
	defer out.Close()
	// Another goroutine ends the worker with in.Close().
	if err := forward(in, out); err != nil {
		log.Print(err)
	}
	fmt.Println("forwarded", out.Stats().TxPackets)
}

// The TX ring is opt-in: Config.TxRing with zero fields takes the defaults (1024 slots of 2048
// bytes). Its geometry is checked before the system is touched.
func ExampleTxRing() {
	_, err := afpacket.Open("eth0", &afpacket.Config{TxRing: &afpacket.TxRing{FrameSize: 100}}) // < 48+60
	fmt.Println(errors.Is(err, afpacket.ErrConfig))
	// Output: true
}
