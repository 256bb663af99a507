//go:build linux

package bench

import (
	"errors"
	"net"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	asavie "github.com/asavie/xdp"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// The AF_XDP receivers: wirespeed's port and asavie/xdp v0.3.3, both with 4096 chunks of 2048 bytes
// and 2048-entry fill and RX rings, both reading batches of at most 64 frames and touching each
// frame's first byte, both attaching their XDP program native (on veth that also gives the receiving
// end the NAPI instance a redirect into it needs).
const xdpBatch = 64

func init() {
	rxCases["wirespeed-afxdp"] = func(ifname string) (rxRunner, error) {
		p, err := afxdp.Open(ifname, 0, nil)
		if err != nil {
			return nil, err
		}
		return &wsAFXDP{p: p, b: frame.NewBatch(xdpBatch)}, nil
	}
	rxCases["asavie-xdp"] = openAsavie
}

type wsAFXDP struct {
	p    *afxdp.Port
	b    *frame.Batch
	sink byte
}

func (w *wsAFXDP) RecvFor(d time.Duration) (uint64, error) {
	var frames, batches uint64 // the clock is read every 16 batches and whenever the ring is empty
	end := time.Now().Add(d)
	b := w.b
	for {
		n, err := w.p.Recv(b)
		if err != nil {
			return frames, err
		}
		if n == 0 {
			left := time.Until(end)
			if left <= 0 {
				return frames, nil
			}
			if err := w.p.Wait(int64(left)); err != nil {
				return frames, err
			}
			continue
		}
		for i := range b.Frames {
			w.sink ^= b.Mem[b.Frames[i].Off]
		}
		frames += uint64(n)
		b.Free()
		if batches++; batches&15 == 0 && time.Now().After(end) {
			return frames, nil
		}
	}
}

func (w *wsAFXDP) Drain(want uint64, timeout time.Duration) (frames, waits uint64, err error) {
	return drainBatches(w.p, w.b, &w.sink, want, timeout)
}

func (w *wsAFXDP) Close() error { return w.p.Close() }

type asavieRx struct {
	prog    *asavie.Program
	xsk     *asavie.Socket
	ifindex int
	netns   int // the namespace it was opened in: Detach finds the link by index there
	sink    byte
}

func openAsavie(ifname string) (rxRunner, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	prog, err := asavie.NewProgram(1)
	if err != nil {
		return nil, err
	}
	if err := prog.Attach(ifi.Index); err != nil {
		prog.Close()
		return nil, err
	}
	opts := asavie.SocketOptions{NumFrames: 4096, FrameSize: 2048, FillRingNumDescs: 2048,
		CompletionRingNumDescs: 64, RxRingNumDescs: 2048, TxRingNumDescs: 64}
	var xsk *asavie.Socket
	for i := 0; i < 50; i++ { // EBUSY right after the previous socket on the queue closed
		if xsk, err = asavie.NewSocket(ifi.Index, 0, &opts); err == nil || !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		prog.Detach(ifi.Index)
		prog.Close()
		return nil, err
	}
	if err := prog.Register(0, xsk.FD()); err != nil {
		xsk.Close()
		prog.Detach(ifi.Index)
		prog.Close()
		return nil, err
	}
	netns, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		netns = -1
	}
	return &asavieRx{prog: prog, xsk: xsk, ifindex: ifi.Index, netns: netns}, nil
}

// RecvFor uses asavie/xdp as its examples do (refill the fill ring with GetDescs, Receive), except
// that it polls only when the RX ring is empty instead of once per batch.
func (a *asavieRx) RecvFor(d time.Duration) (uint64, error) {
	var frames, batches uint64
	end := time.Now().Add(d)
	xsk := a.xsk
	for {
		if n := xsk.NumFreeFillSlots(); n > 0 {
			xsk.Fill(xsk.GetDescs(n))
		}
		k := xsk.NumReceived()
		if k == 0 {
			left := time.Until(end)
			if left <= 0 {
				return frames, nil
			}
			if _, _, err := xsk.Poll(int(left/time.Millisecond) + 1); err != nil {
				return frames, err
			}
			continue
		}
		descs := xsk.Receive(min(k, xdpBatch))
		for _, dd := range descs {
			a.sink ^= xsk.GetFrame(dd)[0]
		}
		frames += uint64(len(descs))
		if batches++; batches&15 == 0 && time.Now().After(end) {
			return frames, nil
		}
	}
}

// Drain refills the fill ring and reads batches as RecvFor does, polling only when the RX ring is
// empty. want == 0 is the settle step: it refills the fill ring and reports what is on the RX ring.
func (a *asavieRx) Drain(want uint64, timeout time.Duration) (frames, waits uint64, err error) {
	var end time.Time
	xsk := a.xsk
	if want == 0 {
		if n := xsk.NumFreeFillSlots(); n > 0 {
			xsk.Fill(xsk.GetDescs(n))
		}
		return uint64(xsk.NumReceived()), 0, nil
	}
	for frames < want {
		if n := xsk.NumFreeFillSlots(); n > 0 {
			xsk.Fill(xsk.GetDescs(n))
		}
		k := xsk.NumReceived()
		if k == 0 {
			left := waitBudget(&end, timeout)
			if left <= 0 {
				return frames, waits, nil
			}
			waits++
			if _, _, err := xsk.Poll(int(left/time.Millisecond) + 1); err != nil {
				return frames, waits, err
			}
			continue
		}
		descs := xsk.Receive(min(k, xdpBatch))
		for _, dd := range descs {
			a.sink ^= xsk.GetFrame(dd)[0]
		}
		frames += uint64(len(descs))
	}
	return frames, waits, nil
}

