package xmit

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
	"github.com/wirespeed/wirespeed/vlan"
)

func newPool(t testing.TB, n int) *frame.Pool {
	p, err := frame.NewPool(&frame.PoolConfig{Buffers: n})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fill allocates n frames of length l stamped with a sequence number at bytes 14..21.
func fill(t testing.TB, p *frame.Pool, b *frame.Batch, n, l int, seq *uint64) {
	t.Helper()
	got, err := p.Alloc(b, n)
	if err != nil || got != n {
		t.Fatalf("Alloc(%d) = %d, %v", n, got, err)
	}
	for i := len(b.Frames) - n; i < len(b.Frames); i++ {
		b.Frames[i].Resize(l)
		d := b.Bytes(i)
		clear(d)
		binary.BigEndian.PutUint16(d[12:], frame.TypeIPv4)
		binary.BigEndian.PutUint64(d[14:], *seq)
		*seq++
	}
}

func TestPipeBasic(t *testing.T) {
	p := newPool(t, 256)
	a, z := Pipe(p, &PipeConfig{Depth: 100})
	if a.Name() == z.Name() || !a.LinkUp() {
		t.Fatal("names/link")
	}
	b := frame.NewBatch(64)
	var seq uint64
	fill(t, p, b, 64, 60, &seq)
	if n, err := a.Send(b); n != 64 || err != nil || b.Len() != 0 {
		t.Fatalf("Send = %d, %v, left %d", n, err, b.Len())
	}
	fill(t, p, b, 64, 100, &seq)
	if n, _ := a.Send(b); n != 64 {
		t.Fatalf("second Send = %d (depth 100 rounds up to 128)", n)
	}
	fill(t, p, b, 10, 60, &seq)
	if n, _ := a.Send(b); n != 0 {
		t.Fatalf("Send into a full queue = %d", n)
	}
	if s := a.Stats(); s.TxPackets != 128 || s.TxDropped != 10 || s.TxBytes != 64*60+64*100 {
		t.Fatalf("sender stats %+v", s)
	}
	var next uint64
	for {
		n, err := z.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for i := 0; i < n; i++ {
			if got := binary.BigEndian.Uint64(b.Bytes(i)[14:]); got != next {
				t.Fatalf("frame %d has seq %d", next, got)
			}
			next++
		}
		b.Free()
	}
	if next != 128 || p.InUse() != 0 {
		t.Fatalf("received %d, in use %d", next, p.InUse())
	}
	if s := z.Stats(); s.RxPackets != 128 {
		t.Fatalf("receiver stats %+v", s)
	}
	b.Frames = append(b.Frames, frame.Frame{})
	if _, err := z.Recv(b); err != ErrNotEmpty {
		t.Fatalf("Recv into non-empty batch: %v", err)
	}
}

func TestPipeDropsCounted(t *testing.T) {
	p := newPool(t, 256)
	a, z := Pipe(p, &PipeConfig{MTU: 100})
	b := frame.NewBatch(64)
	var seq uint64
	fill(t, p, b, 3, 60, &seq)
	b.Frames[1].Resize(200) // over MTU+22
	b.Frames[2].Resize(10)  // runt without an Ethernet header
	if n, _ := a.Send(b); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
	a.SetLinkUp(false)
	if z.LinkUp() {
		t.Fatal("carrier is per link")
	}
	fill(t, p, b, 5, 60, &seq)
	if n, _ := a.Send(b); n != 0 {
		t.Fatal("sent on a down link")
	}
	a.SetLinkUp(true)
	if s := a.Stats(); s.TxDropped != 7 || s.TxPackets != 1 {
		t.Fatalf("stats %+v", s)
	}
	z.Close()
	if p.InUse() != 0 || z.Stats().RxDropped != 1 {
		t.Fatalf("close released %d, in use %d", z.Stats().RxDropped, p.InUse())
	}
	if _, err := z.Recv(b); err != ErrClosed {
		t.Fatalf("Recv after Close: %v", err)
	}
	fill(t, p, b, 2, 60, &seq)
	if _, err := a.Send(b); err != ErrClosed || p.InUse() != 0 {
		t.Fatalf("Send to a closed peer: %v, in use %d", err, p.InUse())
	}
	fill(t, p, b, 2, 60, &seq)
	if _, err := z.Send(b); err != ErrClosed || p.InUse() != 0 {
		t.Fatalf("Send on a closed end: %v", err)
	}
	if err := z.Wait(-1); err != ErrClosed {
		t.Fatalf("Wait on closed: %v", err)
	}
}

func TestPipeForeignArenaAndVLANOffload(t *testing.T) {
	p := newPool(t, 64)
	other := newPool(t, 64)
	a, z := Pipe(p, nil)
	b := frame.NewBatch(8)
	var seq uint64
	fill(t, other, b, 2, 60, &seq)
	want0 := append([]byte(nil), b.Bytes(0)...)
	f := &b.Frames[1]
	f.Flags |= frame.FlagVLAN
	f.TPID, f.TCI = vlan.TPID8021Q, 42
	if n, _ := a.Send(b); n != 2 {
		t.Fatal("send")
	}
	if other.InUse() != 0 {
		t.Fatal("foreign frames not released after copy")
	}
	if s := a.Stats(); s.TxCopied != 2 {
		t.Fatalf("TxCopied %d", s.TxCopied)
	}
	z.Recv(b)
	if !bytes.Equal(b.Bytes(0), want0) {
		t.Fatal("copied frame differs")
	}
	var h vlan.Header
	if vlan.Parse(b.Bytes(1), &h); h.N != 1 || h.Outer != vlan.C(42) || b.Frames[1].Len != 64 {
		t.Fatalf("OOB tag not put in band: %+v", h)
	}
	if b.Frames[1].Flags != 0 {
		t.Fatal("metadata crossed the wire")
	}
	b.Free()
}

func TestPipeWait(t *testing.T) {
	p := newPool(t, 64)
	a, z := Pipe(p, nil)
	done := make(chan error)
	go func() { done <- z.Wait(-1) }()
	time.Sleep(10 * time.Millisecond)
	b := frame.NewBatch(1)
	var seq uint64
	fill(t, p, b, 1, 60, &seq)
	a.Send(b)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake for one frame")
	}
	if z.Wait(int64(time.Millisecond)) != nil {
		t.Fatal("Wait with a frame queued")
	}
	z.Recv(b)
	b.Free()
	start := time.Now()
	if z.Wait(int64(5*time.Millisecond)) != nil || time.Since(start) < 4*time.Millisecond {
		t.Fatal("timeout")
	}
	go func() { done <- z.Wait(-1) }()
	time.Sleep(5 * time.Millisecond)
	z.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a waiter")
	}
}

