package lag

import (
	"encoding/binary"
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
	hs   []uint32
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
		s.xor(st, b, out)
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
		m := st.mAll
		for i := range out {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			out[i] = next[fastmod(uint32(x>>32), m, nm)&(MaxMembers-1)]
		}
		s.rnd = x
	}
}

// xor is bond_xmit_3ad_xor_slave_get (usable[hash % count]) or, with Config.Table, the bucket table.
// The hashes of the whole batch come first (hashBatch), then the member choice.
func (s *Selector) xor(st *snapshot, b *frame.Batch, out []uint8) {
	hs := s.hashBatch(b, len(out))
	if t := st.table; t != nil {
		for i, h := range hs {
			out[i] = t[Bucket(h)]
		}
		return
	}
	usable := st.usable
	cnt, m := st.cnt, st.m
	if cnt&(cnt-1) == 0 {
		mask := cnt - 1
		for i, h := range hs {
			out[i] = usable[h&mask]
		}
		return
	}
	for i, h := range hs {
		out[i] = usable[fastmod(h, m, cnt)]
	}
}

// hashBatch hashes the first n frames of b with the aggregate's policy into the selector's scratch.
// The bulk of real traffic takes fastHash; every other frame the general path (hashFrame).
// TestDistributionMatchesKernel checks the result against the naive transcription of the kernel for
// every policy.
func (s *Selector) hashBatch(b *frame.Batch, n int) []uint32 {
	if cap(s.hs) < n {
		s.hs = make([]uint32, n) // once per selector (batches do not grow)
	}
	hs := s.hs[:n]
	pol := s.a.cfg.Policy
	mem := b.Mem
	fr := b.Frames[:n]
	switch pol {
	case Layer2, Layer23, Layer34:
		for i := range fr {
			f := &fr[i]
			if h, ok := fastHash(pol, mem, f); ok {
				hs[i] = h
				continue
			}
			hs[i] = hashFrame(pol, mem, f)
		}
	default:
		for i := range fr {
			hs[i] = hashFrame(pol, mem, &fr[i])
		}
	}
	return hs
}

func hashFrame(pol Policy, mem []byte, f *frame.Frame) uint32 {
	end := f.Off + uint32(f.Len)
	return hashBytes(pol, mem[f.Off:end:end], f.Flags&frame.FlagVLAN != 0, f.TCI)
}

// fastHash is hashBytes for layer2, layer2+3 and layer3+4 on the common frames: Ethernet with at
// most one in-band tag (skipped as the kernel's accelerated tag, unless one was already out of
// band), and for the L3 policies IPv4 TCP/UDP with a 20-byte header that is not a fragment. ok is
// false for anything else.
func fastHash(pol Policy, mem []byte, f *frame.Frame) (h uint32, ok bool) {
	const maxNeed = frame.EtherLen + 4 + 20 + 4 // Ethernet, one tag, IPv4 without options, the ports
	if f.Len < maxNeed || f.Off+maxNeed > uint32(len(mem)) {
		return 0, false
	}
	d := mem[f.Off : f.Off+maxNeed]
	off := 12
	if t := binary.BigEndian.Uint16(d[12:14]); (t == ethVLAN || t == ethQinQ) && f.Flags&frame.FlagVLAN == 0 {
		off = 16
	}
	et := binary.BigEndian.Uint16(d[off : off+2])
	l2 := uint32(d[5]^d[11]) ^ uint32(et)
	if pol == Layer2 {
		return l2, true
	}
	ip := d[off+2 : off+2+24]
	if et != ethIPv4 || ip[0] != 0x45 || ip[6]&0x3f|ip[7] != 0 || (ip[9] != protoTCP && ip[9] != protoUDP) {
		return 0, false
	}
	if pol == Layer23 {
		h = l2
	} else {
		h = binary.LittleEndian.Uint32(ip[20:24])
	}
	h ^= binary.LittleEndian.Uint32(ip[12:16]) ^ binary.LittleEndian.Uint32(ip[16:20])
	h ^= h >> 16
	h ^= h >> 8
	if pol == Layer34 {
		h >>= 1
	}
	return h, true
}
