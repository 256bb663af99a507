//go:build !(amd64 || arm || arm64 || loong64 || ppc64le || riscv64 || wasm) || vlan_portable

package vlan

// fastMem is false here (big-endian machines, 386 and little-endian MIPS, whose compiler has no
// rotate intrinsic; or -tags vlan_portable, which runs these paths on any machine): mem.go's
// helpers are not used for word accesses, Frame.Len, Frame.Head and tags are stored field by field
// and slices indexed.
const fastMem = false
