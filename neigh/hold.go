package neigh

import "github.com/wirespeed/wirespeed/frame"

// Hold takes fwd's Output.Unresolved batch (frames as received, Frame.Meta the next-hop index,
// Frame.Port the ingress interface): it copies each frame, descriptor metadata included, into a
// pool buffer queued on the neighbour of its next hop, releases every original to unresolved's
// owner (unresolved is empty afterwards), and appends a broadcast request to out (a batch of the
// table's pool) for a neighbour whose request is due: the first at once, then one per Retrans.
//
// A frame for a subnet's next hop (AddSubnet) is held for its IPv4 destination, which becomes a
// host with its own next hop and /32 route. A frame whose next hop is neither (HoldNoNeighbour),
// for a subnet but without an IPv4 destination the table can resolve or room for it (HoldNoHost),
// larger than QueueBytes or than a pool buffer (HoldTooBig), or for which the pool has no buffer
// (HoldNoBuffer), is dropped and counted. A queue that is full,
// in frames or bytes, drops its oldest frames to make room. A FAILED neighbour starts resolving
// again (INCOMPLETE), as Linux's does when traffic comes. A neighbour that is already valid (the
// worker read an older next-hop view) takes the frame straight to the ready backlog.
func (t *Table) Hold(unresolved *frame.Batch, out *frame.Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	n := len(unresolved.Frames)
	if n == 0 {
		return
	}
	if t.bufs.Cap() < n {
		t.bufs = frame.NewBatch(n)
	}
	bufs := t.bufs
	got, _ := t.pool.Alloc(bufs, n)
	used := 0
	mem, src := t.pool.Mem(), unresolved.Mem
	room := t.pool.BufSize() - t.pool.Headroom()
	for k := range unresolved.Frames {
		f := &unresolved.Frames[k]
		t.cnt.HoldIn++
		if int(f.Len) > room || int(f.Len) > t.c.QueueBytes {
			t.cnt.HoldTooBig++
			continue
		}
		i, ok := t.bound[f.Meta]
		if !ok {
			ifc, subnet := t.subnets[f.Meta]
			if !subnet {
				t.cnt.HoldNoNeighbour++
				continue
			}
			if used == got {
				t.cnt.HoldNoBuffer++
				continue
			}
			if i, ok = t.glean(f.Data(src), int(f.L3), ifc, f.Meta); !ok {
				t.cnt.HoldNoHost++
				continue
			}
		}
		if used == got {
			t.cnt.HoldNoBuffer++
			continue
		}
		c := bufs.Frames[used]
		used++
		c.Resize(int(f.Len))
		copy(c.Data(mem), f.Data(src))
		c.Flags, c.TPID, c.TCI, c.Port, c.Out, c.L3, c.Meta = f.Flags, f.TPID, f.TCI, f.Port, f.Out, f.L3, f.Meta
		t.cnt.Held++

		host := t.ents[i].host
		t.run(i) // the timers due by now first
		e := &t.ents[i]
		if _, ok := t.subnets[e.via]; host && !e.host && ok {
			t.makeHost(i, e.via) // it failed just now: traffic makes it a host again
		}
		switch e.state {
		case StateFailed:
			t.enterIncomplete(i)
		case StateStale:
			e.updated = t.now
			t.enterDelay(i)
		}
		if e.state.Valid() {
			t.toBacklog(&t.ready, c)
			continue
		}
		t.enqueue(i, c)
		t.run(i) // a request, if one is due
	}
	if used < got {
		t.pool.Release(bufs.Frames[used:got])
	}
	bufs.Reset()
	unresolved.Free()
	t.finish(out)
}

// Poll runs the timers due by now: requests and unicast probes due are appended to out; the frames
// held for neighbours that became valid (REACHABLE, or STALE/DELAY when a request taught their MAC,
// or a static entry) are appended to ready, as received (Frame.Port the ingress interface,
// Frame.Meta the next hop), for the caller to run through fwd again; the frames held for neighbours
// that reached FAILED (or whose entry was removed) are appended to failed, as received, for the
// caller to answer with ICMP host unreachable and release. Entries without next hops are collected
// GCStale after they became STALE or FAILED.
//
// out, ready and failed are batches of the table's pool (an empty batch becomes one; Poll panics on
// a non-empty batch of another arena). Frames that do not fit ready or failed wait for the next
// Poll; requests that do not fit out are counted (GenNoBuffer) and not sent, the state machine going
// on as if they were. Call Poll every few milliseconds from an idle loop (NextTimer says when the
// next timer is due) and after every Input and Hold that may have made frames ready.
func (t *Table) Poll(out *frame.Batch, ready *frame.Batch, failed *frame.Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if t.now >= t.next {
		next := int64(never)
		for i := range t.ents {
			e := &t.ents[i]
			if !e.live {
				continue
			}
			if e.deadline <= t.now {
				t.run(int32(i))
			}
			if e.live && e.deadline < next {
				next = e.deadline
			}
		}
		t.next = next
	}
	t.drain(&t.ready, ready, &t.cnt.Ready, "ready")
	t.drain(&t.failed, failed, &t.cnt.Failed, "failed")
	t.finish(out)
}

// drain moves frames from the backlog q to b while b has room.
func (t *Table) drain(q *fifo, b *frame.Batch, cnt *uint64, what string) {
	if q.n == 0 {
		return
	}
	t.mustOwn(b, what)
	for q.n > 0 && b.Space() > 0 {
		b.Append(q.pop())
		*cnt++
	}
}

// Announce appends to out a gratuitous ARP request (RFC 5227's announcement: sender and target
// address both the router's, broadcast) for each of interface iface's addresses, for when the
// interface comes up or its addresses or MAC change. An unknown interface sends nothing.
func (t *Table) Announce(ifc uint16, out *frame.Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if int(ifc) < len(t.ifaces) {
		for _, p := range t.ifaces[ifc].addrs {
			t.jobs = append(t.jobs, job{kind: jobAnnounce, dst: broadcast, iface: ifc,
				p: arpPacket{op: arpOpRequest, spa: p.addr, tpa: p.addr}})
		}
	}
	t.finish(out)
}
