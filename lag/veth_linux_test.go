package lag

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

const testEtherType = 0x88b5 // IEEE local experimental

var testMagic = []byte("wslag")

// vethFrame writes test frame seq (flow seq%61) into frame i of b.
func vethFrame(b *frame.Batch, i int, seq uint32) {
	b.Frames[i].Resize(64)
	d := b.Bytes(i)
	copy(d, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, byte(seq % 61), 1})
	binary.BigEndian.PutUint16(d[12:], testEtherType)
	copy(d[14:], testMagic)
	binary.BigEndian.PutUint32(d[19:], seq)
}

// TestVethFailover: an aggregate of two veth members (AF_PACKET ports in one namespace, their
// peers in another), one member taken down with `ip link set down` mid-stream. Every frame is
// accounted for: received on the far side (of either member, before the failure), or counted as
// dropped by the aggregate, its members or the receiving rings; after the carrier poller noticed,
// everything lands on the survivor.
func TestVethFailover(t *testing.T) {
	nettest.RequirePriv(t)
	for _, mode := range []Mode{RoundRobin, XOR} {
		t.Run(mode.String(), func(t *testing.T) { vethFailover(t, mode) })
	}
}

func vethFailover(t *testing.T, mode Mode) {
	nsA, nsB := nettest.NewNS(t, "lagA"), nettest.NewNS(t, "lagB")
	a0, b0 := nettest.Veth(t, nsA, nsB, "a", "b")
	a1, b1 := nettest.Veth(t, nsA, nsB, "a", "b")
	open := func(ns *nettest.NS, name string) *afpacket.Port {
		var p *afpacket.Port
		if err := ns.Do(func() (err error) {
			p, err = afpacket.Open(name, &afpacket.Config{TxRetries: 100})
			return err
		}); err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		return p
	}
	pa0, pa1 := open(nsA, a0), open(nsA, a1)
	pb := []*afpacket.Port{open(nsB, b0), open(nsB, b1)}
	defer pb[0].Close()
	defer pb[1].Close()

	agg, err := New([]xmit.Port{pa0, pa1}, &Config{Mode: mode, Policy: Layer2, Miimon: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	// IFF_RUNNING follows the carrier through the kernel's linkwatch work, which may run up to a
	// second after the veth came up: wait for the miimon poll to see both members up.
	for deadline := time.Now().Add(5 * time.Second); !agg.MemberUp(0) || !agg.MemberUp(1); {
		if time.Now().After(deadline) {
			t.Fatalf("members not up 5 s after start: %v", agg.Usable())
		}
		time.Sleep(10 * time.Millisecond)
	}

	const total = 20000
	seen := make([]atomic.Uint32, total)
	var recv [2]atomic.Int64
	var lastRecv atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range pb {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := frame.NewBatch(256)
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := p.Recv(b)
				if err != nil {
					return
				}
				for j := 0; j < n; j++ {
					d := b.Bytes(j)
					if len(d) < 23 || binary.BigEndian.Uint16(d[12:]) != testEtherType || string(d[14:19]) != string(testMagic) {
						continue // IPv6 neighbour discovery and the like
					}
					seq := binary.BigEndian.Uint32(d[19:])
					if seq < total {
						seen[seq].Add(1)
						recv[i].Add(1)
						lastRecv.Store(time.Now().UnixNano())
					}
				}
				b.Free()
				if n == 0 {
					p.Wait(int64(time.Millisecond))
				}
			}
		}()
	}

	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	b := frame.NewBatch(64)
	var downSeq, noticedSeq uint32
	var dropsAtNotice uint64
	for seq := uint32(0); seq < total; {
		n, _ := pool.Alloc(b, min(64, total-int(seq)))
		for i := 0; i < n; i++ {
			vethFrame(b, i, seq)
			seq++
		}
		agg.Send(b)
		if downSeq == 0 && seq >= total/3 {
			downSeq = seq
			nsA.Exec(t, "ip", "link", "set", a1, "down")
		}
		if downSeq != 0 && noticedSeq == 0 && !agg.MemberUp(1) {
			noticedSeq = seq
			dropsAtNotice = agg.Stats().TxDropped
		}
		time.Sleep(20 * time.Microsecond) // pace: the receiving rings are not the subject here
	}
	// Let the receivers drain: stop once nothing arrived for 300 ms.
	for time.Since(time.Unix(0, lastRecv.Load())) < 300*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	if noticedSeq == 0 {
		t.Fatalf("the carrier poller never took member 1 out (usable %v)", agg.Usable())
	}
	st := agg.Stats()
	farDrops := pb[0].Stats().RxDropped + pb[1].Stats().RxDropped
	got := recv[0].Load() + recv[1].Load()
	dup := 0
	for i := range seen {
		if seen[i].Load() > 1 {
			dup++
		}
	}
	t.Logf("%v: down at frame %d, noticed at %d; far side received %d on b0, %d on b1; aggregate+members dropped %d; far rings dropped %d",
		mode, downSeq, noticedSeq, recv[0].Load(), recv[1].Load(), st.TxDropped, farDrops)
	if dup != 0 {
		t.Errorf("%d frames received twice", dup)
	}
	if got+int64(st.TxDropped)+int64(farDrops) != total {
		t.Errorf("received %d + dropped %d + far ring drops %d = %d, sent %d", got, st.TxDropped, farDrops, got+int64(st.TxDropped)+int64(farDrops), total)
	}
	if st.TxDropped != dropsAtNotice {
		t.Errorf("drops grew after the poller took member 1 out: %d → %d", dropsAtNotice, st.TxDropped)
	}
	if pool.InUse() != 0 {
		t.Errorf("%d pool buffers not returned", pool.InUse())
	}
}
