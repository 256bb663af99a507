//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) || fwd_portable

package fwd

// littleEndian is false here (or with -tags fwd_portable, which runs this path on any machine):
// rxRun and txRun byte-swap the words they read in the machine's order.
const littleEndian = false

// ttlStep is 0x100 added to the header checksum's big-endian word, as a load in the machine's byte
// order sees it.
const ttlStep = 0x100
