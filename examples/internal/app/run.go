package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// IdleWait is how long an idle worker blocks before it polls its ports again.
const IdleWait = 200_000 // ns

// Run is one worker: it polls ports (indexed by physical port) and forwards what arrives with w
// until ctx ends, then takes what is still queued (at most drain batches per port) so that every
// frame a port handed out is forwarded or dropped, and publishes the counters. When every port is
// idle it blocks for up to IdleWait until a port may have frames (see RunWith), so an idle
// forwarder does not spin a core. It returns the errors its Recv and Send calls got (the frames a
// failed Send did not queue are the port's TxDropped). It allocates nothing per batch.
func Run(ctx context.Context, w *fwd.Worker, ports []xmit.Port, batch, drain int) PortErrors {
	return RunResolving(ctx, w, nil, ports, batch, drain)
}

// RunResolving is Run with a neighbour resolver (nil: none) beside the worker: every batch goes
// through res.Step, and res.Poll runs the table's timers once a millisecond while frames flow and
// on the idle rounds that do the loop's chores (Idle.Chores).
func RunResolving(ctx context.Context, w *fwd.Worker, res *Resolver, ports []xmit.Port, batch, drain int) PortErrors {
	return RunTraced(ctx, w, res, nil, ports, batch, drain)
}

// RunTraced is RunResolving with a packet trace's hook (nil: none): the loop polls it once per
// round of its ports, so that a trace request turns the worker's tap on before its next batch
// (ops.TraceHook).
func RunTraced(ctx context.Context, w *fwd.Worker, res *Resolver, trace *ops.TraceHook, ports []xmit.Port, batch, drain int) PortErrors {
	return RunWith(ctx, w, res, trace, ports, batch, drain, Options{})
}

// Options are a worker loop's choices beyond its ports and stage.
type Options struct {
	// Spin keeps polling the ports when they are idle instead of blocking, as DPDK's poll-mode
	// workers do: the lowest latency, for a core spent whatever the load.
	Spin bool
	// IdleSpin, when above zero, keeps an idle worker polling until its ports have been empty
	// that long before it blocks. Waking a blocked worker takes tens of microseconds (the
	// kernel's wake-up, the CPU's way out of its idle state); near its capacity a worker that
	// blocks in every short gap falls behind by that much each time and catches up only at the
	// rate it has to spare, so its queue and latency grow by the inverse of that spare share.
	// Polling through gaps shorter than IdleSpin removes those wake-ups; the price is up to
	// IdleSpin of CPU after every burst, a whole core once frames arrive more often than that.
	IdleSpin time.Duration
}

// RunWith is RunTraced with opt. An idle worker blocks on all its ports at once where they can be
// polled together (xmit.MultiWait: AF_PACKET and AF_XDP ports), else on each in turn.
func RunWith(ctx context.Context, w *fwd.Worker, res *Resolver, trace *ops.TraceHook, ports []xmit.Port, batch, drain int, opt Options) PortErrors {
	var errs PortErrors
	out := CountSends(ports, &errs)
	step := func(p int, in *frame.Batch) { trace.Ingress(p); w.Forward(uint16(p), in, out); trace.Ingress(-1) }
	if res != nil {
		step = func(p int, in *frame.Batch) { trace.Ingress(p); res.Step(w, uint16(p), in, out); trace.Ingress(-1) }
		res.Announce(out)
		defer res.Flush()
	}
	lastPoll := time.Now()
	in := frame.NewBatch(batch)
	waiters := make([]xmit.Waiter, len(ports))
	for i, p := range ports {
		waiters[i], _ = p.(xmit.Waiter)
	}
	multi := xmit.NewMultiWait(ports)
	batches, turn := 0, 0
	idle := Idle{Options: opt}
	done := ctx.Done()
	for {
		trace.Poll() // one atomic load while the trace's state is unchanged
		got := false
		for p, port := range ports {
			n, err := port.Recv(in)
			if err != nil {
				errs.RecvError(err)
			}
			if n > 0 {
				step(p, in)
				got = true
			}
		}
		if got {
			batches++ // once per round: with several ports busy a count per batch could step over the checks below
			if batches&63 == 0 {
				w.Flush()
				if res != nil {
					res.Flush()
				}
			}
			if res != nil && batches&15 == 0 {
				if now := time.Now(); now.Sub(lastPoll) >= time.Millisecond {
					res.Poll(w, out)
					lastPoll = now
				}
			}
		}
		select {
		case <-done:
			for p, port := range ports {
				for i := 0; i < drain; i++ {
					n, err := port.Recv(in)
					if err != nil {
						errs.RecvError(err)
					}
					if n == 0 {
						break
					}
					step(p, in)
				}
			}
			w.Flush()
			return errs
		default:
		}
		if got {
			idle.Reset()
			continue
		}
		if idle.Chores() {
			if res != nil {
				res.Poll(w, out)
				lastPoll = time.Now()
				res.Flush()
			}
			w.Flush()
		}
		if idle.Empty() {
			if multi != nil {
				if err := multi.Wait(IdleWait); err != nil {
					errs.RecvError(err)
				}
				continue
			}
			turn = (turn + 1) % len(ports)
			if wt := waiters[turn]; wt != nil {
				wt.Wait(IdleWait / int64(len(ports)))
			}
		}
	}
}

