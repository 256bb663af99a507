//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package vlan

// littleEndian: a uint32 at &Frame.Len holds Len in its low half and Head in its high half, so the
// fast paths update both with one add (see inline.go).
const littleEndian = true
