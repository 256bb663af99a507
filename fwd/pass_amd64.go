//go:build !purego && !fwd_portable

package fwd

import (
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// rxLoop and txLoop in assembly: the same tests in the same order as rxLoopGo and txLoopGo, each a
// compare and branch on a byte or word read from memory where the compiler's code loads, shifts
// and merges them, the loop's offsets scaled by the addressing mode, and the invariants in
// registers (no spills): about two thirds of the Go forms' instructions per frame.

//go:noescape
func rxLoop(fe unsafe.Pointer, p, q int, t *portTab) (int, int)

//go:noescape
func txLoop(fe, ne unsafe.Pointer, p int, ab unsafe.Pointer, na uint64, mp unsafe.Pointer) int

// prefetchFrames asks for the first cache line of each frame of fr in the arena at mem (a prefetch
// never faults, whatever the descriptor says). rxLoop's first read of a frame's bytes is the miss of
// the batch: a frame the kernel has just written on another core. Asked for all at once, the lines
// arrive in parallel; left to the loop, a few frames' misses overlap at most.
//
//go:noescape
func prefetchFrames(mem unsafe.Pointer, fr []frame.Frame)

// pass_amd64.s is written for these layouts and constants: a change to any must change it too.
const passLayoutDiff = uint64(unsafe.Offsetof(portTab{}.mp)) | uint64(unsafe.Offsetof(portTab{}.memLim)) ^ 8 | uint64(unsafe.Offsetof(portTab{}.de)) ^ 16 |
	uint64(unsafe.Offsetof(portTab{}.cls)) ^ 24 | uint64(unsafe.Offsetof(portTab{}.rxPackets)) ^ 0x8020 |
	uint64(unsafe.Offsetof(portTab{}.rxBytes)) ^ 0x10028 | uint64(unsafe.Offsetof(portTab{}.filter)) ^ 0x18030 |
	uint64(unsafe.Offsetof(portTab{}.martian)) ^ 0x1a030 | uint64(len(portTab{}.filter)) ^ 1024 | clsUntagged ^ 4096 |
	uint64(unsafe.Offsetof(frame.Frame{}.Off)) | uint64(unsafe.Offsetof(frame.Frame{}.Len)) ^ 8 | uint64(unsafe.Offsetof(frame.Frame{}.Head)) ^ 10 |
	uint64(unsafe.Offsetof(frame.Frame{}.Flags)) ^ 16 | uint64(unsafe.Offsetof(frame.Frame{}.Port)) ^ 22 |
	uint64(unsafe.Offsetof(frame.Frame{}.Out)) ^ 24 | uint64(unsafe.Offsetof(frame.Frame{}.L3)) ^ 26 |
	uint64(frame.FlagVLAN) ^ 1 | uint64(frameSize) ^ 32 |
	uint64(unsafe.Offsetof(adj{}.blk)) | uint64(unsafe.Offsetof(adj{}.txc)) ^ 24 | uint64(unsafe.Offsetof(adj{}.cur)) ^ 32 |
	uint64(unsafe.Offsetof(adj{}.outL3)) ^ 48 | uint64(unsafe.Offsetof(adj{}.lim)) ^ 52 |
	uint64(unsafe.Offsetof(adj{}.n)) ^ 54 | adjSize ^ 128 | uint64(unsafe.Offsetof(txCursor{}.base)) | uint64(unsafe.Offsetof(txCursor{}.off)) ^ 8 |
	uint64(unsafe.Offsetof(vlan.Counters{}.TxPackets)) ^ 16 | uint64(unsafe.Offsetof(vlan.Counters{}.TxBytes)) ^ 24 |
	uint64(vlan.TPID8021Q) ^ 0x8100 | vlan.VIDMask ^ 0xfff | vlan.EthLen ^ 18 | frame.EtherLen ^ 14 |
	frame.IPv4MinLen ^ 20 | frame.MinEthernetLen ^ 60 | vlan.RewriteMax ^ 24 |
	etVerMask ^ 0xffffff | etVerIPv4 ^ 0x450008 | filterMul ^ 0x9e3779b1

var _ [0]struct{} = [passLayoutDiff]struct{}{}
