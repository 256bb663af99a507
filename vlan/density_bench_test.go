package vlan

import (
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
)

// The density benchmarks run the batch forms over 64-frame batches in which a share of the frames
// differs from the rest, at random positions (a fixed seed; below share 8/8, frame 0 has the
// batch's main shape, so that the batch forms' first loop is the one chosen for that shape):
//
//   - BenchmarkBatchOOB: frames with an out-of-band tag (frame.FlagVLAN, TPID 0x8100, the bytes
//     untagged: what AF_PACKET reports unless ReinsertVLAN) among 802.1Q-tagged ones, for SetTCI,
//     Pop and Push. This is the default receive case of xmit/afpacket.
//   - BenchmarkBatchMixed: Parse and Pop over 802.1Q batches with 1/8 or 1/2 untagged frames and
//     over untagged batches with 1/8 802.1Q frames (and the uniform batches, for reference).
//
// One op is one frame. Each round restores the descriptors (and, for Pop, the 16 header bytes of
// each frame) before the batch op; that upkeep runs in the benchmark function itself, so
// bench/scripts/irper.sh with the pattern 'vlan\.[^B]' counts the batch forms alone.

const densityN = 64

// densityBatch returns a 64-frame batch (100-byte frames, 64 bytes of headroom, 256 bytes apart)
// whose frames are 802.1Q-tagged (tagged) or untagged, except share (of 8) of them at random
// positions other than 0, which are the other shape (oob: untagged bytes with an out-of-band tag).
func densityBatch(tagged, oob bool, share int) *frame.Batch {
	b := &frame.Batch{Frames: make([]frame.Frame, densityN), Mem: make([]byte, densityN*256)}
	odd := make([]bool, densityN)
	r := rand.New(rand.NewPCG(6, uint64(share)))
	for k := 0; k < share*densityN/8; {
		if i := r.IntN(densityN); share == 8 || (i != 0 && !odd[i]) {
			if !odd[i] {
				odd[i] = true
				k++
			}
		}
	}
	for i := range b.Frames {
		f := &b.Frames[i]
		f.Off, f.Len, f.Head, f.Tail = uint32(i*256+64), 100, 64, 92
		d := b.Mem[f.Off:]
		for j := range 12 {
			d[j] = byte(i + j)
		}
		tag := tagged != (odd[i] && !oob)
		if oob && odd[i] {
			tag = false
			f.Flags |= frame.FlagVLAN
			f.TPID, f.TCI = TPID8021Q, uint16(i)
		}
		if tag {
			d[12], d[13], d[14], d[15], d[16], d[17] = 0x81, 0x00, 0, byte(i), 0x08, 0x00
		} else {
			d[12], d[13] = 0x08, 0x00
		}
	}
	return b
}

var densityShares = []struct {
	name  string
	share int // of 8
}{{"0", 0}, {"1of8", 1}, {"1of4", 2}, {"1of2", 4}, {"all", 8}}

func BenchmarkBatchOOB(b *testing.B) {
	for _, s := range densityShares {
		fb := densityBatch(true, true, s.share)
		b.Run("op=settci/oob="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				if n := SetTCIBatch(fb, 5); n != densityN {
					b.Fatalf("SetTCIBatch: %d of %d", n, densityN)
				}
				done += densityN
			}
			m.Report(b, done)
		})
		benchPop(b, "op=pop/oob="+s.name, fb, densityN)
		b.Run("op=push/oob="+s.name, func(b *testing.B) {
			saved := append([]frame.Frame(nil), fb.Frames...)
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				copy(fb.Frames, saved)
				if d := PushBatch(fb, C(7)); d != 0 {
					b.Fatalf("PushBatch dropped %d", d)
				}
				done += densityN
			}
			m.Report(b, done)
			copy(fb.Frames, saved)
		})
	}
}

// benchPop runs PopBatch over fb, restoring fb's descriptors and header bytes each round; want is
// how many tags a round pops.
func benchPop(b *testing.B, name string, fb *frame.Batch, want int) {
	b.Run(name, func(b *testing.B) {
		saved := append([]frame.Frame(nil), fb.Frames...)
		hdr := make([][16]byte, len(saved))
		for i, f := range saved {
			copy(hdr[i][:], fb.Mem[f.Off:])
		}
		b.ReportAllocs()
		m := benchutil.Start(b)
		done := 0
		for done < b.N {
			copy(fb.Frames, saved)
			for i := range saved {
				copy(fb.Mem[saved[i].Off:saved[i].Off+16], hdr[i][:])
			}
			if n := PopBatch(fb); n != want {
				b.Fatalf("PopBatch: %d of %d", n, want)
			}
			done += densityN
		}
		m.Report(b, done)
		copy(fb.Frames, saved)
		for i := range saved {
			copy(fb.Mem[saved[i].Off:saved[i].Off+16], hdr[i][:])
		}
	})
}

func BenchmarkBatchMixed(b *testing.B) {
	for _, c := range []struct {
		name   string
		tagged bool
		share  int
	}{{"q", true, 0}, {"q_1of8u", true, 1}, {"q_1of2u", true, 4}, {"u", false, 0}, {"u_1of8q", false, 1}} {
		fb := densityBatch(c.tagged, false, c.share)
		b.Run("op=parse/mix="+c.name, func(b *testing.B) {
			hs := make([]Header, densityN)
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				done += ParseBatch(fb, hs)
			}
			m.Report(b, done)
		})
		want := 0
		for i := range fb.Frames {
			if fb.Mem[fb.Frames[i].Off+12] == 0x81 {
				want++
			}
		}
		benchPop(b, "op=pop/mix="+c.name, fb, want)
	}
}
