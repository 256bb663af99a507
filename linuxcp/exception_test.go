package linuxcp

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// memDev is an in-memory Device: what the test puts on in the "kernel" sends, what the exception
// path writes is kept in out.
type memDev struct {
	in     chan []byte
	mu     sync.Mutex
	out    [][]byte
	fail   bool // refuse every write
	closed chan struct{}
	once   sync.Once
}

var errDevClosed = errors.New("memDev closed")

func newMemDev() *memDev { return &memDev{in: make(chan []byte, 256), closed: make(chan struct{})} }

func (d *memDev) Read(bufs [][]byte, sizes []int) (int, error) {
	take := func(k int, f []byte) {
		copy(bufs[k], f)
		sizes[k] = len(f)
	}
	select {
	case f := <-d.in:
		take(0, f)
	case <-d.closed:
		return 0, errDevClosed
	}
	k := 1
	for ; k < len(bufs); k++ {
		select {
		case f := <-d.in:
			take(k, f)
		default:
			return k, nil
		}
	}
	return k, nil
}

func (d *memDev) Write(frames [][]byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return 0, errors.New("refused")
	}
	for _, f := range frames {
		d.out = append(d.out, append([]byte(nil), f...))
	}
	return len(frames), nil
}

func (d *memDev) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

func (d *memDev) written() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.out...)
}

var (
	rtrMAC  = frame.MAC{0x02, 0x77, 0x73, 0, 0, 1}
	hostMAC = frame.MAC{0x02, 0x68, 0, 0, 0, 2}
	bcast   = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// The test router has one port: interface 0 its untagged traffic (10.0.1.1/24), interface 1
// VLAN 100 on it (10.0.100.1/24).
func testRouter(t testing.TB, pool *frame.Pool) (*vlan.Demux, *fwd.Router) {
	t.Helper()
	d := testDemux(t)
	r, err := fwd.New(d, &fwd.Config{Pool: pool, NoEcho: true, Ifaces: []fwd.Iface{
		{Name: "untagged", MAC: rtrMAC, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}},
		{Name: "vlan100", MAC: rtrMAC, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.100.1/24")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return d, r
}

// testDemux is the test router's demux.
func testDemux(t testing.TB) *vlan.Demux {
	t.Helper()
	d := vlan.NewDemux(1, vlan.Parser{})
	if err := d.Add(vlan.Interface{ID: 0, Port: 0}); err != nil {
		t.Fatal(err)
	}
	if err := d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(100)}); err != nil {
		t.Fatal(err)
	}
	return d
}

// serialize builds a frame from gopacket layers.
func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// arpRequest is an ARP request from the host for target, tagged with vid (0: untagged).
func arpRequest(t testing.TB, vid uint16, sender, target netip.Addr) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(hostMAC[:]), DstMAC: net.HardwareAddr(bcast[:]), EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: hostMAC[:], SourceProtAddress: sender.AsSlice(),
		DstHwAddress: make([]byte, 6), DstProtAddress: target.AsSlice()}
	if vid == 0 {
		return serialize(t, eth, arp)
	}
	eth.EthernetType = layers.EthernetTypeDot1Q
	return serialize(t, eth, &layers.Dot1Q{VLANIdentifier: vid, Type: layers.EthernetTypeARP}, arp)
}

// sendFrames puts frames on a port.
func sendFrames(t testing.TB, p xmit.Port, pool *frame.Pool, frames ...[]byte) {
	t.Helper()
	b := frame.NewBatch(len(frames))
	if n, _ := pool.Alloc(b, len(frames)); n != len(frames) {
		t.Fatal("pool empty")
	}
	for i, f := range frames {
		b.Frames[i].Resize(len(f))
		copy(b.Bytes(i), f)
	}
	if n, err := p.Send(b); n != len(frames) || err != nil {
		t.Fatalf("send: %d of %d, %v", n, len(frames), err)
	}
}

