package xmit

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// udpFrame writes a UDP/IPv4 frame of flow f with sequence seq into frame i of b.
func udpFrame(b *frame.Batch, i int, f, seq int) {
	fr := &b.Frames[i]
	fr.Resize(64)
	d := b.Bytes(i)
	clear(d)
	binary.BigEndian.PutUint16(d[12:14], frame.TypeIPv4)
	d[14] = 0x45
	d[23] = 17
	binary.BigEndian.PutUint32(d[26:30], 0xc6120001)
	binary.BigEndian.PutUint32(d[30:34], 0xc6120002)
	binary.BigEndian.PutUint16(d[34:36], uint16(1000+f))
	binary.BigEndian.PutUint16(d[36:38], 9)
	binary.BigEndian.PutUint32(d[42:46], uint32(seq))
	binary.BigEndian.PutUint32(d[46:50], uint32(f))
}

func flowSeq(d []byte) (f, seq int) {
	return int(binary.BigEndian.Uint32(d[46:50])), int(binary.BigEndian.Uint32(d[42:46]))
}

// drain receives everything waiting on p and returns the (flow, seq) pairs in order.
func drain(t testing.TB, p *MemPort) [][2]int {
	var got [][2]int
	b := frame.NewBatch(64)
	for {
		n, err := p.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return got
		}
		for i := range n {
			f, s := flowSeq(b.Bytes(i))
			got = append(got, [2]int{f, s})
		}
		b.Free()
	}
}

func TestTxQueueRoute(t *testing.T) {
	pool, _ := frame.NewPool(nil)
	// Egress 0 and 1: one port each; egress 2: four queues of one "device".
	var near, far []*MemPort
	for range 6 {
		a, b := Pipe(pool, nil)
		near, far = append(near, a), append(far, b)
	}
	q := NewTxQueue(16)
	for _, ports := range [][]Port{{near[0]}, {near[1]}, {near[2], near[3], near[4], near[5]}} {
		if _, err := q.Add(ports...); err != nil {
			t.Fatal(err)
		}
	}
	const flows, rounds = 24, 10
	want := make([]int, 3) // frames per egress
	b := frame.NewBatch(64)
	seq := 0
	for range rounds {
		pool.Alloc(b, 60)
		for i := range b.Frames {
			f := seq % flows
			udpFrame(b, i, f, seq)
			out := f % 4 // 3 → misrouted
			b.Frames[i].Out = uint16(out)
			if out < 3 {
				want[out]++
			}
			seq++
		}
		q.Route(b)
		if b.Len() != 0 {
			t.Fatal("Route left frames in the batch")
		}
		q.Flush()
	}
	st := q.Stats()
	total := want[0] + want[1] + want[2]
	if st.Frames != uint64(total) || st.Sent != uint64(total) || st.Dropped != 0 || st.Misrouted != uint64(seq-total) {
		t.Fatalf("stats %+v, want %d frames sent and %d misrouted", st, total, seq-total)
	}
	// Every frame reached its egress, in order per flow; on the 4-queue egress each flow used one queue.
	got := make([]int, 3)
	queueOf := map[int]int{}
	used := map[int]bool{}
	for j, p := range far {
		last := map[int]int{}
		for _, fs := range drain(t, p) {
			f, s := fs[0], fs[1]
			out := min(j, 2)
			if f%4 != out {
				t.Fatalf("flow %d (Out %d) arrived on egress %d", f, f%4, out)
			}
			if l, ok := last[f]; ok && s <= l {
				t.Fatalf("flow %d out of order: %d after %d", f, s, l)
			}
			last[f] = s
			got[out]++
			if out == 2 {
				if k, ok := queueOf[f]; ok && k != j {
					t.Fatalf("flow %d on queues %d and %d", f, k, j)
				}
				queueOf[f] = j
				used[j] = true
			}
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("egress %d: %d frames, want %d", i, got[i], want[i])
		}
	}
	if len(used) < 2 {
		t.Fatalf("6 flows on a 4-queue egress used %d queue(s)", len(used))
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", pool.InUse())
	}
	// One Send per full batch or per Flush, never per frame.
	if st.Sends > uint64(seq) {
		t.Fatalf("%d Send calls for %d frames", st.Sends, seq)
	}
}

// TestTxQueueBackPressure overfills a shallow port: every frame is sent or counted as dropped, and
// none is lost.
func TestTxQueueBackPressure(t *testing.T) {
	pool, _ := frame.NewPool(nil)
	a, b := Pipe(pool, &PipeConfig{Depth: 16})
	q := NewTxQueue(32)
	q.Add(a)
	batch := frame.NewBatch(100)
	pool.Alloc(batch, 100)
	for i := range batch.Frames {
		udpFrame(batch, i, 0, i)
	}
	q.Enqueue(0, batch)
	q.Flush()
	st := q.Stats()
	if st.Sent != 16 || st.Dropped != 84 || st.Frames != 100 {
		t.Fatalf("stats %+v, want 16 sent, 84 dropped", st)
	}
	if ps := a.Stats(); ps.TxDropped != 84 {
		t.Fatalf("port counted %d drops", ps.TxDropped)
	}
	if pool.InUse() != 16 {
		t.Fatalf("%d buffers in use, want the 16 queued", pool.InUse())
	}
	if got := drain(t, b); len(got) != 16 || got[0][1] != 0 || got[15][1] != 15 {
		t.Fatalf("received %v", got)
	}
	q.Enqueue(9, batch) // empty batch to an unknown egress: nothing happens
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers in use after draining", pool.InUse())
	}
}