// TestPipeConcurrent: a sender and a receiver goroutine with random batch sizes; nothing lost,
// duplicated or reordered; drops (queue full) are counted and the sequence skips exactly those.
func TestPipeConcurrent(t *testing.T) {
	p := newPool(t, 1024)
	a, z := Pipe(p, &PipeConfig{Depth: 64})
	const total = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	sentSeqs := make(chan []uint64, 1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 1))
		b := frame.NewBatch(64)
		var seq uint64
		var queued []uint64
		for seq < total {
			n := 1 + r.IntN(64)
			n = min(n, total-int(seq))
			got, _ := p.Alloc(b, n)
			for i := 0; i < got; i++ {
				b.Frames[i].Resize(60)
				binary.BigEndian.PutUint64(b.Bytes(i)[14:], seq+uint64(i))
			}
			if got == 0 {
				time.Sleep(time.Microsecond)
				continue
			}
			first := seq
			seq += uint64(got)
			sent, _ := a.Send(b)
			for i := 0; i < sent; i++ { // Send keeps order: the first `sent` made it
				queued = append(queued, first+uint64(i))
			}
			if r.IntN(10) == 0 {
				time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
			}
		}
		sentSeqs <- queued
		a.Close()
	}()
	var got []uint64
	b := frame.NewBatch(64)
	for {
		n, err := z.Recv(b)
		if n == 0 {
			if a.closed.Load() && z.rx.tail == z.rx.head {
				break
			}
			z.Wait(int64(time.Millisecond))
			continue
		}
		_ = err
		for i := 0; i < n; i++ {
			got = append(got, binary.BigEndian.Uint64(b.Bytes(i)[14:]))
		}
		b.Free()
	}
	wg.Wait()
	want := <-sentSeqs
	if len(got) != len(want) {
		t.Fatalf("received %d, queued %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("frame %d: seq %d, want %d", i, got[i], want[i])
		}
	}
	s := a.Stats()
	if s.TxPackets+s.TxDropped != total || s.TxPackets != uint64(len(got)) {
		t.Fatalf("stats %+v for %d frames", s, total)
	}
	if p.InUse() != 0 {
		t.Fatalf("%d frames lost", p.InUse())
	}
}

