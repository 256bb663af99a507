package afpacket

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// synthRing is a TPACKET_V3 receive ring built in memory, block by block, as the kernel lays one
// out (with faults injected on request), for testing Recv's walk without a socket.
type synthRing struct {
	p    *Port
	want []frame.Frame // what a naive walk of the blocks hands out, in order
	bad  int           // frames it drops

	exact   bool // fill: the last frame of a block ends exactly at the block's end when it can
	hostile bool // fill: sometimes a block's blk_len (which only bounds Recv's read-ahead) is nonsense
}

func newSynthRing(blockSize, nblocks uint32, port uint16) *synthRing {
	p := &Port{ring: make([]byte, blockSize*nblocks), blockSize: blockSize, nblocks: nblocks,
		blocks: make([]blockRef, nblocks)}
	p.cfg.PortID = port
	return &synthRing{p: p}
}

// fill writes frames of the given sizes into block blk (as many as fit) and hands it to user space;
// fault(i) returns which fault to put in frame i (0: none). It returns how many sizes it used.
func (s *synthRing) fill(rng *rand.Rand, blk uint32, sizes []int, fault func(i int) int) int {
	p := s.p
	base := blk * p.blockSize
	b := p.ring[base : base+p.blockSize]
	clear(b)
	off := uint32(blkDescLen)
	var offs []uint32
	for _, sz := range sizes {
		mac := uint32(pktHdrLen + RingHeadroom)
		if off+mac+uint32(sz) > p.blockSize {
			if !s.exact || off+mac+14 > p.blockSize {
				break
			}
			sz = int(p.blockSize - off - mac) // the block's last byte is this frame's last byte
		}
		h := b[off:]
		ne.PutUint32(h[pktSnaplenOff:], uint32(sz))
		ne.PutUint32(h[pktLenOff:], uint32(sz))
		ne.PutUint16(h[pktMacOff:], uint16(mac))
		if rng.IntN(4) == 0 {
			st := uint32(tpStatusVLAN)
			if rng.IntN(2) == 0 {
				st |= tpStatusVLANTPID
				ne.PutUint16(h[pktVlanTPIDOff:], 0x88a8)
			}
			ne.PutUint32(h[pktStatusOff:], st)
			ne.PutUint32(h[pktVlanTCIOff:], uint32(rng.IntN(1<<16)))
		}
		for i := range sz {
			b[off+mac+uint32(i)] = byte(i)
		}
		offs = append(offs, off)
		off = (off + mac + uint32(sz) + 15) &^ 15
	}
	for i, o := range offs {
		next := uint32(0)
		if i+1 < len(offs) {
			next = offs[i+1] - o
		}
		h := b[o:]
		switch fault(i) {
		case faultChain:
			next = uint32(rng.IntN(pktHdrLen)) // points inside its own header
			switch {
			case rng.IntN(3) == 0:
				next = p.blockSize // past the block
			case i > 0 && rng.IntN(2) == 0:
				next = offs[rng.IntN(i)] - o // back to an earlier header (wraps around as a uint32)
			}
		case faultFrame:
			switch rng.IntN(3) {
			case 0:
				ne.PutUint32(h[pktLenOff:], ne.Uint32(h[pktSnaplenOff:])+1) // truncated
			case 1:
				ne.PutUint16(h[pktMacOff:], uint16(rng.IntN(pktHdrLen))) // data inside the header
			case 2:
				ne.PutUint32(h[pktSnaplenOff:], p.blockSize) // longer than the room it has
				ne.PutUint32(h[pktLenOff:], p.blockSize)
			}
		}
		ne.PutUint32(h[pktNextOff:], next)
	}
	ne.PutUint32(b[blkNumPktsOff:], uint32(len(offs)))
	ne.PutUint32(b[blkFirstOff:], blkDescLen)
	used := off
	if s.hostile && rng.IntN(2) == 0 {
		bs := p.blockSize
		bad := []uint32{0, 1, 47, bs - 1, bs, bs + 1, bs + 64, bs + 4096, 2 * bs, 1 << 31, 0xffffffff}
		used = bad[rng.IntN(len(bad))]
	}
	ne.PutUint32(b[blkLenOff:], used)
	s.expect(blk)
	atomic.StoreUint32(p.word(base+blkStatusOff), tpStatusUser)
	return len(offs)
}

