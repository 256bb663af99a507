package lag

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// udpFlow writes a UDP frame of flow k into frame i of b, carrying seq in its payload.
var udpTemplate = cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0))

func udpFlow(b *frame.Batch, i int, k int, seq uint32) {
	f := &b.Frames[i]
	f.Resize(64)
	d := b.Bytes(i)
	copy(d, udpTemplate)
	binary.BigEndian.PutUint16(d[34:], uint16(1024+k))
	binary.BigEndian.PutUint16(d[36:], 80)
	binary.BigEndian.PutUint32(d[42:], seq)
}

// drain receives from a far end until stop, counting frames and collecting sequence numbers.
func drain(p *xmit.MemPort, stop <-chan struct{}, got *atomic.Int64, seen []atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	b := frame.NewBatch(64)
	for {
		n, _ := p.Recv(b)
		for i := 0; i < n; i++ {
			seq := binary.BigEndian.Uint32(b.Bytes(i)[42:])
			if seq < uint32(len(seen)) {
				seen[seq].Store(true)
			}
		}
		got.Add(int64(n))
		b.Free()
		if n == 0 {
			select {
			case <-stop:
				// Last sweep after the sender finished.
				for {
					n, _ := p.Recv(b)
					if n == 0 {
						return
					}
					for i := 0; i < n; i++ {
						seen[binary.BigEndian.Uint32(b.Bytes(i)[42:])].Store(true)
					}
					got.Add(int64(n))
					b.Free()
				}
			default:
				p.Wait(int64(time.Millisecond))
			}
		}
	}
}

// TestFailoverInMemory: an aggregate of two in-memory links, the carrier poller watching them
// (xmit.LinkStater); one link loses carrier mid-stream. Every frame is accounted for: received on
// a far end, or counted as dropped; no buffer is lost; after the poller noticed, the survivor
// carries everything.
func TestFailoverInMemory(t *testing.T) {
	for _, mode := range []Mode{RoundRobin, XOR, ActiveBackup} {
		t.Run(mode.String(), func(t *testing.T) {
			const total = 20000
			pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8192})
			near, far := memMembers(t, pool, 2)
			a, err := New(near, &Config{Mode: mode, Policy: Layer34, Miimon: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if mode == ActiveBackup {
				a.SetMemberUp(0, false) // make member 1 the active one, the one that fails
				a.SetMemberUp(0, true)
			}
			var got [2]atomic.Int64
			seen := make([]atomic.Bool, total)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range far {
				wg.Add(1)
				go drain(far[i], stop, &got[i], seen, &wg)
			}
			b := frame.NewBatch(64)
			seq := 0
			downAt := total / 2
			for seq < total {
				n, _ := pool.Alloc(b, min(64, total-seq))
				if n == 0 {
					time.Sleep(100 * time.Microsecond) // receivers behind: let them free buffers
					continue
				}
				for i := 0; i < n; i++ {
					udpFlow(b, i, seq%97, uint32(seq))
					seq++
				}
				a.Send(b)
				if seq >= downAt && downAt > 0 {
					near[1].(*xmit.MemPort).SetLinkUp(false) // carrier lost (both ends, like veth)
					downAt = 0
				}
			}
			// The poller notices within a few Miimon periods.
			deadline := time.Now().Add(5 * time.Second)
			for a.MemberUp(1) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if a.MemberUp(1) {
				t.Fatal("poller did not take member 1 out")
			}
			// After it noticed, nothing more is dropped: a last burst all lands on member 0.
			dropBefore := a.Stats().TxDropped
			n, _ := pool.Alloc(b, 64)
			for i := 0; i < n; i++ {
				udpFlow(b, i, i, uint32(total-1)) // reuse a seq: counted below by frames, not seqs
			}
			sent, err := a.Send(b)
			if err != nil || sent != n || a.Stats().TxDropped != dropBefore {
				t.Fatalf("after failover: sent %d of %d, err %v, drops %d → %d", sent, n, err, dropBefore, a.Stats().TxDropped)
			}
			close(stop)
			wg.Wait()
			st := a.Stats()
			recv := got[0].Load() + got[1].Load()
			if recv+int64(st.TxDropped) != total+int64(n) {
				t.Fatalf("received %d + %d, dropped %d: %d frames, sent %d", got[0].Load(), got[1].Load(), st.TxDropped, recv+int64(st.TxDropped), total+n)
			}
			if st.TxPackets != uint64(recv) {
				t.Fatalf("members queued %d, far ends received %d", st.TxPackets, recv)
			}
			if pool.InUse() != 0 {
				t.Fatalf("%d buffers not returned", pool.InUse())
			}
			t.Logf("%v: member0 %d, member1 %d, dropped %d", mode, got[0].Load(), got[1].Load(), st.TxDropped)
			a.Close()
		})
	}
}

