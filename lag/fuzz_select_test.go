package lag

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// FuzzSelect: no input panics Select in XOR mode, and for every policy, every member count of
// crtCounts and the identity table, the batch loops choose what the general path does. The frame
// is placed at a fuzzed distance from the end of the arena (the loops' header windows then run
// past its end or past the arena's), with fuzzed bytes after it.
func FuzzSelect(f *testing.F) {
	for _, v := range hashVectors {
		f.Add(v.b, v.oob, v.tci, uint8(0), []byte{0xa5, 0x5a})
	}
	f.Fuzz(func(t *testing.T, b []byte, oob bool, tci uint16, slack uint8, after []byte) {
		if len(b) > 1500 {
			b = b[:1500]
		}
		if len(after) > 255 {
			after = after[:255]
		}
		extra := min(int(slack), len(after))
		mem := make([]byte, 64+len(b)+extra)
		copy(mem[64:], b)
		copy(mem[64+len(b):], after[:extra])
		fr := frame.Frame{Off: 64, Len: uint16(len(b)), TCI: tci}
		if oob {
			fr.Flags |= frame.FlagVLAN
		}
		// The same frame five times at the arena's end (one group of four for the unrolled loops,
		// the end-of-arena frame in every position of it, and one frame for the remainder loop),
		// then five times at the arena's start with the window in bounds.
		mem2 := make([]byte, 64+len(b)+80)
		copy(mem2[64:], b)
		copy(mem2[64+len(b):], after)
		checkSelectEqualsGeneral(t, &frame.Batch{Mem: mem, Frames: []frame.Frame{fr, fr, fr, fr, fr}})
		checkSelectEqualsGeneral(t, &frame.Batch{Mem: mem2, Frames: []frame.Frame{fr, fr, fr, fr, fr}})
	})
}