func (a *asavieRx) Close() error {
	a.prog.Unregister(0)
	unmapAsavieRings(a.xsk)
	err := a.xsk.Close()
	// Detach looks the interface up by index in the calling thread's namespace: go back to ours.
	runtime.LockOSThread()
	self, serr := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if serr == nil && a.netns >= 0 && unix.Setns(a.netns, unix.CLONE_NEWNET) == nil {
		if derr := a.prog.Detach(a.ifindex); derr != nil && err == nil {
			err = derr
		}
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else leave the thread locked: the runtime discards it
	} else {
		runtime.UnlockOSThread()
	}
	if serr == nil {
		unix.Close(self)
	}
	unix.Close(a.netns)
	a.prog.Close()
	return err
}

// unmapAsavieRings unmaps the four rings asavie/xdp v0.3.3 maps but never unmaps: each mapping
// holds a reference to the socket, so without this the socket outlives Close and its queue answers
// EBUSY to every later bind until the process exits. It reads the ring pointers out of the socket's
// unexported fields.
func unmapAsavieRings(xsk *asavie.Socket) {
	var off unix.XDPMmapOffsets
	l := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(xsk.FD()), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return
	}
	v := reflect.ValueOf(xsk).Elem()
	for _, r := range []struct {
		field string
		off   unix.XDPRingOffset
		size  uintptr
	}{
		{"fillRing", off.Fr, 8}, {"completionRing", off.Cr, 8},
		{"rxRing", off.Rx, unsafe.Sizeof(unix.XDPDesc{})}, {"txRing", off.Tx, unsafe.Sizeof(unix.XDPDesc{})},
	} {
		f := v.FieldByName(r.field)
		prod, descs := f.FieldByName("Producer").Pointer(), f.FieldByName("Descs")
		if prod == 0 || descs.Len() == 0 {
			continue
		}
		start := prod - uintptr(r.off.Producer)
		unix.Syscall(unix.SYS_MUNMAP, start, uintptr(r.off.Desc)+uintptr(descs.Len())*r.size, 0)
	}
}

// passProgram gives a veth end NAPI (XDP_PASS, native) for receivers that attach no XDP program.
func passProgram(ifindex int) (link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	return link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
}

// BenchmarkRecvXDPLive runs every registered receiver (see BenchmarkRecv) against the XDP
// live-frames sender on CPU 1, receiver on CPU 0, 60-byte frames of one UDP flow.
func BenchmarkRecvXDPLive(b *testing.B) {
	ns, ifS, ifR, names := rxSetup(b, "rxl")
	for _, name := range names {
		b.Run("rx="+name, func(b *testing.B) { benchRecvLive(b, ns, ifS, ifR, rxCases[name]) })
	}
}

func benchRecvLive(b *testing.B, ns *nettest.NS, ifS, ifR string, open rxOpener) {
	var rx rxRunner
	var pass link.Link
	err := ns.Do(func() (err error) {
		if rx, err = open(ifR); err != nil {
			return err
		}
		r, err := net.InterfaceByName(ifR)
		if err != nil {
			return err
		}
		if l, err := passProgram(r.Index); err == nil { // fails if the receiver attached its own: fine
			pass = l
		}
		return nil
	})
	if err != nil {
		if rx != nil {
			rx.Close()
		}
		b.Fatal(err)
	}
	defer func() {
		rx.Close()
		if pass != nil {
			pass.Close()
		}
	}()
	// The XDP live-frames sender (package gen): BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES runs an
	// XDP program 2^22 times per call on recycled pages; the program writes all 60 bytes of the frame
	// every time (recycled pages keep what a receiver changed) and redirects it out of the veth
	// (ndo_xdp_xmit). Frames never become skbs, so the receiver, not the sender, is the bottleneck.
	snd, err := gen.Open(&gen.Config{Netns: ns.Name, Interface: ifS, Engine: gen.EngineXDP, CPU: 1})
	if err != nil {
		b.Fatal(err)
	}
	snd.Start()
	defer snd.Stop()

	defer pinThread(0)()
	if _, err := rx.RecvFor(300 * time.Millisecond); err != nil {
		b.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, t0 := threadCPUTime(), time.Now()
	b.ResetTimer()
	var frames uint64
	for range b.N {
		n, err := rx.RecvFor(100 * time.Millisecond)
		frames += n
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	el, cpu := time.Since(t0), threadCPUTime()-cpu0
	runtime.ReadMemStats(&ms1)
	if frames == 0 {
		if e := snd.LastError(); e != nil {
			b.Fatalf("received nothing (sender: last error %v)", e)
		}
		b.Fatal("received nothing")
	}
	b.ReportMetric(float64(frames)/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(frames), "allocs/frame")
}
