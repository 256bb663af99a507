//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !vlan_portable

package vlan

// littleEndian: a uint32 at &Frame.Len holds Len in its low half and Head in its high half, and one
// at &Tag holds TPID low and TCI high, so the fast paths (inline.go) update both halves with one add
// or store. (-tags vlan_portable takes the field-by-field paths here too, to test them.)
const littleEndian = true