// recvFrames takes every frame waiting on p, copied.
func recvFrames(t testing.TB, p xmit.Port) [][]byte {
	t.Helper()
	var out [][]byte
	b := frame.NewBatch(64)
	for {
		n, err := p.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for i := range b.Frames {
			out = append(out, append([]byte(nil), b.Bytes(i)...))
		}
		b.Free()
	}
}

// TestExceptionVLANUpDown: ARP requests from a host, untagged and on VLAN 100, that the forwarding
// stage delivers locally go up the device of their interface without their tag; what the kernel
// sends on the VLAN interface's device goes out the port with tag 100, what it sends on the
// untagged one without a tag; every frame is counted and no buffer is lost.
func TestExceptionVLANUpDown(t *testing.T) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	if err != nil {
		t.Fatal(err)
	}
	demux, r := testRouter(t, pool)
	rtr, host := xmit.Pipe(pool, nil)
	devs := []*memDev{newMemDev(), newMemDev()}
	x, err := New(&Config{Demux: demux, Devices: []Device{devs[0], devs[1]}, Pool: pool, Queue: 16, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	fw, xw := r.NewWorker(16), x.Worker(0)

	untagged := arpRequest(t, 0, netip.MustParseAddr("10.0.1.2"), netip.MustParseAddr("10.0.1.1"))
	tagged := arpRequest(t, 100, netip.MustParseAddr("10.0.100.2"), netip.MustParseAddr("10.0.100.1"))
	sendFrames(t, host, pool, untagged, tagged)
	in := frame.NewBatch(16)
	if n, _ := rtr.Recv(in); n != 2 {
		t.Fatalf("router received %d frames, want 2", n)
	}
	out := fw.Process(0, in)
	if len(out.Local.Frames) != 2 {
		t.Fatalf("%d local frames, want 2", len(out.Local.Frames))
	}
	xw.Up(out.Local)
	if len(out.Local.Frames) != 0 {
		t.Fatal("Up left frames in its batch")
	}

	// The kernel's answers: an ARP reply on each interface, untagged as a TAP carries them.
	reply := func(sender, target string) []byte {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(rtrMAC[:]), DstMAC: net.HardwareAddr(hostMAC[:]), EthernetType: layers.EthernetTypeARP}
		return serialize(t, eth, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6,
			ProtAddressSize: 4, Operation: layers.ARPReply, SourceHwAddress: rtrMAC[:], SourceProtAddress: netip.MustParseAddr(sender).AsSlice(),
			DstHwAddress: hostMAC[:], DstProtAddress: netip.MustParseAddr(target).AsSlice()})
	}
	devs[0].in <- reply("10.0.1.1", "10.0.1.2")
	devs[1].in <- reply("10.0.100.1", "10.0.100.2")

	var got [][]byte
	deadline := time.Now().Add(10 * time.Second)
	for (len(got) < 2 || len(devs[0].written())+len(devs[1].written()) < 2) && time.Now().Before(deadline) {
		b := frame.NewBatch(16)
		if xw.Take(0, b) > 0 {
			if _, err := rtr.Send(b); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, recvFrames(t, host)...)
		time.Sleep(time.Millisecond)
	}
	xw.Flush()

	// Up: each device got its frame, untagged, the bytes after the tag unchanged.
	w0, w1 := devs[0].written(), devs[1].written()
	if len(w0) != 1 || !bytes.Equal(w0[0], untagged) {
		t.Errorf("untagged interface's device got %x, want %x", w0, untagged)
	}
	wantUp := append(append([]byte(nil), tagged[:12]...), tagged[16:]...)
	if len(w1) != 1 || !bytes.Equal(w1[0], wantUp) {
		t.Errorf("VLAN interface's device got %x, want %x (the tag removed)", w1, wantUp)
	}

	// Down: the reply on VLAN 100's device left tagged, the other untagged.
	var vids []int
	for _, f := range got {
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		vid := 0
		if q, ok := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q); ok {
			vid = int(q.VLANIdentifier)
		}
		a, ok := p.Layer(layers.LayerTypeARP).(*layers.ARP)
		if !ok || a.Operation != layers.ARPReply {
			t.Errorf("host got %x, not an ARP reply", f)
			continue
		}
		if want := map[int]string{0: "10.0.1.1", 100: "10.0.100.1"}[vid]; net.IP(a.SourceProtAddress).String() != want {
			t.Errorf("ARP reply for %v arrived with VLAN %d", net.IP(a.SourceProtAddress), vid)
		}
		vids = append(vids, vid)
	}
	if len(vids) != 2 || vids[0]+vids[1] != 100 {
		t.Errorf("host got replies on VLANs %v, want 0 and 100", vids)
	}

	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	c := x.Counters()
	if c.Up != 2 || c.Written != 2 || c.Read != 2 || c.Down != 2 || c.Taken != 2 {
		t.Errorf("counters %+v: want 2 up, written, read, down and taken", c)
	}
	if s := demux.Stats(1); s.TxPackets != 1 {
		t.Errorf("VLAN interface counted %d frames sent, want the kernel's 1", s.TxPackets)
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}

