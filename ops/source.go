package ops

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

// Source is what a router exposes to its operator: its ports, its forwarding stage, its neighbour
// table and its route table. Every field may be nil (or empty); the collector, the handler and
// the watcher then leave that part out. Source is read, never written: build it before the
// first scrape and leave it unchanged.
type Source struct {
	// Ports are the physical ports, in the stage's port numbering.
	Ports []Port
	// Stage is the forwarding stage: its counters (verdicts, drops by reason, ICMP) and its
	// interfaces (names, addresses, fwd.Router.IfaceStats).
	Stage *fwd.Router
	// Neigh is the neighbour table beside the stage. Its interface numbers are the stage's.
	Neigh *neigh.Table
	// Routes is the route table the stage looks up (*fib.Table).
	Routes Routes
	// Trace is the packet trace the workers feed (their TraceHooks); NewHandler serves it at
	// /trace. Nil: no trace.
	Trace *Trace
}

// Routes is the control-plane view of a route table: its size, the longest-prefix match of one
// address and the next hop of one prefix. *fib.Table implements it.
type Routes interface {
	Len() int
	Lookup(addr netip.Addr) (nh uint32, ok bool)
	Get(p netip.Prefix) (nh uint32, ok bool)
}

// Port is one physical port as the operator sees it: a name, its counters and, when the port
// knows it, its carrier state. A port opened once per worker (AF_PACKET fanout, AF_XDP queues)
// is one Port whose Stats sums the queues: see PortOf.
type Port struct {
	Name  string
	Stats func() xmit.Stats
	// LinkUp reports the carrier state; nil when the port does not know it.
	LinkUp func() bool
	// Errors counts the errors the port's Recv and Send calls returned (see CountErrors); nil
	// when nobody counts them.
	Errors *ErrorLog
}

// PortOf returns the Port of one interface opened as the queues given (one per worker, at least
// one). Its Stats adds up the queues' counters, except the Kernel fields: every queue of an
// interface reports the whole interface's kernel counters, so Stats takes the largest reading
// instead of the sum. LinkUp is the first queue's, if it implements xmit.LinkStater. Errors is nil.
func PortOf(name string, queues ...xmit.Port) Port {
	qs := append([]xmit.Port(nil), queues...)
	p := Port{Name: name, Stats: func() xmit.Stats {
		var s xmit.Stats
		for i, q := range qs {
			s = SumQueues(s, q.Stats(), i == 0)
		}
		return s
	}}
	if len(qs) > 0 {
		if ls, ok := qs[0].(xmit.LinkStater); ok {
			p.LinkUp = ls.LinkUp
		}
	}
	return p
}

// SumQueues adds the counters of queue q of an interface to s, the sum of its other queues (first:
// q is the first, s is zero): every field is added but the Kernel ones, which every queue of an
// interface reports whole for the interface; of those the sum keeps the largest reading, so an
// interface opened by N workers counts its kernel drops once, not N times.
func SumQueues(s, q xmit.Stats, first bool) xmit.Stats {
	k := [4]uint64{max(s.KernelRxDropped, q.KernelRxDropped), max(s.KernelRxErrors, q.KernelRxErrors),
		max(s.KernelTxDropped, q.KernelTxDropped), max(s.KernelTxErrors, q.KernelTxErrors)}
	if first {
		k = [4]uint64{q.KernelRxDropped, q.KernelRxErrors, q.KernelTxDropped, q.KernelTxErrors}
	}
	s = s.Add(q)
	s.KernelRxDropped, s.KernelRxErrors, s.KernelTxDropped, s.KernelTxErrors = k[0], k[1], k[2], k[3]
	return s
}

// ErrorLog counts the errors returned by the Recv and Send calls of one or more ports and keeps
// the last error of each kind. Its methods may be called from any goroutine; counting takes an
// atomic add and, for the error itself, a mutex: the error path only, never per frame.
type ErrorLog struct {
	recv, send atomic.Uint64
	mu         sync.Mutex
	lastRecv   error
	lastSend   error
}

// ErrorCounts is a reading of an ErrorLog.
type ErrorCounts struct {
	Recv, Send         uint64
	LastRecv, LastSend error // nil if none
}

// Recv counts an error a Recv call returned.
func (e *ErrorLog) Recv(err error) {
	e.recv.Add(1)
	e.mu.Lock()
	e.lastRecv = err
	e.mu.Unlock()
}

// Send counts an error a Send call returned.
func (e *ErrorLog) Send(err error) {
	e.send.Add(1)
	e.mu.Lock()
	e.lastSend = err
	e.mu.Unlock()
}

// Counts reads the log.
func (e *ErrorLog) Counts() ErrorCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return ErrorCounts{Recv: e.recv.Load(), Send: e.send.Load(), LastRecv: e.lastRecv, LastSend: e.lastSend}
}

// CountErrors returns p with the errors of its Recv and Send calls counted in e; everything else
// is p's own. The result implements xmit.Waiter and xmit.LinkStater exactly when p does, so a
// worker loop that looks for them finds them. It adds an interface call per Recv and Send and
// allocates nothing.
func CountErrors(p xmit.Port, e *ErrorLog) xmit.Port {
	c := counting{Port: p, e: e}
	w, isW := p.(xmit.Waiter)
	l, isL := p.(xmit.LinkStater)
	switch {
	case isW && isL:
		return &countingWL{counting: c, Waiter: w, LinkStater: l}
	case isW:
		return &countingW{counting: c, Waiter: w}
	case isL:
		return &countingL{counting: c, LinkStater: l}
	}
	return &c
}

type counting struct {
	xmit.Port
	e *ErrorLog
}

func (c *counting) Recv(b *frame.Batch) (int, error) {
	n, err := c.Port.Recv(b)
	if err != nil {
		c.e.Recv(err)
	}
	return n, err
}

func (c *counting) Send(b *frame.Batch) (int, error) {
	n, err := c.Port.Send(b)
	if err != nil {
		c.e.Send(err)
	}
	return n, err
}

type countingWL struct {
	counting
	xmit.Waiter
	xmit.LinkStater
}

type countingW struct {
	counting
	xmit.Waiter
}

type countingL struct {
	counting
	xmit.LinkStater
}
