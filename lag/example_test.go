package lag_test

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/xmit"
)

// An aggregate of two in-memory links hashing layer3+4 like bonding: one link fails, its flows
// move to the survivor, nothing is lost silently.
func Example() {
	pool, _ := frame.NewPool(nil)
	a0, far0 := xmit.Pipe(pool, nil)
	a1, far1 := xmit.Pipe(pool, nil)
	agg, _ := lag.New([]xmit.Port{a0, a1}, &lag.Config{Mode: lag.XOR, Policy: lag.Layer34})
	defer agg.Close()

	send := func() {
		b := frame.NewBatch(8)
		pool.Alloc(b, 8)
		for i := range b.Frames {
			b.Frames[i].Resize(60)
			d := b.Bytes(i)
			copy(d, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00, 0x45, 0, 0, 46})
			d[23] = 17 // UDP
			copy(d[26:34], []byte{10, 0, 0, 1, 10, 0, 0, 2})
			d[34], d[35] = 0x10, byte(i) // source port 0x1000+i: 8 flows
			d[37] = 53
		}
		agg.Send(b)
	}
	count := func(p xmit.Port) int {
		b := frame.NewBatch(64)
		n, _ := p.Recv(b)
		b.Free()
		return n
	}

	send()
	fmt.Println("both up:", count(far0), count(far1))
	agg.SetMemberUp(1, false) // or a carrier poller (Config.Miimon) noticing
	send()
	fmt.Println("member 1 down:", count(far0), count(far1), "dropped:", agg.Stats().TxDropped)
	// Output:
	// both up: 4 4
	// member 1 down: 8 0 dropped: 0
}
