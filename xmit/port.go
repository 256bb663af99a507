package xmit

import (
	"errors"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/frame"
)

// Sentinel errors.
var (
	ErrClosed = errors.New("xmit: port closed")
	// ErrNoInterface is wrapped by the errors of the back-ends' Open when the interface named does
	// not exist in the network namespace of the calling thread.
	ErrNoInterface = errors.New("xmit: no such network interface")
)

// Port is one receive queue and one transmit queue of a network interface (or of an in-memory
// link, or of an aggregate): the contract every back-end and every forwarder in wirespeed shares.
//
// Recv fills an empty batch with up to b.Cap() received frames and returns how many; it does not
// block (0, nil means nothing is waiting; see Waiter for ports that can block). It sets b.Mem and
// b.Owner: the caller owns the frames from then on (see package frame on ownership) and their bytes
// stay valid until the caller passes them on or frees them. Recv on a non-empty batch returns
// ErrNotEmpty.
//
// Send takes ownership of every frame in b, whatever it returns, and empties b. It returns how many
// frames it queued for transmission; each frame it could not queue (queue full, link down, too
// big, port closed) is released and counted in Stats.TxDropped, so nothing is lost silently and the
// caller never frees a frame it passed to Send. A frame with frame.FlagVLAN set has its out-of-band
// tag put into the bytes on the way out (like a NIC's TX VLAN offload). Send accepts frames of any
// arena: a back-end copies those that are not in its own memory (and counts the copy).
//
// Concurrency: at most one goroutine calls Recv at a time and at most one calls Send at a time (they
// may be two different goroutines); Stats, Name and Close may be called from any goroutine. For more
// parallelism open one Port per queue and give each worker its own (run to completion, share
// nothing). After Close, Recv returns ErrClosed and Send drops and counts.
type Port interface {
	Name() string
	Recv(b *frame.Batch) (int, error)
	Send(b *frame.Batch) (int, error)
	Stats() Stats
	Close() error
}

// Waiter is implemented by ports that can block until frames arrive, so an idle worker does not
// burn a core. Wait returns when Recv may have frames, when the timeout (in nanoseconds; <0 means
// none) passes, or with ErrClosed.
type Waiter interface {
	Wait(timeoutNs int64) error
}

// LinkStater is implemented by ports that know their carrier state. Package lag uses it to take
// members out of an aggregate.
type LinkStater interface {
	LinkUp() bool
}

// ErrNotEmpty is returned by Recv when the batch still holds frames.
var ErrNotEmpty = errors.New("xmit: Recv into a non-empty batch")

// Stats are a port's counters since it was opened. Frames are counted without FCS.
//
// Every frame handed to Send is counted once, in TxPackets or in TxDropped. TxLost counts the frames
// of TxPackets that the port learned later never left it, so TxPackets-TxLost frames were handed to
// the interface; what the interface then dropped is in KernelTxDropped and KernelTxErrors.
type Stats struct {
	RxPackets uint64 // frames handed to Recv's callers
	RxBytes   uint64
	RxDropped uint64 // frames the port (or the kernel below it) dropped before Recv saw them
	TxPackets uint64 // frames queued for transmission
	TxBytes   uint64
	TxDropped uint64 // frames Send released without queueing: queue full, link or carrier down, too big, closed
	TxCopied  uint64 // frames Send had to copy from a foreign arena
	Errors    uint64 // system-call or ring errors
	// TxLost counts frames of TxPackets that never left the port: the kernel took them off the
	// port's transmit queue and dropped them (an AF_XDP socket whose interface went down or lost
	// its carrier as it sent), the kernel skipped them as invalid, or Close found them still queued.
	TxLost uint64

	// The interface's own counters, as the kernel keeps them (rtnetlink IFLA_STATS64, the figures
	// of ip -s link), counted from the moment the port opened: what the kernel and the driver
	// dropped below the port, where the port cannot see it (a veth whose peer is down, too small
	// for the frame or with a full backlog drops frames the socket was told were sent; a NIC out of
	// receive descriptors misses frames). They cover everything on the interface, not only this
	// port's frames, so every port open on one interface reports the same counts: add them up over
	// interfaces, not over the ports of one interface. A back-end reads them at most every 100 ms,
	// on a call to Stats, and a last time at Close; ports without a kernel interface (Pipe) leave
	// them zero.
	KernelRxDropped uint64 // rx_dropped + rx_missed_errors
	KernelRxErrors  uint64 // rx_errors (CRC, length, frame, FIFO errors...)
	KernelTxDropped uint64 // tx_dropped
	KernelTxErrors  uint64 // tx_errors (carrier, aborted, FIFO errors...)
}

// Add returns the field-wise sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		RxPackets: s.RxPackets + o.RxPackets, RxBytes: s.RxBytes + o.RxBytes, RxDropped: s.RxDropped + o.RxDropped,
		TxPackets: s.TxPackets + o.TxPackets, TxBytes: s.TxBytes + o.TxBytes, TxDropped: s.TxDropped + o.TxDropped,
		TxCopied: s.TxCopied + o.TxCopied, Errors: s.Errors + o.Errors, TxLost: s.TxLost + o.TxLost,
		KernelRxDropped: s.KernelRxDropped + o.KernelRxDropped, KernelRxErrors: s.KernelRxErrors + o.KernelRxErrors,
		KernelTxDropped: s.KernelTxDropped + o.KernelTxDropped, KernelTxErrors: s.KernelTxErrors + o.KernelTxErrors,
	}
}

// Counters is the shared implementation of Stats for back-ends: each method is called once per
// batch (an atomic add per field touched), never per frame, and Stats may be read from any
// goroutine. The receive and transmit halves sit on separate cache lines because different
// goroutines update them.
type Counters struct {
	rxPackets, rxBytes, rxDropped atomic.Uint64
	_                             [128 - 24]byte
	txPackets, txBytes, txDropped atomic.Uint64
	txCopied, errors, txLost      atomic.Uint64
	_                             [128 - 48]byte
}

// Rx counts a received batch.
func (c *Counters) Rx(packets, bytes int) {
	if packets > 0 {
		c.rxPackets.Add(uint64(packets))
		c.rxBytes.Add(uint64(bytes))
	}
}

// RxDrop counts frames dropped on the way in.
func (c *Counters) RxDrop(n int) {
	if n > 0 {
		c.rxDropped.Add(uint64(n))
	}
}

// Tx counts a sent batch.
func (c *Counters) Tx(packets, bytes int) {
	if packets > 0 {
		c.txPackets.Add(uint64(packets))
		c.txBytes.Add(uint64(bytes))
	}
}

// TxDrop counts frames dropped on the way out.
func (c *Counters) TxDrop(n int) {
	if n > 0 {
		c.txDropped.Add(uint64(n))
	}
}

// TxCopy counts frames copied from a foreign arena.
func (c *Counters) TxCopy(n int) {
	if n > 0 {
		c.txCopied.Add(uint64(n))
	}
}

// TxLose counts frames counted by Tx that turned out never to leave.
func (c *Counters) TxLose(n int) {
	if n > 0 {
		c.txLost.Add(uint64(n))
	}
}

// Error counts an error.
func (c *Counters) Error() { c.errors.Add(1) }

// Stats reads the counters.
func (c *Counters) Stats() Stats {
	return Stats{
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(), RxDropped: c.rxDropped.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(), TxDropped: c.txDropped.Load(),
		TxCopied: c.txCopied.Load(), Errors: c.errors.Load(), TxLost: c.txLost.Load(),
	}
}