func TestPipeZeroAllocs(t *testing.T) {
	p := newPool(t, 256)
	a, z := Pipe(p, nil)
	b := frame.NewBatch(64)
	var seq uint64
	fill(t, p, b, 64, 60, &seq)
	allocs := testing.AllocsPerRun(100, func() {
		a.Send(b)
		z.Recv(b)
	})
	if allocs != 0 {
		t.Fatalf("Send+Recv: %v allocs", allocs)
	}
	b.Free()
}

// BenchmarkPipe moves batches of 64 frames from one end to the other; ns/frame is the cost per frame
// of Send + Recv.
func BenchmarkPipe(b *testing.B) {
	p := newPool(b, 256)
	a, z := Pipe(p, nil)
	fb := frame.NewBatch(64)
	var seq uint64
	fill(b, p, fb, 64, 60, &seq)
	b.ReportAllocs()
	m := benchutil.Start(b)
	n := 0
	for b.Loop() {
		a.Send(fb)
		n += len(fb.Frames)
		z.Recv(fb)
	}
	m.Report(b, max(n, 64*b.N))
}

// TestPipeWaitZeroAllocs: Wait allocates nothing, whether it returns because its timeout passed or
// because the peer sent a frame while it waited (with a timeout that cannot pass first).
func TestPipeWaitZeroAllocs(t *testing.T) {
	p := newPool(t, 64)
	a, z := Pipe(p, nil)
	sb, rb := frame.NewBatch(1), frame.NewBatch(1)
	kick, sent := make(chan struct{}), make(chan struct{})
	go func() { // sends one frame each time it is kicked, once z is (most likely) blocked in Wait
		for range kick {
			for !z.rx.waiting.Load() {
				runtime.Gosched()
			}
			time.Sleep(100 * time.Microsecond)
			if n, _ := p.Alloc(sb, 1); n == 1 {
				sb.Frames[0].Resize(60)
				a.Send(sb)
			}
			sent <- struct{}{}
		}
	}()
	defer close(kick)

	var errs, early int
	timeouts := testing.AllocsPerRun(50, func() {
		if z.Wait(int64(20*time.Microsecond)) != nil {
			errs++
		}
		if n, _ := z.Recv(rb); n != 0 { // nothing was sent: Wait returned on its timeout
			early++
			rb.Free()
		}
	})
	if errs != 0 || early != 0 {
		t.Fatalf("Wait on an idle link: %d errors, %d times a frame appeared", errs, early)
	}
	var received, wakeups int
	datas := testing.AllocsPerRun(50, func() {
		kick <- struct{}{}
		for got := 0; got == 0; { // a wake-up left over from the previous round may come first
			if z.Wait(int64(time.Hour)) != nil {
				errs++
				break
			}
			wakeups++
			got, _ = z.Recv(rb)
			received += got
			rb.Free()
		}
		<-sent
	})
	if errs != 0 || received != 51 {
		t.Fatalf("Wait for data: %d errors, %d frames received in %d wake-ups, want 51", errs, received, wakeups)
	}
	if timeouts != 0 || datas != 0 {
		t.Fatalf("Wait allocates: %v per timeout, %v per wake-up by data", timeouts, datas)
	}
	if s := a.Stats(); s.TxPackets != 51 || p.InUse() != 0 {
		t.Fatalf("stats %+v, %d buffers in use", s, p.InUse())
	}
}

// TestSendForeignZeroAllocs: Send copies frames of another arena into the port's pool without
// allocating, and they arrive.
func TestSendForeignZeroAllocs(t *testing.T) {
	p, other := newPool(t, 256), newPool(t, 256)
	a, z := Pipe(p, nil)
	b, rb := frame.NewBatch(32), frame.NewBatch(32)
	var seq uint64
	got := 0
	allocs := testing.AllocsPerRun(50, func() {
		fill(t, other, b, 32, 60, &seq)
		a.Send(b)
		n, _ := z.Recv(rb)
		got += n
		rb.Free()
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per batch", allocs)
	}
	if s := a.Stats(); got != 51*32 || s.TxCopied != 51*32 || other.InUse() != 0 || p.InUse() != 0 {
		t.Fatalf("received %d, copied %d, buffers out %d/%d", got, s.TxCopied, other.InUse(), p.InUse())
	}
}
