//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package vlan

// littleEndian is false here: the fast paths update Frame.Len and Frame.Head one by one.
const littleEndian = false
