package app

import (
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Resolver runs a neighbour table beside one worker: it hands the worker's local frames (ARP) and
// the frames of unresolved next hops to the table, sends the ARP frames the table makes with their
// interface's L2 header (VLAN tags included), routes the frames the table held once their neighbour
// resolves (fwd.Worker.Resume) and answers those of neighbours that failed with ICMP host
// unreachable (fwd.Worker.Unreachable). One per worker, used from the worker's goroutine; the table
// itself may be shared by every worker's resolver. It allocates nothing per batch.
type Resolver struct {
	Table *neigh.Table
	demux *vlan.Demux
	vw    *vlan.Worker

	arp, ready, failed *frame.Batch   // in the table's pool
	byPort             []*frame.Batch // ARP frames by physical port, in the table's pool

	Discarded uint64 // local frames other than ARP, released: no local stack takes them
	ARPDrops  uint64 // ARP frames that could not be given their interface's header
}

// NewResolver returns a resolver for a worker of a router over demux whose batches hold at most
// batch frames.
func NewResolver(t *neigh.Table, demux *vlan.Demux, batch int) *Resolver {
	r := &Resolver{Table: t, demux: demux, vw: demux.NewWorker()}
	n := max(batch, 256)
	// Held frames go back through the worker, a batch at a time; ARP frames only need sending.
	r.arp, r.ready, r.failed = frame.NewBatch(n), frame.NewBatch(batch), frame.NewBatch(batch)
	for range demux.Ports() {
		r.byPort = append(r.byPort, frame.NewBatch(n))
	}
	return r
}

// Take empties o's local and unresolved batches: ARP goes to the table, other local frames are
// released (counted in Discarded), unresolved frames are held.
func (r *Resolver) Take(o *fwd.Output) {
	if len(o.Local.Frames) > 0 {
		r.Table.Input(o.Local, r.arp)
		r.Discarded += uint64(len(o.Local.Frames))
		o.Local.Free()
	}
	if len(o.Unresolved.Frames) > 0 {
		r.Table.Hold(o.Unresolved, r.arp)
	}
}

// Step is one batch through w and the table: Process, the table's share of the output, the rest
// sent on ports (indexed by physical port), then what the table made ready.
func (r *Resolver) Step(w *fwd.Worker, port uint16, in *frame.Batch, ports []xmit.Port) {
	o := w.Process(port, in)
	local := len(o.Local.Frames)
	r.Take(o)
	SendOutput(o, ports)
	if local > 0 || len(r.arp.Frames) > 0 {
		r.Poll(w, ports) // a reply may have resolved held frames: send them now
	}
}

// pollRounds bounds the batches of held frames one Poll hands back to the worker.
const pollRounds = 64

// Poll runs the table's timers, routes what it made ready, answers what failed, and sends the ARP
// frames it made. Held frames go back to the worker a batch at a time, as many batches as the
// table has ready (up to pollRounds; the rest wait for the next Poll). Call it every few
// milliseconds when idle.
func (r *Resolver) Poll(w *fwd.Worker, ports []xmit.Port) {
	for range pollRounds {
		r.Table.Poll(r.arp, r.ready, r.failed)
		more := r.ready.Space() == 0 || r.failed.Space() == 0 // the backlogs may hold more
		if len(r.ready.Frames) > 0 {
			o := w.Resume(r.ready)
			r.Take(o)
			SendOutput(o, ports)
		}
		if len(r.failed.Frames) > 0 {
			SendOutput(w.Unreachable(r.failed), ports)
		}
		r.sendARP(ports)
		if !more {
			return
		}
	}
}

// sendARP gives each ARP frame the table made its interface's L2 header and sends them by port.
func (r *Resolver) sendARP(ports []xmit.Port) {
	b := r.arp
	if len(b.Frames) == 0 {
		return
	}
	for _, o := range r.byPort {
		o.Adopt(b)
	}
	for i := range b.Frames {
		f := &b.Frames[i]
		d := f.Data(b.Mem)
		rw, err := r.demux.Rewrite(f.Out, frame.MAC(d[0:6]), frame.MAC(d[6:12]), frame.TypeARP)
		if err != nil || int(rw.Port()) >= len(ports) || r.vw.Apply(b, i, &rw) != nil {
			r.ARPDrops++
			b.Owner.Release(b.Frames[i : i+1])
			continue
		}
		r.byPort[rw.Port()].Append(*f)
	}
	b.Reset()
	for p, o := range r.byPort {
		if len(o.Frames) > 0 {
			ports[p].Send(o)
		}
	}
}

// Announce sends gratuitous ARP for every interface of the demux, each on its physical port with
// its tags (at start, or when an address changes).
func (r *Resolver) Announce(ports []xmit.Port) {
	for _, id := range r.demux.Interfaces() {
		r.Table.Announce(id, r.arp)
		if len(r.arp.Frames) > r.arp.Cap()/2 {
			r.sendARP(ports)
		}
	}
	r.sendARP(ports)
}

// Flush publishes the resolver's interface counters (ARP frames sent).
func (r *Resolver) Flush() { r.vw.Flush() }

// SendOutput sends every egress and generated batch of o on its port.
func SendOutput(o *fwd.Output, ports []xmit.Port) {
	for p := range o.Egress {
		if len(o.Egress[p].Frames) > 0 {
			ports[p].Send(o.Egress[p])
		}
		if len(o.Generated[p].Frames) > 0 {
			ports[p].Send(o.Generated[p])
		}
	}
}
