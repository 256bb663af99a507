package app

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// pipeFrames allocates n frames of 60 bytes from pool into b (empty), frame k's bytes 14..21
// holding tag and seq+k.
func pipeFrames(t testing.TB, pool *frame.Pool, b *frame.Batch, n int, tag, seq uint32) {
	if got, err := pool.Alloc(b, n); got != n {
		t.Errorf("pool gave %d of %d buffers: %v", got, n, err) // Errorf: some callers are not the test's goroutine
	}
	for k := range b.Frames {
		b.Frames[k].Resize(60)
		d := b.Bytes(k)
		binary.BigEndian.PutUint32(d[14:], tag)
		binary.BigEndian.PutUint32(d[18:], seq+uint32(k))
	}
}

// drainPort receives everything queued on p, calls each for every frame's bytes and frees them;
// it returns how many frames came.
func drainPort(p xmit.Port, b *frame.Batch, each func(d []byte)) int {
	got := 0
	for {
		n, _ := p.Recv(b)
		if n == 0 {
			return got
		}
		for i := range b.Frames {
			if each != nil {
				each(b.Bytes(i))
			}
		}
		got += n
		b.Free()
	}
}

// udpFrames fills b (empty) with n UDP frames from pool that twoPortRouter routes from port 0 to
// port 1.
func udpFrames(t testing.TB, pool *frame.Pool, b *frame.Batch, n int) {
	pipeFrames(t, pool, b, n, 0, 0)
	for i := range b.Frames {
		d := b.Bytes(i)
		frame.Ether(d).SetDst(frame.MAC{2, 0, 0, 0, 1, 0})
		frame.Ether(d).SetSrc(frame.MAC{2, 0, 0, 0, 0, 1})
		frame.Ether(d).SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:34])
		clear(ip)
		ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoUDP
		ip[2], ip[3] = 0, 46
		copy(ip[12:], []byte{10, 0, 1, 2, 198, 18, 0, 1})
		ip.SetChecksum()
	}
}

// TestPipelineAllocs: the receive side's handoff (a worker's Forward sending through its
// pipeline ports, and such a port's Send of frames of another arena) and the transmit side's drain
// (bursts off the ring into the TxQueue, Flush) allocate nothing, and the frames reach the ports
// they were routed or sent to.
func TestPipelineAllocs(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	other, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256}) // the stage's own frames (ICMP, ARP)
	a0, far0 := xmit.Pipe(pool, nil)
	a1, far1 := xmit.Pipe(pool, nil)
	p, err := NewPipeline(PipelineConfig{RxWorkers: 1, TxPorts: []xmit.Port{a0, a1}, TxWorkers: 1, Batch: 64})
	if err != nil {
		t.Fatal(err)
	}
	rx := p.RxPorts(0, []xmit.Port{a0, a1})
	tx := p.tx[0]
	w := twoPortRouter(t).NewWorker(64)
	b, in, sink := frame.NewBatch(64), frame.NewBatch(64), frame.NewBatch(64)
	moved, runs := [2]int{}, 0
	step := func() {
		runs++
		udpFrames(t, pool, b, 40)
		far0.Send(b)
		rx[0].Recv(in)
		w.Forward(0, in, rx) // to port 1, through the ring
		pipeFrames(t, other, b, 8, 2, 0)
		rx[0].Send(b)
		for tx.poll() > 0 {
		}
		tx.flush()
		moved[0] += drainPort(far0, sink, nil)
		moved[1] += drainPort(far1, sink, nil)
	}
	if allocs := testing.AllocsPerRun(100, step); allocs != 0 {
		t.Errorf("%.1f allocations per handoff and drain", allocs)
	}
	if moved != [2]int{runs * 8, runs * 40} {
		t.Fatalf("%v frames reached the far ends of ports 0 and 1 in %d runs, want %d and %d", moved, runs, runs*8, runs*40)
	}
	total := uint64(moved[0] + moved[1])
	if s := p.Stats(); s.Handed != total || s.Taken != total || s.TxQueue.Sent != total || !s.Balanced() {
		t.Fatalf("%+v after %d frames", s, total)
	}
	if pool.InUse()+other.InUse() != 0 {
		t.Fatalf("%d and %d buffers still out", pool.InUse(), other.InUse())
	}
}