// expect walks block blk naively, one frame at a time, as Recv must: the oracle.
func (s *synthRing) expect(blk uint32) {
	p := s.p
	base := blk * p.blockSize
	blkEnd := base + p.blockSize
	num := ne.Uint32(p.ring[base+blkNumPktsOff:])
	off := base + ne.Uint32(p.ring[base+blkFirstOff:])
	for i := range num {
		h := p.ring[off : off+pktHdrLen]
		left := num - i - 1
		limit := blkEnd
		if left > 0 {
			next := ne.Uint32(h[pktNextOff:])
			if next < pktHdrLen || uint64(off)+uint64(next) > uint64(blkEnd)-pktHdrLen {
				s.bad += int(left) + 1
				return
			}
			limit = off + next
		}
		snap, wire, mac := ne.Uint32(h[pktSnaplenOff:]), ne.Uint32(h[pktLenOff:]), uint32(ne.Uint16(h[pktMacOff:]))
		start, end := uint64(off)+uint64(mac), uint64(off)+uint64(mac)+uint64(snap)
		if mac < pktHdrLen || end > uint64(limit) || snap != wire || snap > 0xffff {
			s.bad++
		} else {
			f := frame.Frame{Off: uint32(start), Buf: blk, Len: uint16(snap), Head: uint16(mac - pktHdrLen),
				Tail: uint16(min(uint64(limit)-end, 0xffff)), Port: s.p.cfg.PortID}
			if st := ne.Uint32(h[pktStatusOff:]); st&tpStatusVLAN != 0 {
				f.Flags, f.TPID, f.TCI = frame.FlagVLAN, frame.TypeVLAN, uint16(ne.Uint32(h[pktVlanTCIOff:]))
				if st&tpStatusVLANTPID != 0 {
					f.TPID = ne.Uint16(h[pktVlanTPIDOff:])
				}
			}
			s.want = append(s.want, f)
		}
		off = limit
	}
}

// TestWalkMatchesNaive fills in-memory rings with frames of many sizes (small ones, which Recv reads
// ahead of its walk, and large ones, which it does not; mixed within blocks), with and without
// faults, receives them in batches of random sizes and compares every descriptor and the drop count
// with a naive walk of the same blocks; each block must go back to the kernel once its frames are
// freed.
func TestWalkMatchesNaive(t *testing.T) {
	for _, c := range []struct {
		name    string
		maxSize int
		faults  bool
	}{
		{"small", 128, false},
		{"imix", 1500, false},
		{"large", 9000, false},
		{"small-faults", 128, true},
		{"imix-faults", 1500, true},
		{"large-faults", 9000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.maxSize)))
			for round := range 20 {
				const bs, nb = 4 * 4096, 8
				s := newSynthRing(bs, nb, uint16(round))
				// Blocks filled to their last byte (also the ring's, in the last block) and, with
				// faults, nonsense blk_len values: the read-ahead must stay inside the block.
				s.exact, s.hostile = round%2 == 1, c.faults
				for blk := range uint32(nb) {
					var sizes []int
					for range 1000 {
						sizes = append(sizes, 14+rng.IntN(c.maxSize-13))
					}
					s.fill(rng, blk, sizes, func(int) int {
						if c.faults && rng.IntN(40) == 0 {
							return 1 + rng.IntN(2)
						}
						return 0
					})
				}
				var got []frame.Frame
				for {
					b := frame.NewBatch(1 + rng.IntN(64))
					n, err := s.p.Recv(b)
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						break
					}
					got = append(got, b.Frames...)
					b.Free()
				}
				if len(got) != len(s.want) {
					t.Fatalf("round %d: %d frames, naive walk %d", round, len(got), len(s.want))
				}
				for i := range got {
					if got[i] != s.want[i] {
						t.Fatalf("round %d frame %d: %+v, naive walk %+v", round, i, got[i], s.want[i])
					}
				}
				st := s.p.c.Stats()
				if st.RxPackets != uint64(len(s.want)) || st.RxDropped != uint64(s.bad) {
					t.Fatalf("round %d: stats %+v, want %d frames, %d dropped", round, st, len(s.want), s.bad)
				}
				for blk := range uint32(nb) {
					if st := atomic.LoadUint32(s.p.word(blk*bs + blkStatusOff)); st != tpStatusKernel {
						t.Fatalf("round %d: block %d status %#x after every frame was freed", round, blk, st)
					}
				}
				if h := s.p.held.Load(); h != 0 {
					t.Fatalf("round %d: %d blocks held", round, h)
				}
			}
		})
	}
}
