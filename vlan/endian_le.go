//go:build (amd64 || arm || arm64 || loong64 || ppc64le || riscv64 || wasm) && !vlan_portable

package vlan

// fastMem: mem.go's helpers use word accesses and pointer arithmetic. On a little-endian machine a
// uint32 at &Frame.Len holds Len in its low half and Head in its high half, and one at a Tag holds
// the TPID low and the TCI high, so one add or store updates both halves; these machines rotate a
// word in one instruction (bits.RotateLeft32 is an intrinsic), which keeps Parse's pieces within
// the inlining budget. (-tags vlan_portable takes the field-by-field paths here too, to test them.)
const fastMem = true