// TestTxQueueArenas routes frames of two arenas to one egress: the pending batch is sent before it
// takes frames of the other arena, and everything arrives.
func TestTxQueueArenas(t *testing.T) {
	p1, _ := frame.NewPool(nil)
	p2, _ := frame.NewPool(nil)
	a, b := Pipe(p1, nil)
	q := NewTxQueue(64)
	q.Add(a)
	for r := range 4 {
		pool := p1
		if r%2 == 1 {
			pool = p2
		}
		batch := frame.NewBatch(10)
		pool.Alloc(batch, 10)
		for i := range batch.Frames {
			udpFrame(batch, i, 0, r*10+i)
		}
		q.Route(batch)
	}
	q.Flush()
	st := q.Stats()
	if st.Early != 3 || st.Sent != 40 || st.Sends != 4 {
		t.Fatalf("stats %+v, want 3 early sends of 4, 40 sent", st)
	}
	got := drain(t, b)
	if len(got) != 40 {
		t.Fatalf("received %d of 40", len(got))
	}
	for i, fs := range got {
		if fs[1] != i {
			t.Fatalf("frame %d has seq %d", i, fs[1])
		}
	}
	if p1.InUse() != 0 || p2.InUse() != 0 {
		t.Fatalf("buffers in use: %d, %d", p1.InUse(), p2.InUse())
	}
}

func TestTxQueueAllocs(t *testing.T) {
	pool, _ := frame.NewPool(nil)
	var ends []*MemPort
	q := NewTxQueue(32)
	for range 3 {
		a, b := Pipe(pool, nil)
		ends = append(ends, b)
		q.Add(a)
	}
	c, cr := Pipe(pool, nil)
	d, dr := Pipe(pool, nil)
	q.Add(c, d)
	ends = append(ends, cr, dr)
	in, rx := frame.NewBatch(64), frame.NewBatch(64)
	allocs := testing.AllocsPerRun(100, func() {
		pool.Alloc(in, 64)
		for i := range in.Frames {
			udpFrame(in, i, i, i)
			in.Frames[i].Out = uint16(i % 5) // 4: misrouted
		}
		q.Route(in)
		q.Flush()
		for _, e := range ends {
			for {
				n, _ := e.Recv(rx)
				if n == 0 {
					break
				}
				rx.Free()
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Route+Flush", allocs)
	}
}

// TestTxQueueWorkers runs two workers, each with its own TxQueue and ports, while another goroutine
// reads their stats: no lock is shared, and -race finds nothing.
func TestTxQueueWorkers(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8192})
	type worker struct {
		q    *TxQueue
		rxs  []*MemPort
		sent int
	}
	ws := make([]*worker, 2)
	for i := range ws {
		w := &worker{q: NewTxQueue(16)}
		for range 2 {
			a, b := Pipe(pool, &PipeConfig{Depth: 4096})
			w.q.Add(a)
			w.rxs = append(w.rxs, b)
		}
		ws[i] = w
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				for _, w := range ws {
					_ = w.q.Stats()
				}
			}
		}
	}()
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := frame.NewBatch(32)
			for r := range 50 {
				n, _ := pool.Alloc(b, 32)
				for i := range n {
					udpFrame(b, i, i, r*32+i)
					b.Frames[i].Out = uint16(i % 2)
				}
				w.sent += n
				w.q.Route(b)
				w.q.Flush()
			}
		}()
	}
	wg.Wait()
	close(stop)
	for i, w := range ws {
		got := 0
		for _, rx := range w.rxs {
			got += len(drain(t, rx))
		}
		if st := w.q.Stats(); got != w.sent || st.Sent != uint64(got) {
			t.Fatalf("worker %d: %d received, %d sent, stats %+v", i, got, w.sent, st)
		}
	}
}