// localBatch fills b with n classified frames for interface ifc, as the stage's Output.Local holds
// them: an in-band tag for interface 1, Frame.L3 after it.
func localBatch(t testing.TB, pool *frame.Pool, b *frame.Batch, n int, ifc uint16) {
	t.Helper()
	f := arpRequest(t, 100*uint16(ifc), netip.MustParseAddr("10.0.100.2"), netip.MustParseAddr("10.0.100.1"))
	if got, _ := pool.Alloc(b, n); got != n {
		t.Fatalf("pool: %d of %d buffers", got, n)
	}
	for i := range b.Frames {
		b.Frames[i].Resize(len(f))
		copy(b.Bytes(i), f)
		b.Frames[i].Port = ifc
		b.Frames[i].L3 = uint16(frame.EtherLen + 4*int(ifc))
	}
}

// TestExceptionQueueFull: a device whose writer does not keep up (here: not started) fills its
// queue, and then Up drops and counts what does not fit, at once, without waiting; an interface
// without a device, an empty pool and a malformed frame are counted drops too; once the writer
// runs, the queued frames reach the device.
func TestExceptionQueueFull(t *testing.T) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	if err != nil {
		t.Fatal(err)
	}
	demux, _ := testRouter(t, pool)
	dev := newMemDev()
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, dev}, Pool: pool, Queue: 4, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	w := x.Worker(0)
	b := frame.NewBatch(10)
	localBatch(t, pool, b, 10, 1)
	done := make(chan struct{})
	go func() { w.Up(b); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Up blocked on a full queue")
	}
	localBatch(t, pool, b, 3, 0) // interface 0 has no device
	w.Up(b)
	localBatch(t, pool, b, 1, 1)
	b.Frames[0].L3 = 200 // past the frame
	w.Up(b)
	w.Flush()
	c := x.Counters()
	if c.Up != 4 || c.UpQueueFull != 6 || c.UpNoDevice != 3 || c.UpMalformed != 1 {
		t.Errorf("counters %+v: want 4 queued, 6 dropped on a full queue, 3 without a device, 1 malformed", c)
	}
	if n := pool.InUse(); n != 4 {
		t.Errorf("%d buffers out, want the 4 queued", n)
	}

	// An empty pool: every frame is a counted drop.
	hold := frame.NewBatch(64)
	pool.Alloc(hold, 64)
	spare := frame.NewBatch(2)
	localBatch(t, mustPool(t), spare, 2, 1)
	w.Up(spare)
	w.Flush()
	if c := x.Counters(); c.UpNoBuffer != 2 {
		t.Errorf("with the pool empty: %d counted as no buffer, want 2", c.UpNoBuffer)
	}
	hold.Free()

	x.Start()
	deadline := time.Now().Add(10 * time.Second)
	for len(dev.written()) < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	x.Close()
	c = x.Counters()
	if c.Written != 4 || len(dev.written()) != 4 {
		t.Errorf("written %d (device has %d), want 4", c.Written, len(dev.written()))
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}

