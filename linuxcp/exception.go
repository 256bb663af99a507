package linuxcp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ring"
	"github.com/wirespeed/wirespeed/vlan"
)

// Device is the kernel side of one router interface: a *TAP, or anything else that reads and
// writes whole untagged Ethernet frames the way TAP does (tests use an in-memory one).
//
// Read blocks until at least one frame is there, then reads what is queued up to len(bufs),
// setting sizes[i] to frame i's length; it returns an error once the device is closed. A frame
// that fills its buffer, or is longer, is taken as cut and dropped (Counters.DownOversize): the
// exception path's buffers are larger than any frame the interface's MTU allows. Write hands each frame to the kernel and returns how
// many it took. One goroutine calls Read and another Write; Close makes a blocked Read return.
type Device interface {
	Read(bufs [][]byte, sizes []int) (int, error)
	Write(frames [][]byte) (int, error)
	Close() error
}

// Config configures an exception path. Demux is required; the zero value of the other fields is
// a working default.
type Config struct {
	// Demux numbers the router's logical interfaces and builds their egress headers (tags).
	Demux *vlan.Demux
	// Devices are the kernel sides, indexed by interface ID; a nil entry (or an ID past the end)
	// is an interface without one, whose local frames are dropped (Counters.UpNoDevice).
	Devices []Device
	// Workers is the number of forwarding workers that call Worker(i).Up and Take (default 1).
	Workers int
	// Pool holds the frames towards the kernel: the copies Up makes, each out until its device's
	// writer has written it. nil: 2048 buffers of 9216 bytes plus 128 of headroom. The queues
	// towards one device hold up to Workers×Queue copies (its writer a Batch more), more than
	// the default pool: local traffic faster than the kernel drains empties the pool, and then
	// Up drops (Counters.UpNoBuffer). Its size is the burst of local frames the exception path
	// absorbs.
	Pool *frame.Pool
	// DownPool holds the frames from the kernel: each device's reader holds a Batch of them
	// while it waits for the kernel, and a frame it read is out until the worker has taken it
	// (Take) and its port has sent it. While the reader finds it empty, what the kernel sends is
	// dropped (Counters.DownNoBuffer). nil: a Batch per device plus 1024 buffers, of Pool's size
	// and headroom. It must hold at least a Batch per device, and be another pool than Pool:
	// each direction has its own buffers, so a flood of local traffic towards a slow kernel
	// leaves the kernel's frames (ARP replies, a routing daemon's keepalives) their buffers, and
	// a kernel sending faster than the workers take leaves Up its buffers.
	DownPool *frame.Pool
	// Queue is the depth of each queue between a worker and a device (default 1024): per device,
	// one queue from every worker towards the kernel and one from the kernel to the worker that
	// sends the device's frames.
	Queue int
	// Batch is the most frames a worker hands over, or a device goroutine reads or writes, at a
	// time (default 64).
	Batch int
}

// Counters are the exception path's totals. Towards the kernel, every frame handed to Up is
// counted once in Up or one of the Up drops, and every frame of Up once in Written, WriteErrors or
// Closed; from the kernel, every frame read is counted once in Down or one of the Down drops, and
// every frame of Down once in Taken or Closed.
type Counters struct {
	Up          uint64 // frames queued for a device's writer
	UpNoDevice  uint64 // dropped: their interface has no device
	UpNoBuffer  uint64 // dropped: the up pool (Config.Pool) was empty
	UpOversize  uint64 // dropped: larger than a buffer of the up pool
	UpMalformed uint64 // dropped: no L2 header (Frame.L3 below 14 or past the frame)
	UpQueueFull uint64 // dropped: the device's queue was full (the kernel side is slower than the traffic)
	Written     uint64 // written to their device
	WriteErrors uint64 // refused by their device (an interface that is down, a malformed frame)

	Read          uint64 // frames read from the devices
	Down          uint64 // queued for the worker that sends them
	DownNoBuffer  uint64 // dropped: read while the down pool (Config.DownPool) was empty
	DownOversize  uint64 // dropped: as large as a buffer of the down pool (maybe cut), or past the headroom a tag needs
	DownMalformed uint64 // dropped: shorter than an Ethernet header
	DownQueueFull uint64 // dropped: the worker's queue was full (it is not calling Take often enough)
	Taken         uint64 // handed to a worker by Take, to send
	ReadErrors    uint64 // read errors other than a closed device

	Closed uint64 // frames still queued either way when Close ran, released
}

