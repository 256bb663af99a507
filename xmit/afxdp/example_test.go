//go:build linux

package afxdp_test

import (
	"fmt"
	"log"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// openForward opens queue 0 of two interfaces on one UMEM, so that frames received on one are sent
// on the other as descriptors, without a copy.
func openForward(u *afxdp.UMEM, inName, outName string) (in, out *afxdp.Port, err error) {
	if in, err = afxdp.Open(inName, 0, &afxdp.Config{UMEM: u}); err != nil {
		return nil, nil, err // needs root (or CAP_BPF, CAP_NET_ADMIN, CAP_NET_RAW): the error says what is missing
	}
	if out, err = afxdp.Open(outName, 0, &afxdp.Config{UMEM: u}); err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, out, nil
}

// forward receives on one AF_XDP port and sends every frame out of another until in is closed.
func forward(in, out *afxdp.Port) error {
	b := frame.NewBatch(64)
	for {
		n, err := in.Recv(b)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := in.Wait(-1); err != nil {
				return err
			}
			continue
		}
		out.Send(b) // takes every frame: sent or counted in TxDropped
	}
}

// A forwarding worker from xdp-in to xdp-out, both on one UMEM, until xdp-in's port is closed. It
// needs root and the two interfaces, so it has no Output and is compiled, not run:
// TestExampleForward runs openForward and forward between veths in network namespaces of its own
// and checks that every frame arrives.
func Example() {
	u, err := afxdp.NewUMEM(&afxdp.UMEMConfig{Frames: 8192})
	if err != nil {
		log.Print(err)
		return
	}
	defer u.Close() // after the ports
	in, out, err := openForward(u, "xdp-in", "xdp-out")
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