// TestPipelineDropsCounted: a full ring releases what does not fit and counts it, a port that
// refuses frames counts them (and so does the TxQueue), and Transmit returns once the receive
// worker closed and the ring is drained, with every frame accounted for and every buffer back.
func TestPipelineDropsCounted(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	a0, far0 := xmit.Pipe(pool, nil)
	a1, _ := xmit.Pipe(pool, nil)
	a1.Close() // refuses (and counts) everything sent to it
	p, err := NewPipeline(PipelineConfig{RxWorkers: 1, TxPorts: []xmit.Port{a0, a1}, TxWorkers: 1, Batch: 32, Ring: 64})
	if err != nil {
		t.Fatal(err)
	}
	rx := p.RxPorts(0, []xmit.Port{a0, a1})
	b := frame.NewBatch(32)
	queued := 0
	for i := 0; i < 3; i++ { // 96 frames for a ring of 64
		pipeFrames(t, pool, b, 32, 0, 0)
		n, err := rx[i%2].Send(b)
		if err != nil || len(b.Frames) != 0 {
			t.Fatalf("handoff: %d, %v, %d frames left in the batch", n, err, len(b.Frames))
		}
		queued += n
	}
	if queued != 64 {
		t.Fatalf("%d frames on a ring of 64", queued)
	}
	p.CloseRx(0)
	if e := p.Transmit(0); e.Send != 1 || !errors.Is(e.First, xmit.ErrClosed) {
		t.Errorf("send errors: %v, want the closed port's one", e)
	}
	s := p.Stats()
	if s.Handed != 96 || s.Queued != 64 || s.RingFull != 32 || s.Taken != 64 || s.TxQueue.Sent != 32 || s.TxQueue.Dropped != 32 || s.Released() != 32 || !s.Balanced() {
		t.Fatalf("%+v", s)
	}
	if got := drainPort(far0, frame.NewBatch(32), nil); got != 32 {
		t.Errorf("port 0 received %d, want 32", got)
	}
	if a1.Stats().TxDropped != 32 || pool.InUse() != 0 {
		t.Errorf("port 1 dropped %d (want 32); %d buffers still out", a1.Stats().TxDropped, pool.InUse())
	}
	s.Taken++
	if s.Balanced() {
		t.Error("a frame taken twice balances")
	}
}

// TestPipelineConcurrent (run with -race): three receive workers, each with frames of its own
// pool and of a shared one, hand frames for both ports to two transmit workers (one per port)
// while they run; every frame arrives once, intact, in the order its worker sent it to its port,
// and every buffer goes back to the pool it came from.
func TestPipelineConcurrent(t *testing.T) {
	const rxWorkers, batches, per = 3, 40, 16
	shared, _ := frame.NewPool(&frame.PoolConfig{Buffers: 2048})
	a0, far0 := xmit.Pipe(shared, &xmit.PipeConfig{Depth: 4096})
	a1, far1 := xmit.Pipe(shared, &xmit.PipeConfig{Depth: 4096})
	p, err := NewPipeline(PipelineConfig{RxWorkers: rxWorkers, TxPorts: []xmit.Port{a0, a1}, TxWorkers: 2, Batch: 32, Ring: 256})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	txErrs := make([]PortErrors, 2)
	for i := range txErrs {
		wg.Add(1)
		go func() { defer wg.Done(); txErrs[i] = p.Transmit(i) }()
	}
	pools := make([]*frame.Pool, rxWorkers)
	var rxWG sync.WaitGroup
	for r := range rxWorkers {
		pools[r], _ = frame.NewPool(&frame.PoolConfig{Buffers: 2048})
		ports := p.RxPorts(r, []xmit.Port{a0, a1})
		rxWG.Add(1)
		go func() {
			defer rxWG.Done()
			defer p.CloseRx(r)
			b := frame.NewBatch(per)
			seq := [2]uint32{}
			for i := range batches {
				port := i % 2
				pool := pools[r]
				if i%3 == 0 {
					pool = shared
				}
				pipeFrames(t, pool, b, per, uint32(r<<8|port), seq[port])
				// A full ring drops (and counts): wait for room, so that every frame arrives.
				for p.rx[r].rings[p.owner[port]].Len() > 256-per {
					runtime.Gosched()
				}
				if n, _ := ports[port].Send(b); n != per {
					t.Errorf("worker %d: %d of %d frames on the ring", r, n, per)
				}
				seq[port] += per
			}
		}()
	}
	rxWG.Wait()
	wg.Wait()
	for _, e := range txErrs {
		if e.Send != 0 {
			t.Errorf("send errors: %v", e)
		}
	}
	next := map[uint32]uint32{}
	bad := 0
	check := func(port int) func(d []byte) {
		return func(d []byte) {
			tag, seq := binary.BigEndian.Uint32(d[14:]), binary.BigEndian.Uint32(d[18:])
			if int(tag&0xff) != port || tag>>8 >= rxWorkers || seq != next[tag] {
				bad++
				return
			}
			next[tag] = seq + 1
		}
	}
	sink := frame.NewBatch(64)
	got := drainPort(far0, sink, check(0)) + drainPort(far1, sink, check(1))
	const total = rxWorkers * batches * per
	if got != total || bad != 0 {
		t.Fatalf("the far ends received %d frames (%d out of order or wrong), want %d", got, bad, total)
	}
	if s := p.Stats(); s.Handed != total || s.Taken != total || s.TxQueue.Sent != total || s.Released() != 0 || !s.Balanced() {
		t.Fatalf("%+v", s)
	}
	for r, pool := range append(pools, shared) {
		if pool.InUse() != 0 {
			t.Errorf("pool %d: %d buffers still out", r, pool.InUse())
		}
	}
}

func TestPipelineConfigErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	a, _ := xmit.Pipe(pool, nil)
	b, _ := xmit.Pipe(pool, nil)
	ports := []xmit.Port{a, b}
	for _, c := range []struct {
		cfg  PipelineConfig
		want string
	}{
		{PipelineConfig{RxWorkers: 0, TxPorts: ports, TxWorkers: 1}, "0 receive workers"},
		{PipelineConfig{RxWorkers: 1, TxWorkers: 1}, "no ports"},
		{PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 3}, "3 transmit workers: want 1 to 2"},
		{PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 0}, "0 transmit workers"},
		{PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 1, Owners: []int{0}}, "1 owners for 2 ports"},
		{PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 2, Owners: []int{0, 2}}, "port 1's owner 2"},
		{PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 1, Ring: -1}, "ring of -1 items"},
	} {
		_, err := NewPipeline(c.cfg)
		if !errors.Is(err, ErrPipelineConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := NewPipeline(PipelineConfig{RxWorkers: 2, TxPorts: ports, TxWorkers: 2, Owners: []int{1, 0}}); err != nil {
		t.Error(err)
	}
}

// BenchmarkHandoff is one batch of 64 frames through twoPortRouter (port 0 to port 1) on one
// goroutine: mode=direct sends the routed batch on the port (run to completion), mode=pipeline
// hands it to the ring and drains it into the transmit worker's TxQueue, which sends it. Each op
// also refills port 0 and empties port 1's far end, the same in both modes, so the difference
// between the modes is what the handoff and the drain add per frame (instructions, under
// callgrind: bench/scripts/irper.sh); it does not measure crossing cores.
func BenchmarkHandoff(b *testing.B) {
	for _, mode := range []string{"direct", "pipeline"} {
		b.Run("mode="+mode, func(b *testing.B) {
			pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
			a0, far0 := xmit.Pipe(pool, nil)
			a1, far1 := xmit.Pipe(pool, nil)
			ports := []xmit.Port{a0, a1}
			p, err := NewPipeline(PipelineConfig{RxWorkers: 1, TxPorts: ports, TxWorkers: 1, Batch: 64})
			if err != nil {
				b.Fatal(err)
			}
			out := ports
			if mode == "pipeline" {
				out = p.RxPorts(0, ports)
			}
			tx := p.tx[0]
			r := twoPortRouter(b)
			w := r.NewWorker(64)
			fill, in, sink := frame.NewBatch(64), frame.NewBatch(64), frame.NewBatch(64)
			got := 0
			b.ReportAllocs()
			for b.Loop() {
				udpFrames(b, pool, fill, 64)
				far0.Send(fill)
				a0.Recv(in)
				w.Forward(0, in, out)
				if mode == "pipeline" {
					for tx.poll() > 0 {
					}
					tx.flush()
				}
				got += drainPort(far1, sink, nil)
			}
			w.Flush()
			if c := r.Counters(); got == 0 || c.Forwarded != uint64(got) {
				b.Fatalf("forwarded %d, the far end received %d", c.Forwarded, got)
			}
		})
	}
}