func TestFlowHashPick(t *testing.T) {
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(64)
	pool.Alloc(b, 2)
	udpFrame(b, 0, 3, 1)
	udpFrame(b, 1, 3, 2) // same flow, other payload
	if FlowHash(b.Bytes(0)) != FlowHash(b.Bytes(1)) {
		t.Fatal("one flow, two hashes")
	}
	binary.BigEndian.PutUint16(b.Bytes(1)[34:36], 2000)
	if FlowHash(b.Bytes(0)) == FlowHash(b.Bytes(1)) {
		t.Fatal("other source port, same hash")
	}
	b.Free()
	// Tagged in band: same hash as untagged.
	d := make([]byte, 0, 80)
	pool.Alloc(b, 1)
	udpFrame(b, 0, 5, 1)
	plain := append([]byte(nil), b.Bytes(0)...)
	d = append(append(append(d, plain[:12]...), 0x81, 0, 0, 7), plain[12:]...)
	if FlowHash(d) != FlowHash(plain) {
		t.Fatal("a VLAN tag changed the flow hash")
	}
	for _, short := range [][]byte{nil, plain[:13], plain[:14], plain[:33], d[:18], d[:37]} {
		FlowHash(short) // must not panic
	}
	b.Free()
	// Pick spreads 4096 flows evenly enough over 4 queues and stays in range.
	var n [4]int
	for f := range 4096 {
		pool.Alloc(b, 1)
		udpFrame(b, 0, f, 0)
		k := Pick(FlowHash(b.Bytes(0)), 4)
		n[k]++
		b.Free()
	}
	for k, c := range n {
		if c < 800 || c > 1250 {
			t.Fatalf("queue %d got %d of 4096 flows: %v", k, c, n)
		}
	}
	if Pick(0xffffffff, 7) != 6 || Pick(0, 7) != 0 {
		t.Fatal("Pick out of range")
	}
}

func BenchmarkTxQueueRoute(b *testing.B) {
	pool, _ := frame.NewPool(nil)
	q := NewTxQueue(64)
	var ends []*MemPort
	for range 2 {
		x, y := Pipe(pool, nil)
		ends = append(ends, y)
		q.Add(x)
	}
	in, rx := frame.NewBatch(64), frame.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		pool.Alloc(in, 64)
		for i := range in.Frames {
			in.Frames[i].Out = uint16(i & 1)
		}
		q.Route(in)
		q.Flush()
		for _, e := range ends {
			e.Recv(rx)
			rx.Free()
		}
	}
	b.ReportMetric(float64(b.N)*64/b.Elapsed().Seconds()/1e6, "Mframes/s")
}

// TestTxQueueRouteRandom: random Route calls (batches up to three times the pending capacity, so
// pending batches fill and are sent in the middle of a call; two arenas alternating at random;
// misrouted frames; single-port and four-queue egresses) deliver every routed frame exactly once,
// to its egress, in order per flow, with its own bytes; every other frame is counted, none is lost.
func TestTxQueueRouteRandom(t *testing.T) {
	pools := [2]*frame.Pool{}
	for i := range pools {
		pools[i], _ = frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	}
	var near []Port
	var far []*MemPort
	for range 6 {
		a, b := Pipe(pools[0], &PipeConfig{Depth: 4096})
		near, far = append(near, a), append(far, b)
	}
	q := NewTxQueue(8)
	q.Add(near[0])
	q.Add(near[1])
	q.Add(near[2:]...) // egress 2: four queues
	seed := uint64(1)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed>>33) % n
	}
	want := map[[2]int]int{} // (flow, seq) → egress
	last := map[int]int{}
	got := 0
	receive := func() { // drained often, so that the pools never run dry
		for port, p := range far {
			eg := min(port, 2)
			for _, fs := range drain(t, p) {
				w, ok := want[fs]
				if !ok || w != eg {
					t.Fatalf("frame %v on port %d (egress %d), routed to egress %d (known %v)", fs, port, eg, w, ok)
				}
				delete(want, fs)
				if s, ok := last[fs[0]*8+port]; ok && s >= fs[1] {
					t.Fatalf("flow %d reordered on port %d: %d after %d", fs[0], port, fs[1], s)
				}
				last[fs[0]*8+port] = fs[1]
				got++
			}
		}
	}
	seq := 0
	mis := 0
	for round := 0; round < 400; round++ {
		b := frame.NewBatch(24)
		pools[rnd(2)].Alloc(b, 1+rnd(24))
		for i := range b.Frames {
			f := rnd(8)
			udpFrame(b, i, f, seq)
			out := rnd(4) // 3: no such egress
			b.Frames[i].Out = uint16(out)
			if out < 3 {
				want[[2]int{f, seq}] = out
			} else {
				mis++
			}
			seq++
		}
		q.Route(b)
		if b.Len() != 0 {
			t.Fatal("Route left frames in the batch")
		}
		if rnd(3) == 0 {
			q.Flush()
			receive()
		}
	}
	q.Flush()
	receive()
	if len(want) != 0 {
		t.Fatalf("%d routed frames never arrived", len(want))
	}
	if st := q.Stats(); st.Misrouted != uint64(mis) || st.Sent != uint64(got) || st.Dropped != 0 {
		t.Fatalf("stats %+v: want %d misrouted, %d sent", st, mis, got)
	}
	if pools[0].InUse() != 0 || pools[1].InUse() != 0 {
		t.Fatalf("buffers in use: %d, %d", pools[0].InUse(), pools[1].InUse())
	}
}