// Exception is the exception path between the forwarding workers and the kernel: one Device per
// router interface. Frames the workers deliver locally go up the device of their interface, untagged;
// what the kernel sends on a device goes down to the interface's physical port, with the
// interface's tags (its vlan.Demux egress header).
//
// The workers never wait for the kernel: Up copies frames into the exception path's up pool and
// hands them to each device's writer goroutine through a ring (one per worker and device) without
// blocking, so a full queue is a counted drop; the device's reader goroutine reads what the kernel
// sends, in batches, into buffers of the down pool, tags it and queues it on a ring that the
// worker owning the device drains with Take. The two directions never share a buffer (see
// Config.Pool and Config.DownPool). Each device has exactly one reader and one writer goroutine,
// and every frame crosses a goroutine boundary in a burst, never alone.
//
// Concurrency: Worker(i)'s methods are for forwarding worker i's goroutine; Start, Close and
// Counters may be called from any goroutine. Close stops the device goroutines; call it after the
// workers stopped calling Up and Take.
type Exception struct {
	demux   *vlan.Demux
	pool    *frame.Pool // the down pool: the frames read from the devices
	mem     []byte
	upPool  *frame.Pool // the up pool: Up's copies
	upMem   []byte
	devs    []Device
	port    []uint16 // per interface: its physical port
	up      []*ring.FanIn[frame.Frame]
	down    []*ring.SPSC[frame.Frame]
	workers []*Worker
	batch   int

	c [numDevCounters]atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wgW    sync.WaitGroup // the writers
	wgR    sync.WaitGroup // the readers
	mu     sync.Mutex
	state  int // 0 new, 1 started, 2 closed
}

// Counters of the device goroutines (atomic, added once per batch).
const (
	dWritten = iota
	dWriteErrors
	dRead
	dDown
	dDownNoBuffer
	dDownOversize
	dDownMalformed
	dDownQueueFull
	dReadErrors
	dClosed
	numDevCounters
)

// Counters of a worker (plain increments, published by Worker.Flush).
const (
	wUp = iota
	wUpNoDevice
	wUpNoBuffer
	wUpOversize
	wUpMalformed
	wUpQueueFull
	wTaken
	numWorkerCounters
)

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("linuxcp: bad configuration")