func mustPool(t testing.TB) *frame.Pool {
	p, err := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExceptionDownDrops: frames the kernel sends that are too short, or arrive while the worker's
// queue is full, are counted drops; a device that refuses writes counts them as write errors; Close
// releases what is still queued.
func TestExceptionDownDrops(t *testing.T) {
	pool := mustPool(t)
	demux, _ := testRouter(t, pool)
	dev := newMemDev()
	dev.fail = true
	x, err := New(&Config{Demux: demux, Devices: []Device{dev}, Pool: pool, Queue: 2, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	arp := arpRequest(t, 0, netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.1.2"))
	dev.in <- arp[:10]
	for range 5 {
		dev.in <- arp
	}
	b := frame.NewBatch(4)
	localBatch(t, pool, b, 2, 0)
	x.Worker(0).Up(b)
	x.Worker(0).Flush()
	deadline := time.Now().Add(10 * time.Second)
	for c := x.Counters(); (c.Read < 6 || c.WriteErrors < 2) && time.Now().Before(deadline); c = x.Counters() {
		time.Sleep(time.Millisecond)
	}
	x.Close()
	c := x.Counters()
	if c.Read != 6 || c.DownMalformed != 1 || c.Down != 2 || c.DownQueueFull != 3 || c.Closed != 2 {
		t.Errorf("counters %+v: want 6 read, 1 malformed, 2 queued, 3 dropped on a full queue, 2 released by Close", c)
	}
	if c.Up != 2 || c.WriteErrors != 2 || c.Written != 0 {
		t.Errorf("counters %+v: want 2 up, both write errors", c)
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}

// TestExceptionWorkerAllocs: the worker's side (Up of a batch of classified frames, Take of the
// kernel's frames) allocates nothing, and moves every frame.
func TestExceptionWorkerAllocs(t *testing.T) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	if err != nil {
		t.Fatal(err)
	}
	demux, _ := testRouter(t, pool)
	x, err := New(&Config{Demux: demux, Devices: []Device{newMemDev(), newMemDev()}, Pool: pool, Queue: 64, Batch: 32})
	if err != nil {
		t.Fatal(err)
	}
	w := x.Worker(0)
	in := frame.NewBatch(32)
	localBatch(t, pool, in, 32, 1)
	template := append([]frame.Frame(nil), in.Frames...)
	in.Frames = in.Frames[:0]
	drain := make([]frame.Frame, 64)
	kernel := frame.NewBatch(16)
	take := frame.NewBatch(32)
	var moved, taken int
	allocs := testing.AllocsPerRun(100, func() {
		// Up: the frames go to device 1's queue as copies (the originals' buffers are reused as
		// they are, so take them out of the pool's count: Up releases them).
		in.Frames = append(in.Frames[:0], template...)
		in.Mem, in.Owner = pool.Mem(), nopOwner{}
		w.Up(in)
		n := x.up[1].DequeueBurst(drain)
		moved += n
		pool.Release(drain[:n])
		// Down: frames of the down pool as the reader queues them, taken by the worker.
		x.Pool().Alloc(kernel, 16)
		for i := range kernel.Frames {
			kernel.Frames[i].Resize(60)
		}
		x.down[1].EnqueueBurst(kernel.Frames)
		kernel.Frames = kernel.Frames[:0]
		taken += w.Take(0, take)
		take.Free()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
	if runs := 101; moved != 32*runs || taken != 16*runs {
		t.Errorf("moved %d up and %d down, want %d and %d", moved, taken, 32*runs, 16*runs)
	}
	in.Frames = append(in.Frames[:0], template...)
	pool.Release(in.Frames)
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers out", n, m)
	}
}

// nopOwner keeps the frames (the test reuses their buffers).
type nopOwner struct{}

func (nopOwner) Release([]frame.Frame) {}

// TestExceptionConfig: bad configurations are errors wrapping ErrConfig.
func TestExceptionConfig(t *testing.T) {
	pool := mustPool(t)
	demux, _ := testRouter(t, pool)
	small, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4, Headroom: 4})
	few, _ := frame.NewPool(&frame.PoolConfig{Buffers: 15})
	for _, c := range []*Config{
		nil,
		{Demux: demux, Devices: []Device{nil, nil, newMemDev()}},
		{Demux: demux, Workers: -1},
		{Demux: demux, Pool: small},
		{Demux: demux, Pool: pool, DownPool: small},
		{Demux: demux, Pool: pool, DownPool: pool}, // one pool both ways
		{Demux: demux, Devices: []Device{newMemDev(), newMemDev()}, Pool: pool, DownPool: few, Batch: 8}, // under a batch per device
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want ErrConfig", c, err)
		}
	}
}

// TestExceptionWorkers: two workers hand frames up to one device at once (a queue each, one
// writer); the frames the kernel sends on interface 1's device are taken only by its owner,
// worker 1, on the interface's port.
func TestExceptionWorkers(t *testing.T) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	if err != nil {
		t.Fatal(err)
	}
	demux, _ := testRouter(t, pool)
	dev := newMemDev()
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, dev}, Workers: 2, Pool: pool, Queue: 512, Batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	if x.Owner(1) != 1 {
		t.Fatalf("interface 1 owned by worker %d", x.Owner(1))
	}
	x.Start()
	var wg sync.WaitGroup
	for id := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := x.Worker(id)
			b := frame.NewBatch(16)
			for range 10 {
				localBatch(t, pool, b, 16, 1)
				w.Up(b)
			}
			w.Flush()
		}()
	}
	wg.Wait()
	arp := arpRequest(t, 0, netip.MustParseAddr("10.0.100.1"), netip.MustParseAddr("10.0.100.2"))
	for range 5 {
		dev.in <- arp
	}
	deadline := time.Now().Add(10 * time.Second)
	taken := 0
	b := frame.NewBatch(16)
	for (taken < 5 || len(dev.written()) < 320) && time.Now().Before(deadline) {
		if x.Worker(0).Take(0, b) != 0 {
			t.Fatal("worker 0 took frames of an interface it does not own")
		}
		taken += x.Worker(1).Take(0, b)
		for i := range b.Frames {
			if d := b.Bytes(i); len(d) < 18 || d[12] != 0x81 || d[13] != 0 || d[15] != 100 {
				t.Errorf("down frame not tagged with VLAN 100: %x", d)
			}
		}
		b.Free()
		time.Sleep(time.Millisecond)
	}
	x.Worker(1).Flush()
	x.Close()
	if c := x.Counters(); c.Up != 320 || c.Written != 320 || c.Taken != 5 {
		t.Errorf("counters %+v: want 320 up and written, 5 taken", c)
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}

