//go:build !amd64 || purego

package fib

// useStagesAsm is false where lookupStages is not written for the architecture (or the build
// has the purego tag): lookupChunks runs lookup32Go.
const useStagesAsm = false

func lookupStages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *uint32, n int, st *lanes) (chunks int, deep uint32) {
	panic("fib: lookupStages without an implementation")
}
