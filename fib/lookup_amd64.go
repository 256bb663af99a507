//go:build !purego

package fib

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useStagesAsm: lookup32 runs its first two stages in lookup32Stages. Its loops hold every lane's
// state in registers and count bits with POPCNT, where the compiler's code for GOAMD64=v1 keeps a
// CPU-feature branch and a fallback call in front of each popcount and spills around them: about
// half the instructions per address.
var useStagesAsm = cpu.X86.HasPOPCNT

// lookup32Stages is lookup32Go's first two stages for the 32 addresses in a: it writes to o every
// lane's next hop from its direct-pointing entry or first-level node, and for the lanes whose walk
// continues below the first level sets their bit in deep, st.ent to the index of their
// second-level node and st.xs to their address. dir and roots are a snapshot's s.dir and
// &s.roots[0] (nil when roots is empty: no entry then points into it). o may be a.
//
//go:noescape
func lookup32Stages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *[batchLanes]uint32, st *lanes) (deep uint32)

// lookup_amd64.s is written for this layout (table.go): a change there must change it too.
const asmLayoutDiff = uint64(dirBits) ^ 8 | uint64(chunkBits) ^ 10 | uint64(slotShift) ^ 14 | uint64(32-dpBits-6) ^ 8 |
	uint64(nodeBit) ^ (1 << 31) | uint64(kidsBit) ^ (1 << 30) | uint64(rootMask) ^ 0x3fffffff |
	uint64(rootLeafOff) ^ 4 | uint64(kidsLeafOff) ^ 10 | uint64(rootBaseOff) ^ 8 |
	uint64(batchLanes) ^ 32 | uint64(unsafe.Offsetof(lanes{}.xs)) ^ 128

var _ [0]struct{} = [asmLayoutDiff]struct{}{}
