package ops

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

// MaxListed is the most neighbours one Check names in an event of each kind; the rest are
// counted.
const MaxListed = 8

// Watcher turns changes in a Source into log events, for what an operator must know: a port's
// link going down or up, errors of a port (its Recv and Send calls, its system calls), neighbours
// that fail to resolve (and resolve again), and other hosts claiming the router's addresses.
// Each Check compares the counters and states with the previous Check and logs the differences,
// so a condition that persists is reported once per Check with the count since the last one.
//
// Concurrency: Check and Run must not be called from two goroutines at once; they read the
// Source as a scrape does and may run beside the workers.
type Watcher struct {
	src   Source
	log   *slog.Logger
	link  []int8 // per port: -1 unknown, 0 down, 1 up
	errs  []ErrorCounts
	stats []xmit.Stats
	neigh neigh.Counters
	fail  map[neighKey]bool // neighbours FAILED at the last Check
}

type neighKey struct {
	iface uint16
	addr  netip.Addr
}

// NewWatcher returns a watcher of src (copied) that logs to log (nil: slog.Default()).
func NewWatcher(src *Source, log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.Default()
	}
	w := &Watcher{log: log, fail: map[neighKey]bool{}}
	if src != nil {
		w.src = *src
		w.src.Ports = append([]Port(nil), src.Ports...)
	}
	n := len(w.src.Ports)
	w.link, w.errs, w.stats = make([]int8, n), make([]ErrorCounts, n), make([]xmit.Stats, n)
	for i := range w.link {
		w.link[i] = -1
	}
	return w
}

// Run calls Check every interval until ctx ends, and once more then.
func (w *Watcher) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.Check()
		select {
		case <-ctx.Done():
			w.Check()
			return
		case <-t.C:
		}
	}
}

// Check logs what changed since the previous call. The first call logs the links' states (a link
// down at warning level) and any neighbour already failed; it reports counters from their start.
func (w *Watcher) Check() {
	for i, p := range w.src.Ports {
		if p.LinkUp != nil {
			up := int8(0)
			if p.LinkUp() {
				up = 1
			}
			switch {
			case up == w.link[i]:
			case up == 1:
				w.log.Info("link up", "port", p.Name)
			default:
				w.log.Warn("link down", "port", p.Name)
			}
			w.link[i] = up
		}
		var s xmit.Stats
		if p.Stats != nil {
			s = p.Stats()
		}
		var e ErrorCounts
		if p.Errors != nil {
			e = p.Errors.Counts()
		}
		old, olds := w.errs[i], w.stats[i]
		if e.Recv > old.Recv || e.Send > old.Send || s.Errors > olds.Errors {
			attrs := []any{"port", p.Name, "recv", e.Recv - old.Recv, "send", e.Send - old.Send, "system", s.Errors - olds.Errors}
			if e.Recv > old.Recv && e.LastRecv != nil {
				attrs = append(attrs, "last_recv_error", e.LastRecv.Error())
			}
			if e.Send > old.Send && e.LastSend != nil {
				attrs = append(attrs, "last_send_error", e.LastSend.Error())
			}
			w.log.Warn("port errors", attrs...)
		}
		if s.TxLost > olds.TxLost {
			w.log.Warn("frames lost after transmission", "port", p.Name, "lost", s.TxLost-olds.TxLost)
		}
		w.errs[i], w.stats[i] = e, s
	}
	if w.src.Neigh != nil {
		w.checkNeigh()
	}
}

func (w *Watcher) checkNeigh() {
	t := w.src.Neigh
	c := t.Counters()
	var failed, resolved []neighKey
	now := map[neighKey]bool{}
	for _, e := range t.Entries() {
		k := neighKey{e.Iface, e.Addr}
		switch {
		case e.State == neigh.StateFailed:
			now[k] = true
			if !w.fail[k] {
				failed = append(failed, k)
			}
		case w.fail[k] && e.State.Valid():
			resolved = append(resolved, k)
		}
	}
	w.fail = now
	old := w.neigh
	if n := c.Failures - old.Failures; n > 0 || len(failed) > 0 {
		w.log.Warn("neighbours failed to resolve", append([]any{"failures", n}, w.list(failed)...)...)
	}
	if len(resolved) > 0 {
		w.log.Info("failed neighbours resolved", w.list(resolved)...)
	}
	if n := c.Conflicts - old.Conflicts; n > 0 {
		w.log.Warn("ARP from another host claiming one of the router's addresses", "frames", n)
	}
	if n := c.MACChanges - old.MACChanges; n > 0 {
		w.log.Info("neighbours changed MAC address", "changes", n)
	}
	if n := c.Refused - old.Refused; n > 0 {
		w.log.Warn("neighbour table full: entries refused", "refused", n)
	}
	w.neigh = c
}

// list names up to MaxListed neighbours as interface/address strings.
func (w *Watcher) list(ks []neighKey) []any {
	var names []string
	for i, k := range ks {
		if i == MaxListed {
			break
		}
		names = append(names, ifaceName(w.src.Stage, k.iface)+"/"+k.addr.String())
	}
	attrs := []any{}
	if len(names) > 0 {
		attrs = append(attrs, "neighbours", names)
	}
	if len(ks) > MaxListed {
		attrs = append(attrs, "more", len(ks)-MaxListed)
	}
	return attrs
}