// New returns an exception path over cfg.Devices; Start starts its device goroutines.
func New(cfg *Config) (*Exception, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Demux == nil {
		return nil, fmt.Errorf("%w: no demux", ErrConfig)
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 1 || c.Workers > 1024 {
		return nil, fmt.Errorf("%w: %d workers", ErrConfig, c.Workers)
	}
	if c.Queue == 0 {
		c.Queue = 1024
	}
	if c.Batch == 0 {
		c.Batch = 64
	}
	if c.Queue < 1 || c.Batch < 1 || c.Batch > 4096 {
		return nil, fmt.Errorf("%w: queue %d, batch %d", ErrConfig, c.Queue, c.Batch)
	}
	if c.Pool == nil {
		p, err := frame.NewPool(&frame.PoolConfig{Buffers: 2048, BufSize: 128 + 9216})
		if err != nil {
			return nil, err
		}
		c.Pool = p
	}
	ndev := 0
	for _, d := range c.Devices {
		if d != nil {
			ndev++
		}
	}
	if c.DownPool == nil {
		p, err := frame.NewPool(&frame.PoolConfig{Buffers: ndev*c.Batch + 1024, BufSize: c.Pool.BufSize(), Headroom: c.Pool.Headroom()})
		if err != nil {
			return nil, err
		}
		c.DownPool = p
	}
	for _, p := range []struct {
		name string
		pool *frame.Pool
	}{{"pool", c.Pool}, {"down pool", c.DownPool}} {
		if p.pool.Headroom() < 2*vlan.HeaderLen || p.pool.BufSize()-p.pool.Headroom() < 64 {
			return nil, fmt.Errorf("%w: %s buffers of %d bytes with %d of headroom: want at least %d of headroom (two tags) and 64 after it",
				ErrConfig, p.name, p.pool.BufSize(), p.pool.Headroom(), 2*vlan.HeaderLen)
		}
	}
	if c.DownPool == c.Pool {
		return nil, fmt.Errorf("%w: the down pool is the pool: each direction needs its own", ErrConfig)
	}
	if c.DownPool.Buffers() < ndev*c.Batch {
		return nil, fmt.Errorf("%w: down pool of %d buffers for %d devices: want at least a batch (%d) per device",
			ErrConfig, c.DownPool.Buffers(), ndev, c.Batch)
	}
	n := len(c.Devices)
	x := &Exception{demux: c.Demux, pool: c.DownPool, mem: c.DownPool.Mem(), upPool: c.Pool, upMem: c.Pool.Mem(),
		devs: make([]Device, n), port: make([]uint16, n),
		up: make([]*ring.FanIn[frame.Frame], n), down: make([]*ring.SPSC[frame.Frame], n), batch: c.Batch}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	for i, d := range c.Devices {
		if d == nil {
			continue
		}
		rw, err := c.Demux.Rewrite(uint16(i), frame.MAC{}, frame.MAC{}, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: device for interface %d: %v", ErrConfig, i, err)
		}
		if int(rw.Port()) >= c.Demux.Ports() {
			return nil, fmt.Errorf("%w: interface %d sends on port %d of %d", ErrConfig, i, rw.Port(), c.Demux.Ports())
		}
		x.devs[i], x.port[i] = d, rw.Port()
		if x.up[i], err = ring.NewFanIn[frame.Frame](c.Workers, c.Queue, nil); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if x.down[i], err = ring.New[frame.Frame](c.Queue, nil); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	for id := range c.Workers {
		w := &Worker{x: x, id: id, stage: make([][]frame.Frame, n), touch: make([]uint16, 0, n), alloc: frame.NewBatch(c.Batch),
			down: make([][]*ring.SPSC[frame.Frame], c.Demux.Ports())}
		for i := range x.devs {
			if x.devs[i] == nil {
				continue
			}
			w.stage[i] = make([]frame.Frame, 0, c.Batch)
			if i%c.Workers == id {
				w.down[x.port[i]] = append(w.down[x.port[i]], x.down[i])
			}
		}
		x.workers = append(x.workers, w)
	}
	return x, nil
}

// Pool returns the exception path's down pool (Config.DownPool): the arena of the frames Take
// hands out.
func (x *Exception) Pool() *frame.Pool { return x.pool }

// Worker returns forwarding worker i's side of the exception path (0 <= i < Config.Workers).
func (x *Exception) Worker(i int) *Worker { return x.workers[i] }

// Owner returns the worker that takes the frames the kernel sends on interface iface's device.
func (x *Exception) Owner(iface uint16) int { return int(iface) % len(x.workers) }

// Start starts a reader and a writer goroutine per device. It does nothing after the first call.
func (x *Exception) Start() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.state != 0 {
		return
	}
	x.state = 1
	for i, d := range x.devs {
		if d == nil {
			continue
		}
		x.wgR.Add(1)
		x.wgW.Add(1)
		go x.readLoop(i)
		go x.writeLoop(i)
	}
}

// Close stops the writers (each finishes the burst it holds), closes the devices, which stops the
// readers, and releases every frame still queued (Counters.Closed). Call it once the workers have
// stopped calling Up and Take.
func (x *Exception) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.state == 2 {
		return nil
	}
	x.state = 2
	x.cancel()
	// A writer waiting for room in a device that stopped taking frames would wait forever: a
	// device with a write deadline (a TAP) gets one now, so the write returns and the writer
	// stops; the frames it held are counted as write errors.
	for _, d := range x.devs {
		if dl, ok := d.(interface{ SetWriteDeadline(time.Time) error }); ok {
			dl.SetWriteDeadline(time.Now())
		}
	}
	x.wgW.Wait() // the writers finish the burst they hold, on open devices
	var first error
	for _, d := range x.devs {
		if d != nil {
			if err := d.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	x.wgR.Wait()
	buf := make([]frame.Frame, x.batch)
	for i := range x.devs {
		if x.devs[i] == nil {
			continue
		}
		for {
			u := x.up[i].DequeueBurst(buf)
			x.upPool.Release(buf[:u])
			d := x.down[i].DequeueBurst(buf)
			x.pool.Release(buf[:d])
			if u+d == 0 {
				break
			}
			x.c[dClosed].Add(uint64(u + d))
		}
	}
	return first
}

// Counters returns the totals: the device goroutines' and every worker's last Flush.
func (x *Exception) Counters() Counters {
	var w [numWorkerCounters]uint64
	for _, wk := range x.workers {
		for i := range w {
			w[i] += wk.pub[i].Load()
		}
	}
	d := func(i int) uint64 { return x.c[i].Load() }
	return Counters{
		Up: w[wUp], UpNoDevice: w[wUpNoDevice], UpNoBuffer: w[wUpNoBuffer], UpOversize: w[wUpOversize],
		UpMalformed: w[wUpMalformed], UpQueueFull: w[wUpQueueFull], Written: d(dWritten), WriteErrors: d(dWriteErrors),
		Read: d(dRead), Down: d(dDown), DownNoBuffer: d(dDownNoBuffer), DownOversize: d(dDownOversize),
		DownMalformed: d(dDownMalformed), DownQueueFull: d(dDownQueueFull), Taken: w[wTaken], ReadErrors: d(dReadErrors),
		Closed: d(dClosed),
	}
}

// writeLoop is device i's writer: it drains the workers' queues towards it in bursts and writes
// each burst to the device.
func (x *Exception) writeLoop(i int) {
	defer x.wgW.Done()
	in, dev := x.up[i], x.devs[i]
	fr := make([]frame.Frame, x.batch)
	bufs := make([][]byte, x.batch)
	for {
		n, err := in.DequeueBurstWait(x.ctx, fr)
		if n > 0 {
			for k := range n {
				bufs[k] = fr[k].Data(x.upMem)
			}
			w, _ := dev.Write(bufs[:n])
			w = min(max(w, 0), n)
			x.c[dWritten].Add(uint64(w))
			if w < n {
				x.c[dWriteErrors].Add(uint64(n - w))
			}
			x.upPool.Release(fr[:n])
			clear(bufs[:n])
		}
		if err != nil {
			return
		}
	}
}

// readLoop is device i's reader: it reads what the kernel sends in batches into buffers of the
// down pool, lays the interface's egress header over each frame and queues the batch for the worker
// that owns the device.
func (x *Exception) readLoop(i int) {
	defer x.wgR.Done()
	dev, out := x.devs[i], x.down[i]
	vw := x.demux.NewWorker()
	b := frame.NewBatch(x.batch)
	bufs := make([][]byte, x.batch)
	sizes := make([]int, x.batch)
	scratch := make([]byte, x.pool.BufSize())
	for {
		b.Frames = b.Frames[:0]
		got, _ := x.pool.Alloc(b, x.batch)
		var n int
		var err error
		if got == 0 {
			// No buffer: read (and drop) one frame at a time so the device does not back up.
			bufs[0] = scratch
			n, err = dev.Read(bufs[:1], sizes)
			if n > 0 {
				x.c[dRead].Add(uint64(n))
				x.c[dDownNoBuffer].Add(uint64(n))
			}
		} else {
			for k := range got {
				r := b.Frames[k].Room(x.mem)
				bufs[k] = r[:cap(r)]
			}
			n, err = dev.Read(bufs[:got], sizes)
			n = min(max(n, 0), got)
			kept := x.prepare(vw, b, i, n, sizes)
			q := out.EnqueueBurst(b.Frames[:kept])
			x.c[dRead].Add(uint64(n))
			x.c[dDown].Add(uint64(q))
			if kept > q {
				x.c[dDownQueueFull].Add(uint64(kept - q))
			}
			x.pool.Release(b.Frames[q:got])
			vw.Flush()
		}
		if err != nil {
			if x.ctx.Err() != nil {
				return
			}
			x.c[dReadErrors].Add(1)
			time.Sleep(time.Millisecond) // an error that repeats must not spin a core
		}
	}
}

// prepare turns the first n frames of b, read from interface ifc's device with lengths sizes, into
// frames for its physical port: the ones kept move to the front of b and their count is returned;
// the others (and the buffers Read did not fill) stay behind them.
func (x *Exception) prepare(vw *vlan.Worker, b *frame.Batch, ifc, n int, sizes []int) int {
	k := 0
	for j := range n {
		f := &b.Frames[j]
		m := sizes[j]
		room := int(f.Len) + int(f.Tail)
		switch {
		case m >= room: // filled its buffer: cut, or too big to tell
			x.c[dDownOversize].Add(1)
			continue
		case m < frame.EtherLen:
			x.c[dDownMalformed].Add(1)
			continue
		}
		f.Resize(m)
		f.L3 = frame.EtherLen
		d := f.Data(x.mem)
		rw, err := x.demux.Rewrite(uint16(ifc), frame.MAC(d[0:6]), frame.MAC(d[6:12]), binary.BigEndian.Uint16(d[12:14]))
		if err != nil || vw.Apply(b, j, &rw) != nil {
			x.c[dDownOversize].Add(1)
			continue
		}
		f.Port = x.port[ifc]
		if j != k {
			b.Frames[j], b.Frames[k] = b.Frames[k], b.Frames[j]
		}
		k++
	}
	return k
}

// Worker is one forwarding worker's side of the exception path. Its methods are for that worker's
// goroutine only, and allocate nothing.
type Worker struct {
	x     *Exception
	id    int
	stage [][]frame.Frame // per interface: copies waiting to be queued for its device
	touch []uint16        // interfaces with staged frames
	alloc *frame.Batch
	down  [][]*ring.SPSC[frame.Frame] // per physical port: the queues Take drains
	cnt   [numWorkerCounters]uint64
	pub   [numWorkerCounters]atomic.Uint64
}

// Up sends the frames of b up to the kernel, each on the device of its interface (Frame.Port, as
// the forwarding stage's local batch has it: the logical interface, Frame.L3 the network header's
// offset, the L2 header as received). Each frame is copied without its tags into a buffer of the
// exception path's up pool and queued for the device's writer; a full queue, an empty pool, a frame
// too large or an interface without a device is a counted drop, never a wait. b is freed (its
// frames released to their owner) and empty afterwards.
func (w *Worker) Up(b *frame.Batch) {
	for start := 0; start < len(b.Frames); start += w.x.batch {
		w.upChunk(b.Frames[start:min(start+w.x.batch, len(b.Frames))], b.Mem)
	}
	b.Free()
}

func (w *Worker) upChunk(in []frame.Frame, mem []byte) {
	x := w.x
	a := w.alloc
	a.Frames = a.Frames[:0]
	got, _ := x.upPool.Alloc(a, len(in))
	j := 0
	for i := range in {
		f := &in[i]
		ifc := int(f.Port)
		if ifc >= len(x.devs) || x.devs[ifc] == nil {
			w.cnt[wUpNoDevice]++
			continue
		}
		d := f.Data(mem)
		l3 := int(f.L3)
		if l3 < frame.EtherLen || l3 > len(d) {
			w.cnt[wUpMalformed]++
			continue
		}
		if j >= got {
			w.cnt[wUpNoBuffer]++
			continue
		}
		g := &a.Frames[j]
		size := frame.EtherLen + len(d) - l3
		if size > int(g.Len)+int(g.Tail) {
			w.cnt[wUpOversize]++
			continue
		}
		g.Resize(size)
		o := g.Data(x.upMem)
		copy(o[:12], d[:12])
		copy(o[12:], d[l3-2:])
		g.Port, g.L3 = uint16(ifc), frame.EtherLen
		st := w.stage[ifc]
		if len(st) == 0 {
			w.touch = append(w.touch, uint16(ifc))
		}
		w.stage[ifc] = append(st, *g)
		j++
	}
	if j < got {
		x.upPool.Release(a.Frames[j:got])
	}
	a.Frames = a.Frames[:0]
	for _, ifc := range w.touch {
		st := w.stage[ifc]
		q := x.up[ifc].Producer(w.id).EnqueueBurst(st)
		w.cnt[wUp] += uint64(q)
		if q < len(st) {
			w.cnt[wUpQueueFull] += uint64(len(st) - q)
			x.upPool.Release(st[q:])
		}
		w.stage[ifc] = st[:0]
	}
	w.touch = w.touch[:0]
}

// Take moves up to b.Space() frames that the kernel sent for physical port `port` (on the devices
// of the interfaces this worker owns, see Exception.Owner) into b and returns how many: they are
// ready to send on the port (tagged for their interface, Frame.Out the interface). b must be empty
// or hold frames of the exception path's down pool (Pool); it becomes a batch of that pool.
func (w *Worker) Take(port uint16, b *frame.Batch) int {
	if int(port) >= len(w.down) {
		return 0
	}
	n := 0
	for _, r := range w.down[port] {
		l := len(b.Frames)
		if l == cap(b.Frames) {
			break
		}
		k := r.DequeueBurst(b.Frames[l:cap(b.Frames)])
		b.Frames = b.Frames[:l+k]
		n += k
	}
	if n > 0 {
		b.Mem, b.Owner = w.x.mem, w.x.pool
		w.cnt[wTaken] += uint64(n)
	}
	return n
}

// Flush publishes the worker's counters for Exception.Counters. Call it from the worker's goroutine
// every few milliseconds.
func (w *Worker) Flush() {
	for i := range w.cnt {
		w.pub[i].Store(w.cnt[i])
	}
}