// TestSetMemberUpConcurrent: member changes from another goroutine while Send runs (run with -race);
// every frame is accounted for.
func TestSetMemberUpConcurrent(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	near, far := memMembers(t, pool, 3)
	a, _ := New(near, &Config{Mode: XOR, Policy: Layer23, Table: true})
	var got [3]atomic.Int64
	seen := make([]atomic.Bool, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range far {
		wg.Add(1)
		go drain(far[i], stop, &got[i], seen, &wg)
	}
	flip := make(chan struct{})
	var fw sync.WaitGroup
	fw.Add(1)
	go func() {
		defer fw.Done()
		for k := 0; ; k++ {
			select {
			case <-flip:
				return
			default:
			}
			a.SetMemberUp(k%3, k%2 == 0)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	b := frame.NewBatch(64)
	total := 0
	for total < 30000 {
		n, _ := pool.Alloc(b, 64)
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for i := 0; i < n; i++ {
			udpFlow(b, i, total%251, 0)
			total++
		}
		a.Send(b)
	}
	close(flip)
	fw.Wait()
	close(stop)
	wg.Wait()
	recv := got[0].Load() + got[1].Load() + got[2].Load()
	if d := a.Stats().TxDropped; recv+int64(d) != int64(total) {
		t.Fatalf("received %d + dropped %d != sent %d", recv, d, total)
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers lost", pool.InUse())
	}
}

func TestNoUsableMemberDropsAndCounts(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, _ := memMembers(t, pool, 2)
	a, _ := New(near, nil)
	a.SetMemberUp(0, false)
	a.SetMemberUp(1, false)
	if a.LinkUp() {
		t.Fatal("aggregate up with no usable member")
	}
	b := frame.NewBatch(10)
	pool.Alloc(b, 10)
	if n, err := a.Send(b); n != 0 || err != nil || b.Len() != 0 {
		t.Fatalf("Send = %d, %v, batch left %d", n, err, b.Len())
	}
	if d := a.Stats().TxDropped; d != 10 || pool.InUse() != 0 {
		t.Fatalf("dropped %d, in use %d", d, pool.InUse())
	}
}

func TestBroadcast(t *testing.T) {
	// One arena for originals and copies (the members queue frames without copying): 8 originals
	// leave 12 buffers for copies.
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 20})
	clones := pool
	near, far := memMembers(t, pool, 3)
	if _, err := New(near, &Config{Mode: Broadcast}); !errors.Is(err, ErrConfig) {
		t.Fatalf("broadcast without a pool: %v", err)
	}
	a, err := New(near, &Config{Mode: Broadcast, ClonePool: clones})
	if err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(8)
	pool.Alloc(b, 8)
	for i := 0; i < 8; i++ {
		udpFlow(b, i, i, uint32(i))
	}
	n, err := a.Send(b)
	// 8 frames × 3 members; 12 buffers left for copies: the first member gets 8 copies, the second 4,
	// 4 copies are missing (counted), the last member gets the 8 originals.
	if err != nil || n != 20 {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if a.CloneFailed() != 4 || a.Stats().TxDropped != 4 {
		t.Fatalf("clone failures %d, drops %d", a.CloneFailed(), a.Stats().TxDropped)
	}
	rb := frame.NewBatch(64)
	for i, want := range []int{8, 4, 8} {
		k, _ := far[i].Recv(rb)
		if k != want {
			t.Errorf("member %d received %d, want %d", i, k, want)
		}
		for j := 0; j < k; j++ {
			if seq := binary.BigEndian.Uint32(rb.Bytes(j)[42:]); seq != uint32(j) {
				t.Errorf("member %d frame %d carries seq %d", i, j, seq)
			}
		}
		rb.Free()
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers lost", pool.InUse())
	}
}

func TestRecvRoundRobin(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, far := memMembers(t, pool, 3)
	a, _ := New(near, nil)
	for i := range far {
		b := frame.NewBatch(2)
		pool.Alloc(b, 2)
		for j := 0; j < 2; j++ {
			udpFlow(b, j, j, uint32(10*i+j))
		}
		far[i].Send(b)
	}
	b := frame.NewBatch(1)
	var order []int
	for {
		m, n, err := a.RecvFrom(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		order = append(order, m)
		b.Free()
	}
	want := []int{0, 1, 2, 0, 1, 2}
	if len(order) != len(want) {
		t.Fatalf("order %v", order)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if s := a.Stats(); s.RxPackets != 6 {
		t.Fatalf("RxPackets %d", s.RxPackets)
	}
	a.Close()
	if _, err := a.Recv(b); !errors.Is(err, xmit.ErrClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
	pool.Alloc(b, 1)
	if _, err := a.Send(b); !errors.Is(err, xmit.ErrClosed) || pool.InUse() != 0 {
		t.Fatalf("Send after Close: %v, in use %d", err, pool.InUse())
	}
}

func TestConfigErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8})
	near, _ := memMembers(t, pool, 2)
	for _, c := range []*Config{
		{Mode: 9}, {Policy: 9}, {Primary: "nope", Mode: ActiveBackup}, {Ifnames: []string{"x"}}, {Miimon: -1},
	} {
		if _, err := New(near, c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	if _, err := New(nil, nil); !errors.Is(err, ErrNoMembers) {
		t.Errorf("New without members: %v", err)
	}
	a, _ := New(near, nil)
	if a.SetMemberUp(2, false) == nil || a.SetMemberUp(-1, true) == nil {
		t.Error("SetMemberUp accepted a bad index")
	}
}