// Idle is a worker loop's idle policy (Options.Spin and Options.IdleSpin): the loop calls Reset
// after a round of its ports that brought frames and Empty after one that brought none, and
// blocks when Empty says so.
type Idle struct {
	Options
	rounds  int       // empty rounds in a row
	since   time.Time // the first of them (IdleSpin)
	blocked bool      // the last Empty said to block
}

// Reset records a round that brought frames.
func (i *Idle) Reset() { i.rounds, i.blocked = 0, false }

// idleChores is how many empty rounds in a row a polling worker makes between its chores.
const idleChores = 16

// Chores reports whether the empty round about to be recorded should do the loop's chores (run
// the resolver's timers, publish the counters): the first one after a round that brought frames,
// one in idleChores after it while the loop keeps polling, and every one after the loop blocked.
// An empty round that does nothing else is then a Recv per port: polling stays cheap.
func (i *Idle) Chores() bool {
	return i.rounds%idleChores == 0 || i.blocked
}

// Empty records a round that brought nothing and reports whether the loop should block now: never
// with Spin; else after a few empty rounds in a row and, with IdleSpin, once the ports have been
// empty that long.
func (i *Idle) Empty() bool {
	i.rounds++
	if i.Spin {
		return false
	}
	if i.IdleSpin > 0 {
		if i.rounds == 1 {
			i.since = time.Now()
			return false
		}
		if i.rounds > 8 && time.Since(i.since) < i.IdleSpin {
			return false
		}
	}
	i.blocked = i.rounds > 8
	return i.blocked
}

// MaxIdleSpin is the largest Options.IdleSpin CheckIdleSpin accepts.
const MaxIdleSpin = time.Second

// CheckIdleSpin validates an -idle-spin flag's value.
func CheckIdleSpin(d time.Duration) error {
	if d < 0 || d > MaxIdleSpin {
		return fmt.Errorf("-idle-spin %v: want 0 (block after a few empty polls) to %v", d, MaxIdleSpin)
	}
	return nil
}

// IdleSpinUsage is the -idle-spin flag's usage line.
const IdleSpinUsage = "afpacket, afxdp: an idle worker keeps polling until its ports have been empty this long before it blocks (e.g. 50us; 0: block after a few empty polls): no wake-up delays in short gaps, which near capacity would build a queue, for up to this much CPU after every burst"

// PortErrors counts the errors a worker loop's Recv and Send calls returned, and keeps the first.
type PortErrors struct {
	Recv, Send uint64
	First      error // nil if none
}

// RecvError counts an error a Recv returned.
func (e *PortErrors) RecvError(err error) {
	e.Recv++
	if e.First == nil {
		e.First = err
	}
}

