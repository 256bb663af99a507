//go:build !amd64 || purego

package fib

// useStagesAsm is false where lookup32Stages is not written for the architecture (or the build
// has the purego tag): lookup32 runs lookup32Go.
const useStagesAsm = false

func lookup32Stages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *[batchLanes]uint32, st *lanes) (deep uint32) {
	panic("fib: lookup32Stages without an implementation")
}
