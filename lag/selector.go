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
	pos  uint32   // round-robin: member index of the current turn
	left uint32   // round-robin: frames left in this turn
	rnd  uint64   // round-robin with random choice: xorshift state
	hs   []uint32 // xor: the batch's hashes
	slow []int32  // xor: frames of the batch left to the general hash path
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
// The bulk of real traffic is hashed inline here: Ethernet with at most one in-band tag (taken as the
// kernel's accelerated tag unless one is already out of band) and, for the L3 policies, IPv4 with a
// 20-byte header that is not a fragment or IPv6 without extension headers, carrying TCP or UDP. For
// those frames every L3 policy (layer2+3, layer3+4 and the encap forms, whose flow dissector finds
// nothing more inside TCP or UDP) is the same fold of the addresses with the MACs or the ports.
// Every other frame takes the general path (hashFrame). TestDistributionMatchesKernel checks the
// result against the naive transcription of the kernel for every policy.
func (s *Selector) hashBatch(b *frame.Batch, n int) []uint32 {
	if cap(s.hs) < n {
		s.hs = make([]uint32, n) // once per selector (batches do not grow)
		s.slow = make([]int32, n)
	}
	hs := s.hs[:n]
	// Frames the inline pass cannot hash are listed in slow and hashed afterwards: keeping the call
	// to the general path out of the loop keeps the loop's state in registers.
	slow := s.slow[:n]
	ns := 0
	pol := s.a.cfg.Policy
	mem := b.Mem
	fr := b.Frames[:n]
	switch pol {
	case Layer2:
		for i := range fr {
			f := &fr[i]
			off := int(f.Off)
			if f.Len < 18 || off+18 > len(mem) {
				slow[ns] = int32(i)
				ns++
				continue
			}
			d := (*[18]byte)(mem[off : off+18]) // one bounds check for the whole header
			t := binary.BigEndian.Uint16(d[12:14])
			if (t == ethVLAN || t == ethQinQ) && f.Flags&frame.FlagVLAN == 0 {
				t = binary.BigEndian.Uint16(d[16:18])
			}
			hs[i] = uint32(d[5]^d[11]) ^ uint32(t)
		}
	case Layer23, Layer34, Encap23, Encap34:
		ports := pol == Layer34 || pol == Encap34
		var shift uint32
		if ports {
			shift = 1 // commit 49aefd131739
		}
		for i := range fr {
			f := &fr[i]
			off := int(f.Off)
			// The window is 68 bytes: Ethernet, one tag and 48 bytes of network header. It may run
			// past the frame's end into its own buffer or ring slot, but only bytes inside the frame
			// decide anything (Len >= 60 covers IPv4; IPv6 checks its length below).
			if f.Len < 60 || off+68 > len(mem) {
				slow[ns] = int32(i)
				ns++
				continue
			}
			w := (*[68]byte)(mem[off : off+68]) // one bounds check for the whole header
			l2 := uint32(w[5] ^ w[11])
			t := uint32(w[12])<<8 | uint32(w[13])
			nh := 14
			if (t == ethVLAN || t == ethQinQ) && f.Flags&frame.FlagVLAN == 0 {
				t = uint32(w[16])<<8 | uint32(w[17])
				nh = 18
			}
			ip := (*[48]byte)(w[nh : nh+48])
			var src, dst, l4 uint32
			if q := binary.LittleEndian.Uint64(ip[0:8]); t == ethIPv4 && q&0xff3f_0000_0000_00ff == 0x45 && l4Fast[ip[9]] {
				// IPv4, 20-byte header, not a fragment (MF and offset zero), TCP or UDP.
				src = binary.LittleEndian.Uint32(ip[12:16])
				dst = binary.LittleEndian.Uint32(ip[16:20])
				l4 = binary.LittleEndian.Uint32(ip[20:24])
			} else if t == ethIPv6 && l4Fast[ip[6]] && nh+44 <= int(f.Len) {
				// IPv6 whose next header is TCP or UDP; ipv6_addr_hash of each address.
				s := binary.LittleEndian.Uint64(ip[8:16]) ^ binary.LittleEndian.Uint64(ip[16:24])
				d := binary.LittleEndian.Uint64(ip[24:32]) ^ binary.LittleEndian.Uint64(ip[32:40])
				src = uint32(s) ^ uint32(s>>32)
				dst = uint32(d) ^ uint32(d>>32)
				l4 = binary.LittleEndian.Uint32(ip[40:44])
			} else {
				slow[ns] = int32(i)
				ns++
				continue
			}
			h := l2 ^ t
			if ports {
				h = l4
			}
			h ^= src ^ dst
			h ^= h >> 16
			h ^= h >> 8
			hs[i] = h >> shift
		}
	case VLANSrcMAC:
		for i := range fr {
			f := &fr[i]
			off, end := int(f.Off), int(f.Off)+int(f.Len)
			if f.Len < 18 || end > len(mem) {
				slow[ns] = int32(i)
				ns++
				continue
			}
			d := mem[off:end:end]
			var tci uint32
			if f.Flags&frame.FlagVLAN != 0 {
				tci = uint32(f.TCI)
			} else if t := binary.BigEndian.Uint16(d[12:14]); t == ethVLAN || t == ethQinQ {
				tci = uint32(binary.BigEndian.Uint16(d[14:16]))
			}
			hs[i] = tci ^ uint32(d[6])<<16 ^ uint32(d[7])<<8 ^ uint32(d[8]) ^ uint32(d[9])<<16 ^ uint32(d[10])<<8 ^ uint32(d[11])
		}
	default:
		for i := range fr {
			hs[i] = hashFrame(pol, mem, &fr[i])
		}
	}
	for _, i := range slow[:ns] {
		hs[i] = hashFrame(pol, mem, &fr[i])
	}
	return hs
}

// l4Fast marks the IP protocols the batch pass hashes inline: TCP and UDP.
var l4Fast = [256]bool{protoTCP: true, protoUDP: true}

func hashFrame(pol Policy, mem []byte, f *frame.Frame) uint32 {
	end := f.Off + uint32(f.Len)
	return hashBytes(pol, mem[f.Off:end:end], f.Flags&frame.FlagVLAN != 0, f.TCI)
}
