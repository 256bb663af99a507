//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) || vlan_portable

package vlan

// fastMem is false here (or with -tags vlan_portable, which runs these paths on any machine):
// mem.go's helpers store Frame.Len, Frame.Head and tags field by field and index slices.
const fastMem = false
