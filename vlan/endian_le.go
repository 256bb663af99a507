//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !vlan_portable

package vlan

// fastMem: mem.go's helpers use word accesses and pointer arithmetic. On a little-endian machine a
// uint32 at &Frame.Len holds Len in its low half and Head in its high half, and one at a Tag holds
// the TPID low and the TCI high, so one add or store updates both halves. (-tags vlan_portable
// takes the field-by-field paths here too, to test them.)
const fastMem = true
