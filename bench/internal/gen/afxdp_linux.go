package gen

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// afXDP sends through wirespeed's AF_XDP port (xmit/afxdp): every call hands the port a batch of
// the prebuilt frames, which Send copies into free UMEM chunks, puts on the TX ring and kicks the
// kernel with one sendto. On a device without native AF_XDP transmit (veth) the kernel turns every
// frame into an skb (copy mode), so this engine measures how fast that transmit path can go: the
// ceiling of any AF_XDP forwarder's output on such a device.
type afXDP struct {
	port  *afxdp.Port
	arena []byte // the frames back to back
	offs  []uint32
	b     frame.Batch
	batch int
	next  int
}

func newAFXDP(ifname string, c *Config, frames [][]byte) (engine, error) {
	p, err := afxdp.Open(ifname, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("gen: afxdp: %w", err)
	}
	e := &afXDP{port: p, batch: c.Batch, b: frame.Batch{Frames: make([]frame.Frame, 0, c.Batch)}}
	for _, f := range frames {
		e.offs = append(e.offs, uint32(len(e.arena)))
		e.arena = append(e.arena, f...)
	}
	e.b.Mem = e.arena
	return e, nil
}

func (e *afXDP) send(n int) (int, error) {
	n = min(n, e.batch)
	nf := len(e.offs)
	fr := e.b.Frames[:n]
	for i := range fr {
		j := (e.next + i) % nf
		end := uint32(len(e.arena))
		if j+1 < nf {
			end = e.offs[j+1]
		}
		fr[i] = frame.Frame{Off: e.offs[j], Len: uint16(end - e.offs[j])}
	}
	e.b.Frames, e.b.Mem, e.b.Owner = fr, e.arena, nil
	sent, err := e.port.Send(&e.b) // copies into the UMEM; frames the TX ring has no room for are dropped and counted
	e.next = (e.next + n) % nf
	return sent, err
}

func (e *afXDP) close() { e.port.Close() }
