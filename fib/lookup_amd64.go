//go:build !purego

package fib

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useStagesAsm: lookupChunks runs the first two stages in lookupStages. Its loops hold every lane's
// state in registers and count bits with POPCNT, where the compiler's code for GOAMD64=v1 keeps a
// CPU-feature branch and a fallback call in front of each popcount and spills around them: about
// half the instructions per address.
var useStagesAsm = cpu.X86.HasPOPCNT

// lookupStages is lookup32Go's first two stages for the n chunks of 32 addresses from a, until
// one has lanes whose walk continues below the first level: it writes to o every lane's next hop
// from its direct-pointing entry or first-level node, and returns how many chunks it did and, for
// the last one, the lanes whose walk continues (deep, lane i in bit i) with st.ent[i] the index of
// their second-level node and st.xs[i] their address. dir and roots are a snapshot's s.dir and
// &s.roots[0] (nil when roots is empty: no entry then points into it). o may be a; n is at least 1.
// While it does a chunk's dp entries it prefetches the next chunk's, which take most of an
// in-table chunk's time when they come from L2 or L3.
//
//go:noescape
func lookupStages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *uint32, n int, st *lanes) (chunks int, deep uint32)

// lookup_amd64.s is written for this layout (table.go): a change there must change it too.
const asmLayoutDiff = uint64(dirBits) ^ 8 | uint64(chunkBits) ^ 10 | uint64(slotShift) ^ 14 | uint64(32-dpBits-6) ^ 8 |
	uint64(nodeBit) ^ (1 << 31) | uint64(kidsBit) ^ (1 << 30) | uint64(rootMask) ^ 0x3fffffff |
	uint64(rootLeafOff) ^ 4 | uint64(kidsLeafOff) ^ 10 | uint64(rootBaseOff) ^ 8 |
	uint64(batchLanes) ^ 32 | uint64(unsafe.Offsetof(lanes{}.xs)) ^ 128

var _ [0]struct{} = [asmLayoutDiff]struct{}{}
