//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !fwd_portable

package fwd

// littleEndian: rxRun and txRun read header words in the machine's byte order and compare them
// with constants in that order. (-tags fwd_portable takes the byte-swapping path here too, to
// test it.)
const littleEndian = true

// ttlStep is 0x100 added to the header checksum's big-endian word, as a load in the machine's byte
// order sees it.
const ttlStep = 1
