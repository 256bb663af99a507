package dsa

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/unroll"
)

// TestUnrolled: batch_x4.go is what internal/unroll makes of batch.go and the tag_*.go files
// (go generate ./dsa rewrites it).
func TestUnrolled(t *testing.T) {
	want, err := unroll.DSA.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(unroll.DSA.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("batch_x4.go is stale: run go generate ./dsa")
	}
}

// codecOf is the codec of the registry entry name.
func codecOf(t *testing.T, name string) *codec {
	for i := range codecs {
		if codecs[i].spec.Name == name {
			return &codecs[i]
		}
	}
	t.Fatalf("no codec %s", name)
	return nil
}

// TestLoopsEqualUnrolled: every batch loop of batch.go and the tag_*.go files (the source of
// batch_x4.go, which only the generator and this test run) does to the frames, the Infos, the
// Reasons and the arena what its unrolled copy does, on packed arenas (packedArena: valid,
// damaged and random frames of the loop's format, small rooms, the last frame at the arena's end)
// of every length from 0 to 70 (every remainder and several iterations), with random tag words
// for the encode loops.
func TestLoopsEqualUnrolled(t *testing.T) {
	type dec func(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, c *codec)
	type enc func(x4 bool, mem []byte, fr []frame.Frame, rs []Reason, a uint64)
	loops := []struct {
		name, tagger string
		src, x4      dec
		enc          enc
	}{
		{"decTail1Batch", "ksz8795", decTail1Batch, decTail1Batchx4, nil},
		{"encSA4Batch", "lan9303", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			short := []uint16{minFrame, 60}[a>>63]
			if x4 {
				encSA4Batchx4(m, f, rs, uint32(a), short)
			} else {
				encSA4Batch(m, f, rs, uint32(a), short)
			}
		}},
		{"encPrefixBatch", "gswip", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			n := []int{2, 4}[a>>63]
			if x4 {
				encPrefixBatchx4(m, f, rs, uint32(a), n)
			} else {
				encPrefixBatch(m, f, rs, uint32(a), n)
			}
		}},
		{"encTail1Batch", "ksz8795", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encTail1Batchx4(m, f, rs, uint32(uint8(a)), uint32(uint8(a>>8)))
			} else {
				encTail1Batch(m, f, rs, uint32(uint8(a)), uint32(uint8(a>>8)))
			}
		}},
		{"dec8021QBatch", "ocelot-8021q", dec8021QBatch, dec8021QBatchx4, nil},
		{"decAR9331Batch", "ar9331", decAR9331Batch, decAR9331Batchx4, nil},
		{"decBrcmBatch", "brcm", decBrcmBatch, decBrcmBatchx4, nil},
		{"decBrcmPrependBatch", "brcm-prepend", decBrcmPrependBatch, decBrcmPrependBatchx4, nil},
		{"encBrcmBatch", "brcm", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encBrcmBatchx4(m, f, rs, uint32(a))
			} else {
				encBrcmBatch(m, f, rs, uint32(a))
			}
		}},
		{"encBrcmPrependBatch", "brcm-prepend", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encBrcmPrependBatchx4(m, f, rs, uint32(a))
			} else {
				encBrcmPrependBatch(m, f, rs, uint32(a))
			}
		}},
		{"decGSWIPBatch", "gswip", decGSWIPBatch, decGSWIPBatchx4, nil},
		{"decKSZBatch", "ksz9477", decKSZBatch, decKSZBatchx4, nil},
		{"encTail2Batch", "ksz9477", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encTail2Batchx4(m, f, rs, uint16(a), uint16(a>>16))
			} else {
				encTail2Batch(m, f, rs, uint16(a), uint16(a>>16))
			}
		}},
		{"decLAN9303Batch", "lan9303", decLAN9303Batch, decLAN9303Batchx4, nil},
		{"decDSABatch", "dsa", decDSABatch, decDSABatchx4, nil},
		{"decEDSABatch", "edsa", decEDSABatch, decEDSABatchx4, nil},
		{"encDSABatch", "dsa", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encDSABatchx4(m, f, rs, uint32(a))
			} else {
				encDSABatch(m, f, rs, uint32(a))
			}
		}},
		{"encEDSABatch", "edsa", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encEDSABatchx4(m, f, rs, a)
			} else {
				encEDSABatch(m, f, rs, a)
			}
		}},
		{"decMTKBatch", "mtk", decMTKBatch, decMTKBatchx4, nil},
		{"encMTKBatch", "mtk", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			short := uint16(minFrame + a>>58) // minFrame..minFrame+63
			if x4 {
				encMTKBatchx4(m, f, rs, uint32(a)&0x3f00, short)
			} else {
				encMTKBatch(m, f, rs, uint32(a)&0x3f00, short)
			}
		}},
		{"decNoneBatch", "none", decNoneBatch, decNoneBatchx4, nil},
		{"decQCABatch", "qca", decQCABatch, decQCABatchx4, nil},
		{"encQCABatch", "qca", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encQCABatchx4(m, f, rs, uint16(a))
			} else {
				encQCABatch(m, f, rs, uint16(a))
			}
		}},
		{"decRTL4ABatch", "rtl4a", decRTL4ABatch, decRTL4ABatchx4, nil},
		{"decRTL84Batch", "rtl8_4", decRTL84Batch, decRTL84Batchx4, nil},
		{"decRTL84TBatch", "rtl8_4t", decRTL84TBatch, decRTL84TBatchx4, nil},
		{"encRTL84Batch", "rtl8_4", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encRTL84Batchx4(m, f, rs, a)
			} else {
				encRTL84Batch(m, f, rs, a)
			}
		}},
		{"encTail8Batch", "rtl8_4t", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encTail8Batchx4(m, f, rs, a)
			} else {
				encTail8Batch(m, f, rs, a)
			}
		}},
		{"decTrailerBatch", "trailer", decTrailerBatch, decTrailerBatchx4, nil},
		{"encTail4Batch", "trailer", nil, nil, func(x4 bool, m []byte, f []frame.Frame, rs []Reason, a uint64) {
			if x4 {
				encTail4Batchx4(m, f, rs, uint32(a))
			} else {
				encTail4Batch(m, f, rs, uint32(a))
			}
		}},
	}
	srcs, err := unroll.DSA.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	_, names, err := unroll.DSA.Loops(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range loops {
		have[l.name] = true
	}
	for _, n := range names {
		if !have[n] {
			t.Errorf("loop %s not tested here", n)
		}
	}
	if len(loops) != len(names) {
		t.Errorf("%d loops here, %d generated", len(loops), len(names))
	}
	r := rand.New(rand.NewPCG(70, 4))
	rounds := 4
	if testing.Short() {
		rounds = 1
	}
	for _, l := range loops {
		c := codecOf(t, l.tagger)
		fast, slow := 0, 0
		for n := 0; n <= 70; n++ {
			for range rounds {
				src := packedArena(r, l.tagger, n)
				gen := cloneArena(src)
				// One spare Info and Reason past the batch: neither loop may write it.
				sIns, sRs := make([]Info, n+1), make([]Reason, n+1)
				for k := range sIns {
					sIns[k] = Info{Port: 0xeeee, TagLen: 0xee}
					sRs[k] = 0xee
				}
				gIns, gRs := append([]Info(nil), sIns...), append([]Reason(nil), sRs...)
				if l.enc == nil {
					l.src(src.Mem, src.Frames, sIns[:n], sRs[:n], c)
					l.x4(gen.Mem, gen.Frames, gIns[:n], gRs[:n], c)
				} else {
					a := r.Uint64()
					l.enc(false, src.Mem, src.Frames, sRs[:n], a)
					l.enc(true, gen.Mem, gen.Frames, gRs[:n], a)
				}
				if !slices.Equal(src.Frames, gen.Frames) || !slices.Equal(sIns, gIns) || !slices.Equal(sRs, gRs) ||
					!bytes.Equal(src.Mem[:cap(src.Mem)], gen.Mem[:cap(gen.Mem)]) {
					t.Fatalf("%s, %d frames: the loop and its unrolled copy differ\nframes %v\n       %v\ninfos %v\n      %v\nreasons %v\n        %v",
						l.name, n, src.Frames, gen.Frames, sIns, gIns, sRs, gRs)
				}
				for _, x := range sRs[:n] {
					if x == reasonSlow {
						slow++
					} else {
						fast++
					}
				}
			}
		}
		if fast == 0 || slow == 0 {
			t.Errorf("%s: %d frames on the fast path, %d left to the slow one: want both", l.name, fast, slow)
		}
	}
}