// SendError counts an error a Send returned.
func (e *PortErrors) SendError(err error) {
	e.Send++
	if e.First == nil {
		e.First = err
	}
}

// Add adds o's counts to e; e keeps its first error, or takes o's.
func (e *PortErrors) Add(o PortErrors) {
	e.Recv += o.Recv
	e.Send += o.Send
	if e.First == nil {
		e.First = o.First
	}
}

// String is a line for a final report.
func (e PortErrors) String() string {
	s := fmt.Sprintf("port errors: recv %d, send %d", e.Recv, e.Send)
	if e.First != nil {
		s += fmt.Sprintf(" (first: %v)", e.First)
	}
	return s
}

// CountSends returns ports whose Send counts its errors in e (for fwd.Worker.Forward, which sends
// and does not look at the errors); their other methods are the ports' own. Use the result from
// e's goroutine only.
func CountSends(ports []xmit.Port, e *PortErrors) []xmit.Port {
	out := make([]xmit.Port, len(ports))
	for i, p := range ports {
		out[i] = &sendCounter{Port: p, errs: e}
	}
	return out
}

type sendCounter struct {
	xmit.Port
	errs *PortErrors
}

func (s *sendCounter) Send(b *frame.Batch) (int, error) {
	n, err := s.Port.Send(b)
	if err != nil {
		s.errs.SendError(err)
	}
	return n, err
}

// Neighbours maps the examples' interface names to static neighbour MACs (the -nexthop flag):
// "uplink=02:00:00:00:00:01,vlan101=02:..."; the key "*" (or the trunk's name, as the example
// says) sets a default.
type Neighbours map[string]frame.MAC

// String implements flag.Value.
func (n Neighbours) String() string {
	var s []string
	for k, v := range n {
		s = append(s, k+"="+net.HardwareAddr(v[:]).String())
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value: it takes NAME=MAC[,NAME=MAC...] and may be repeated.
func (n Neighbours) Set(v string) error {
	for _, kv := range strings.Split(v, ",") {
		if kv == "" {
			continue
		}
		name, mac, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want NAME=MAC", kv)
		}
		hw, err := net.ParseMAC(mac)
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("%q: bad MAC", kv)
		}
		n[name] = frame.MAC(hw)
	}
	return nil
}

// Get returns the MAC for name, else for fallback (say, "trunk"), else for "*", else def.
func (n Neighbours) Get(name, fallback string, def frame.MAC) frame.MAC {
	for _, k := range []string{name, fallback, "*"} {
		if m, ok := n[k]; ok {
			return m
		}
	}
	return def
}

// ErrNoSuchInterface is wrapped by IfaceMAC's error for a name that is no interface here.
var ErrNoSuchInterface = errors.New("no such network interface")

// IfaceMAC returns an interface's hardware address (in the calling thread's namespace). A missing
// interface is an error that names it, lists the interfaces there are and wraps ErrNoSuchInterface.
func IfaceMAC(name string) (frame.MAC, error) {
	ifcs, err := net.Interfaces()
	if err != nil {
		return frame.MAC{}, fmt.Errorf("interface %q: %w", name, err)
	}
	var names []string
	for _, ifc := range ifcs {
		if ifc.Name != name {
			names = append(names, ifc.Name)
			continue
		}
		if len(ifc.HardwareAddr) != 6 {
			return frame.MAC{}, fmt.Errorf("interface %q: no Ethernet address (%q)", name, ifc.HardwareAddr.String())
		}
		return frame.MAC(ifc.HardwareAddr), nil
	}
	if len(names) > 8 {
		names = append(names[:8], fmt.Sprintf("%d more", len(names)-8))
	}
	return frame.MAC{}, fmt.Errorf("interface %q: %w in this network namespace (it has %s; `ip link` lists them): check the name, or run the router where the interface is, with `ip netns exec NAMESPACE`",
		name, ErrNoSuchInterface, strings.Join(names, ", "))
}
