package app

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/xmit"
)

func TestPcapRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcapng")
	p, err := CreatePcap(path, 64)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][]byte{bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1000), bytes.Repeat([]byte{3}, 64)}
	verdicts := []fwd.Reason{fwd.Forwarded, fwd.DropTTL, fwd.DropNoRoute}
	for i := range frames {
		p.Capture(frames[i], verdicts[i])
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"forwarded", "dropped: ttl", "dropped: no-route"}
	for i := 0; ; i++ {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		if err == io.EOF {
			if i != len(frames) {
				t.Fatalf("read %d packets, wrote %d", i, len(frames))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		snap := min(len(frames[i]), DefaultSnap)
		if !bytes.Equal(data, frames[i][:snap]) || ci.Length != len(frames[i]) {
			t.Errorf("packet %d: %d bytes (orig %d), want %d (orig %d)", i, len(data), ci.Length, snap, len(frames[i]))
		}
		if len(opts.Comments) != 1 || opts.Comments[0] != want[i] {
			t.Errorf("packet %d: comments %q, want %q", i, opts.Comments, want[i])
		}
	}
	if p.Captured.Load() != 3 || p.Dropped.Load() != 0 {
		t.Fatal(p.Summary())
	}
}

// blockWriter blocks writes until released: the writer goroutine stalls, the slots run out.
type blockWriter struct{ release chan struct{} }

func (b *blockWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }
func (b *blockWriter) Close() error                { return nil }

func TestPcapBoundedAndZeroAllocs(t *testing.T) {
	bw := &blockWriter{release: make(chan struct{})}
	p, err := NewPcap(bw, 8, 128)
	if err != nil {
		t.Fatal(err)
	}
	d := make([]byte, 60)
	// The header went into bufio (64 KiB), so nothing blocks until the buffer fills: with slots
	// only freed by the writer, at most 8 + the one the writer holds are taken.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				p.Capture(d, fwd.Forwarded)
			}
		}()
	}
	wg.Wait()
	a := testing.AllocsPerRun(100, func() { p.Capture(d, fwd.DropTTL) })
	if a != 0 {
		t.Fatalf("Capture: %v allocs", a)
	}
	close(bw.release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	total := p.Captured.Load() + p.Dropped.Load()
	if total != 4*1000+101 || p.Dropped.Load() == 0 {
		t.Fatalf("captured %d + not captured %d, want %d in all with some not captured", p.Captured.Load(), p.Dropped.Load(), 4*1000+101)
	}
}

func TestNeighboursFlag(t *testing.T) {
	n := Neighbours{}
	if err := n.Set("uplink=02:00:00:00:00:01,trunk=02:00:00:00:00:02"); err != nil {
		t.Fatal(err)
	}
	def := frame.MAC{9}
	if n.Get("uplink", "", def) != (frame.MAC{2, 0, 0, 0, 0, 1}) || n.Get("vlan101", "trunk", def) != (frame.MAC{2, 0, 0, 0, 0, 2}) || n.Get("x", "", def) != def {
		t.Fatal(n)
	}
	for _, bad := range []string{"uplink", "uplink=zz", "a=01:02"} {
		if err := (Neighbours{}).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseBackend(t *testing.T) {
	for _, s := range []string{"mem", "afpacket", "afpacket-v2", "afxdp"} {
		if b, err := ParseBackend(s); err != nil || string(b) != s {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseBackend("dpdk"); err == nil {
		t.Error("dpdk accepted")
	}
	if _, err := Open(OpenConfig{Backend: Mem, Ifnames: []string{"lo"}}); err == nil {
		t.Error("Open with the mem backend succeeded")
	}
}

// TestTally: the balance holds only when every frame is accounted for.
func TestTally(t *testing.T) {
	var c fwd.Counters
	c.Forwarded = 7
	c.Drops[fwd.DropTTL] = 3
	tl := NewTally([]xmit.Stats{{RxPackets: 6, TxPackets: 5}, {RxPackets: 4, TxPackets: 1, TxDropped: 1}}, c)
	if !tl.Balanced() {
		t.Fatalf("%+v not balanced", tl)
	}
	tl.Rx++
	if tl.Balanced() {
		t.Fatal("an extra rx frame balanced")
	}
	var out bytes.Buffer
	tl.Report(&out, nil)
	if !bytes.Contains(out.Bytes(), []byte("MISMATCH")) {
		t.Fatal(out.String())
	}
}

// TestIfaceMACMissing: a missing interface is an error that names it, says where it looked and what
// to do, and wraps ErrNoSuchInterface.
func TestIfaceMACMissing(t *testing.T) {
	_, err := IfaceMAC("ws-none0")
	if !errors.Is(err, ErrNoSuchInterface) {
		t.Fatalf("%v, want ErrNoSuchInterface", err)
	}
	for _, want := range []string{`"ws-none0"`, "network namespace", "ip link", "ip netns exec"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if _, err := IfaceMAC("lo"); err == nil || errors.Is(err, ErrNoSuchInterface) || !strings.Contains(err.Error(), "lo") {
		t.Errorf("lo: %v, want an error naming it that is not ErrNoSuchInterface (no Ethernet address)", err)
	}
}

// queuePort is a port that reports fixed counters.
type queuePort struct {
	brokenPort
	s xmit.Stats
}

func (p *queuePort) Stats() xmit.Stats { return p.s }

// TestKernelCountedOnce: an interface opened by three workers reports its kernel drops once in
// Ports.Stats and in the Tally, while its own counters add up.
func TestKernelCountedOnce(t *testing.T) {
	q := func(rx uint64) xmit.Port {
		return &queuePort{s: xmit.Stats{RxPackets: rx, KernelRxDropped: 7, KernelTxDropped: 5, KernelRxErrors: 1}}
	}
	p := &Ports{ByWorker: [][]xmit.Port{{q(1)}, {q(2)}, {q(3)}}}
	s := p.Stats(0)
	if s.RxPackets != 6 || s.KernelRxDropped != 7 || s.KernelTxDropped != 5 || s.KernelRxErrors != 1 {
		t.Fatalf("%+v", s)
	}
	tl := NewTally([]xmit.Stats{s, s}, fwd.Counters{})
	if tl.KernelRxDropped != 14 || tl.KernelTxDropped != 10 {
		t.Fatalf("tally over two interfaces: %+v", tl)
	}
	var out strings.Builder
	tl.Report(&out, nil)
	if !strings.Contains(out.String(), "the interfaces dropped 14 received and 10 sent frames") {
		t.Fatal(out.String())
	}
}
