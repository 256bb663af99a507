package lag

import (
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// Selector chooses members for the frames of one worker. Each worker has its own (NewSelector):
// the round-robin position and the random state are per worker, so no counter, lock or atomic is
// shared between workers. Select reads the aggregate's published member set once per batch (one
// atomic load) and nothing shared per frame.
//
// A Selector is not safe for concurrent use: one goroutine at a time.
type Selector struct {
	a    *Aggregate
	pos  uint32 // round-robin: member index of the current turn
	left uint32 // round-robin: frames left in this turn
	rnd  uint64 // round-robin with random choice: xorshift state
}

// NewSelector returns a Selector for one worker.
func (a *Aggregate) NewSelector() *Selector {
	s := &Selector{a: a, rnd: a.seed.Add(0x9e3779b97f4a7c15)}
	if s.rnd == 0 {
		s.rnd = 1
	}
	return s
}

// Select writes a member index for every frame of b into out[i] (len(out) >= b.Len()): the member
// the aggregate's mode and policy choose, NoMember when no member is usable, AllUsable for every
// frame in Broadcast mode (when some member is usable). It allocates nothing and touches frame bytes
// only for the hash policies.
func (s *Selector) Select(b *frame.Batch, out []uint8) {
	st := s.a.state.Load()
	n := len(b.Frames)
	out = out[:n]
	if st.cnt == 0 {
		for i := range out {
			out[i] = NoMember
		}
		return
	}
	switch s.a.cfg.Mode {
	case RoundRobin:
		s.roundRobin(st, out)
	case ActiveBackup:
		for i := range out {
			out[i] = st.active
		}
	case XOR:
		if pol := s.a.cfg.Policy; n <= 64 { // xor64, inline: the batch loop, no chunking
			if rare := loopFor(st, pol)(st, b.Mem, b.Frames, unsafe.SliceData(out)); rare != 0 {
				xorRare(st, pol, b.Mem, b.Frames, out, rare)
			}
		} else {
			s.xor(st, b, out)
		}
	case Broadcast:
		for i := range out {
			out[i] = AllUsable
		}
	}
}

// roundRobin is bond_xmit_roundrobin_slave_get: the k-th frame of this worker goes to member
// (k / PacketsPerMember) % members, or to the next usable member after it when that one is not
// (bond_get_slave_by_id); PacketsPerMember < 0 picks a random member (packets_per_slave = 0).
func (s *Selector) roundRobin(st *snapshot, out []uint8) {
	nm := uint32(st.n)
	next := &st.next
	pps := s.a.pps
	switch {
	case pps == 1:
		pos := s.pos
		if pos >= nm {
			pos = 0
		}
		for i := range out {
			out[i] = next[pos&(MaxMembers-1)]
			pos++
			if pos == nm {
				pos = 0
			}
		}
		s.pos = pos
	case pps > 1:
		pos, left := s.pos, s.left
		if pos >= nm {
			pos = 0
		}
		if left == 0 || left > uint32(pps) {
			left = uint32(pps)
		}
		for i := range out {
			out[i] = next[pos&(MaxMembers-1)]
			left--
			if left == 0 {
				left = uint32(pps)
				pos++
				if pos == nm {
					pos = 0
				}
			}
		}
		s.pos, s.left = pos, left
	default: // random
		x := s.rnd
		mp, ds := st.mpAll, st.dsAll
		for i := range out {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			out[i] = next[rem(mp, ds, uint32(x>>32))&(MaxMembers-1)]
		}
		s.rnd = x
	}
}

// xor is bond_xmit_3ad_xor_slave_get (usable[hash % count]) or, with Config.Table, the bucket
// table: for every 64 frames, one pass that hashes and chooses (xor64), then the general hash
// path for the frames it left.
func (s *Selector) xor(st *snapshot, b *frame.Batch, out []uint8) {
	pol, mem, fr := s.a.cfg.Policy, b.Mem, b.Frames[:len(out)]
	for len(fr) > 64 {
		xor64(st, pol, mem, fr[:64], out[:64])
		fr, out = fr[64:], out[64:]
	}
	xor64(st, pol, mem, fr, out)
}

// hashFrame is the general path: Hash of frame f of the arena mem.
func hashFrame(pol Policy, mem []byte, f *frame.Frame) uint32 {
	end := f.Off + uint32(f.Len)
	return hashBytes(pol, mem[f.Off:end:end], f.Flags&frame.FlagVLAN != 0, f.TCI)
}