// BenchmarkWorkerUp: a worker hands batches of 32 local frames (tagged, for interface 1) up; the
// benchmark drains the device's queue itself (no goroutine), so the figure is the worker's side.
func BenchmarkWorkerUp(b *testing.B) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	if err != nil {
		b.Fatal(err)
	}
	demux, _ := testRouter(b, pool)
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, newMemDev()}, Pool: pool, Queue: 64, Batch: 32})
	if err != nil {
		b.Fatal(err)
	}
	w := x.Worker(0)
	in := frame.NewBatch(32)
	localBatch(b, pool, in, 32, 1)
	template := append([]frame.Frame(nil), in.Frames...)
	drain := make([]frame.Frame, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		in.Frames = append(in.Frames[:0], template...)
		in.Mem, in.Owner = pool.Mem(), nopOwner{}
		w.Up(in)
		n := x.up[1].DequeueBurst(drain)
		pool.Release(drain[:n])
	}
	b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "frames/s")
}

// stuckDev is a device the kernel stopped draining: a Write waits until its write deadline is set.
type stuckDev struct {
	*memDev
	entered  chan struct{}
	deadline chan struct{}
	once     sync.Once
}

func (d *stuckDev) Write(frames [][]byte) (int, error) {
	d.entered <- struct{}{}
	<-d.deadline
	return 0, errors.New("write deadline exceeded")
}

