package app

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wirespeed/wirespeed/fwd"
)

// Pcap is a fwd.Tap that writes what workers forward or drop to a pcapng file (gopacket's pcapgo),
// each packet with a comment giving its verdict ("forwarded", "dropped: ttl", ...), for a look in
// Wireshark.
//
// It keeps the file off the forwarding path: Capture copies the frame (up to Snap bytes) into one of
// a fixed set of preallocated slots and passes the slot's number through a bounded channel to a
// writer goroutine; when no slot is free (the disk is slower than the traffic) the frame is not
// captured and counted in Dropped, never waited for. Capture allocates nothing and is safe for any
// number of workers at once (slots come from a channel).
type Pcap struct {
	free chan int32
	full chan record
	buf  []byte // slots, Snap bytes each
	snap int

	Captured, Dropped atomic.Uint64

	closeOnce sync.Once
	done      chan struct{}
	err       error
	file      io.WriteCloser
}

type record struct {
	slot    int32
	n, orig int32
	ts      int64
	verdict fwd.Reason
}

// DefaultSnap is the capture length per frame.
const DefaultSnap = 256

// CreatePcap creates path and starts the writer; slots is the bound of the queue (0: 4096).
func CreatePcap(path string, slots int) (*Pcap, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	p, err := NewPcap(f, slots, DefaultSnap)
	if err != nil {
		f.Close()
	}
	return p, err
}

// NewPcap writes to w (closed by Close) with the given queue bound and capture length.
func NewPcap(w io.WriteCloser, slots, snap int) (*Pcap, error) {
	if slots <= 0 {
		slots = 4096
	}
	if snap <= 0 {
		snap = DefaultSnap
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	ng, err := pcapgo.NewNgWriterInterface(bw, pcapgo.NgInterface{Name: "wirespeed", LinkType: layers.LinkTypeEthernet, SnapLength: uint32(snap)}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		return nil, err
	}
	p := &Pcap{free: make(chan int32, slots), full: make(chan record, slots), buf: make([]byte, slots*snap), snap: snap, done: make(chan struct{}), file: w}
	for i := 0; i < slots; i++ {
		p.free <- int32(i)
	}
	go p.write(ng, bw)
	return p, nil
}

// Capture implements fwd.Tap.
func (p *Pcap) Capture(d []byte, verdict fwd.Reason) {
	select {
	case s := <-p.free:
		n := copy(p.buf[int(s)*p.snap:int(s+1)*p.snap], d)
		p.full <- record{slot: s, n: int32(n), orig: int32(len(d)), ts: time.Now().UnixNano(), verdict: verdict}
	default:
		p.Dropped.Add(1)
	}
}

func (p *Pcap) write(ng *pcapgo.NgWriter, bw *bufio.Writer) {
	defer close(p.done)
	var comments [fwd.NumVerdicts][]string
	for v := range comments {
		c := fwd.Reason(v).String()
		if fwd.Reason(v) < fwd.NumReasons {
			c = "dropped: " + c
		}
		comments[v] = []string{c}
	}
	for r := range p.full {
		if p.err == nil {
			ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, r.ts), CaptureLength: int(r.n), Length: int(r.orig)}
			p.err = ng.WritePacketWithOptions(ci, p.buf[int(r.slot)*p.snap:int(r.slot)*p.snap+int(r.n)], pcapgo.NgPacketOptions{Comments: comments[r.verdict]})
			p.Captured.Add(1)
		}
		p.free <- r.slot
	}
	if err := ng.Flush(); p.err == nil {
		p.err = err
	}
	if err := bw.Flush(); p.err == nil {
		p.err = err
	}
}

// Close stops the writer after what is queued and closes the file. Call it after every worker
// that captures into p has stopped.
func (p *Pcap) Close() error {
	p.closeOnce.Do(func() {
		close(p.full)
		<-p.done
		if err := p.file.Close(); p.err == nil {
			p.err = err
		}
	})
	return p.err
}

// Summary is a line for the final report.
func (p *Pcap) Summary() string {
	return fmt.Sprintf("pcap: %d frames written, %d not captured (writer queue full)", p.Captured.Load(), p.Dropped.Load())
}