func (d *stuckDev) SetWriteDeadline(time.Time) error {
	d.once.Do(func() { close(d.deadline) })
	return nil
}

// TestExceptionCloseStuckWriter: Close returns even while a writer waits for room in a device that
// takes no more frames (it sets the device's write deadline); the frames the writer held are write
// errors, and no buffer is lost.
func TestExceptionCloseStuckWriter(t *testing.T) {
	pool := mustPool(t)
	demux, _ := testRouter(t, pool)
	dev := &stuckDev{memDev: newMemDev(), entered: make(chan struct{}, 1), deadline: make(chan struct{})}
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, dev}, Pool: pool, Queue: 16, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	w := x.Worker(0)
	b := frame.NewBatch(4)
	localBatch(t, pool, b, 4, 1)
	w.Up(b)
	w.Flush()
	select {
	case <-dev.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer never wrote")
	}
	done := make(chan struct{})
	go func() { x.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close hangs on a writer waiting for a device that takes nothing")
	}
	if c := x.Counters(); c.WriteErrors == 0 || c.Written != 0 {
		t.Errorf("counters %+v: want the held frames as write errors", c)
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}

// blockDev is a device whose kernel side takes no frames until release is closed: a Write waits
// for it (or for the write deadline Close sets), then keeps the frames.
type blockDev struct {
	*memDev
	entered chan struct{} // one send per Write
	release chan struct{}
	once    sync.Once
}

func newBlockDev() *blockDev {
	return &blockDev{memDev: newMemDev(), entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (d *blockDev) Write(frames [][]byte) (int, error) {
	select {
	case d.entered <- struct{}{}:
	default:
	}
	<-d.release
	return d.memDev.Write(frames)
}

func (d *blockDev) unblock() { d.once.Do(func() { close(d.release) }) }

func (d *blockDev) SetWriteDeadline(time.Time) error { d.unblock(); return nil }

// TestExceptionUpFloodKeepsDown: local traffic towards a kernel that takes nothing fills the up
// direction (the writer waits in Write, the queue holds the rest) until Up drops and counts the
// rest as no buffer; what the kernel sends meanwhile (its ARP, a routing daemon's keepalives)
// still gets buffers, comes down and is taken, none of it dropped. Once the kernel drains, every
// queued frame is written, and every frame is counted once.
func TestExceptionUpFloodKeepsDown(t *testing.T) {
	pool := mustPool(t) // the up direction's 64 buffers
	src := mustPool(t)  // the stage's frames, handed to Up
	demux, _ := testRouter(t, src)
	dev := newBlockDev()
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, dev}, Pool: pool, Queue: 128, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	w := x.Worker(0)
	b := frame.NewBatch(8)
	localBatch(t, src, b, 8, 1)
	w.Up(b)
	select {
	case <-dev.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer never wrote")
	}
	const flood = 25 * 8
	for range flood / 8 {
		localBatch(t, src, b, 8, 1)
		w.Up(b)
	}
	w.Flush()
	c := x.Counters()
	if c.Up != 64 || c.UpNoBuffer != flood+8-64 || c.UpQueueFull != 0 {
		t.Errorf("counters %+v: want the 64 buffers of the pool up, the other %d counted as no buffer", c, flood+8-64)
	}

	// The kernel sends (its own ARP request) while the up direction is full.
	reply := arpRequest(t, 0, netip.MustParseAddr("10.0.100.1"), netip.MustParseAddr("10.0.100.2"))
	const kernel = 40
	for range kernel {
		dev.in <- reply
	}
	taken := 0
	down := frame.NewBatch(16)
	for deadline := time.Now().Add(10 * time.Second); taken < kernel && time.Now().Before(deadline); {
		n := w.Take(0, down)
		for i := range n {
			if d := down.Bytes(i); len(d) != len(reply)+4 || d[12] != 0x81 || d[15] != 100 {
				t.Errorf("down frame %x: want the reply tagged with VLAN 100", d)
			}
		}
		taken += n
		down.Free()
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	w.Flush()
	if c := x.Counters(); taken != kernel || c.Read != kernel || c.Down != kernel || c.Taken != kernel || c.DownNoBuffer != 0 {
		t.Errorf("took %d, counters %+v: want all %d frames of the kernel read, queued and taken, none without a buffer", taken, c, kernel)
	}

	dev.unblock()
	for deadline := time.Now().Add(10 * time.Second); x.Counters().Written < 64 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	c = x.Counters()
	if c.Up+c.UpNoBuffer != flood+8 || c.Written != 64 || len(dev.written()) != 64 || c.WriteErrors+c.Closed != 0 {
		t.Errorf("counters %+v (device got %d): want every frame up or dropped, the 64 up written", c, len(dev.written()))
	}
	if n, m := pool.InUse(), x.Pool().InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
	if n := src.InUse(); n != 0 {
		t.Errorf("Up kept %d of the stage's buffers", n)
	}
}

// TestExceptionDownFloodKeepsUp: the kernel sends more than the workers take, and the down pool
// runs out (the rest read is counted as no buffer); Up still gets buffers and the local frames
// reach the kernel. Every frame is counted once, and no buffer is lost.
func TestExceptionDownFloodKeepsUp(t *testing.T) {
	pool, src := mustPool(t), mustPool(t)
	downPool, err := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	if err != nil {
		t.Fatal(err)
	}
	demux, _ := testRouter(t, src)
	dev := newMemDev()
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, dev}, Pool: pool, DownPool: downPool, Queue: 64, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if x.Pool() != downPool {
		t.Fatal("Pool is not the down pool")
	}
	x.Start()
	reply := arpRequest(t, 0, netip.MustParseAddr("10.0.100.1"), netip.MustParseAddr("10.0.100.2"))
	const kernel = 100
	for range kernel {
		dev.in <- reply
	}
	for deadline := time.Now().Add(10 * time.Second); x.Counters().Read < kernel && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if c := x.Counters(); c.Read != kernel || c.Down != 16 || c.DownNoBuffer != kernel-16 {
		t.Errorf("counters %+v: want %d read, the down pool's 16 queued, the rest counted as no buffer", c, kernel)
	}

	w := x.Worker(0)
	b := frame.NewBatch(8)
	localBatch(t, src, b, 8, 1)
	w.Up(b)
	w.Flush()
	for deadline := time.Now().Add(10 * time.Second); len(dev.written()) < 8 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	down := frame.NewBatch(64)
	taken := w.Take(0, down)
	down.Free()
	w.Flush()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	c := x.Counters()
	if c.Up != 8 || c.UpNoBuffer != 0 || c.Written != 8 || len(dev.written()) != 8 {
		t.Errorf("counters %+v (device got %d): want the 8 local frames up and written while the down pool is empty", c, len(dev.written()))
	}
	if taken != 16 || c.Taken != 16 || c.Read != c.Down+c.DownNoBuffer || c.Closed != 0 {
		t.Errorf("took %d, counters %+v: want the 16 queued taken, every frame read counted once", taken, c)
	}
	if n, m := pool.InUse(), downPool.InUse(); n+m != 0 {
		t.Errorf("%d and %d buffers still out", n, m)
	}
}
