//go:build !purego

#include "textflag.h"

// The layout constants of table.go, as this file uses them: dp entries (dirBits = 8 bits of chunk,
// chunkBits = 10 bits of slot), nodeBit 31, kidsBit 30, rootMask 0x3fffffff, the first node level's
// stride at bits 8..13 of the address, rootLeafOff 4, kidsLeafOff 10, rootBaseOff 8 (16-bit units).

// func lookupStages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *uint32, n int, st *lanes) (chunks int, deep uint32)
//
// Every lane's answer (its next hop + 1) goes to st.ent; fin writes the chunk's o from st.ent, so the
// stages read the addresses from a, which o may be.
TEXT ·lookupStages(SB), NOSPLIT, $0-60
	MOVQ dir+0(FP), R8
	MOVQ roots+8(FP), R11
	MOVQ a+16(FP), SI
	MOVQ st+40(FP), R9
	MOVQ $0, chunks+48(FP)

chunk: // the 32 addresses at SI
	XORL R10, R10 // pend: lanes whose entry is a first-level node, lane i in bit i
	MOVQ $31, DX
	LEAQ 128(SI), R14 // the next chunk's addresses, whose dp entries stage 1 prefetches ...
	CMPQ n+32(FP), $1
	CMOVQEQ SI, R14 // ... or this chunk's again when it is the last

	// Stage 1, lanes 31 down to 0, two per round: the dp entry e into st.ent[i], a prefetch of the
	// node it names, and a prefetch of the next chunk's lane i dp entry, so that the next chunk's
	// stage 1 finds its entries in the cache and sends its node prefetches out early.
dp:
	MOVBLZX 3(SI)(DX*4), BX // address bits 24..31: the chunk
	MOVQ (R8)(BX*8), BX
	MOVWLZX 1(SI)(DX*4), CX
	SHRL $6, CX // address bits 14..23: the slot
	MOVL (BX)(CX*4), BX // e
	MOVL BX, (R9)(DX*4) // st.ent[i] = e
	ADDL BX, BX // CF = nodeBit; BX = e<<1, kidsBit on top
	ADCL R10, R10 // pend = pend<<1 | nodeBit
	PREFETCHT0 (R11)(BX*4) // roots[p] of a node without children; for a leaf a word below 64 Ki, which may lie past roots, and for a node with children 8 GiB past its word (a prefetch never faults)

	MOVBLZX -1(SI)(DX*4), BX // lane i-1
	MOVQ (R8)(BX*8), BX
	MOVWLZX -3(SI)(DX*4), CX
	SHRL $6, CX
	MOVL (BX)(CX*4), BX
	MOVL BX, -4(R9)(DX*4)
	ADDL BX, BX
	ADCL R10, R10
	PREFETCHT0 (R11)(BX*4)

	MOVBLZX 3(R14)(DX*4), AX // the next chunk's lane i
	MOVQ (R8)(AX*8), AX
	MOVWLZX 1(R14)(DX*4), CX
	SHRL $6, CX
	PREFETCHT0 (AX)(CX*4)
	MOVBLZX -1(R14)(DX*4), AX // and lane i-1
	MOVQ (R8)(AX*8), AX
	MOVWLZX -3(R14)(DX*4), CX
	SHRL $6, CX
	PREFETCHT0 (AX)(CX*4)
	SUBQ $2, DX
	JGE dp

	// Stage 2, the lanes of pend, lowest first: the first-level node at word p of roots.
	XORL R13, R13 // deep
	BSFL R10, DX // i; ZF when no lane is left
	JNE level
	JMP fin

level:
	BTRL DX, R10
	MOVL (R9)(DX*4), R12
	SHLL $2, R12 // 4p; CF = kidsBit
	MOVBLZX 1(SI)(DX*4), CX // address bits 8..15
	NOTL CX // 63 - v in CL's low 6 bits: SHLQ CX keeps bits 0..v, bit v on top
	MOVQ (R11)(R12*2), DI // the leaf vector, roots[p]
	JCS kids

leaf:
	SHLQ CX, DI
	POPCNTQ DI, DI
	LEAQ (R12)(DI*1), AX
	MOVWLZX 6(R11)(AX*2), AX // halves[4p + rootLeafOff - 1 + count]
	MOVL AX, (R9)(DX*4) // st.ent[i] = the leaf (next hop + 1)

next:
	BSFL R10, DX
	JNE level
	JMP fin

kids:
	MOVQ 8(R11)(R12*2), BX // the child vector, roots[p+1]
	SHLQ CX, BX
	TESTQ BX, BX // entry v is a child when bit 63 is set
	JPL nochild
	POPCNTQ BX, BX
	MOVL 16(R11)(R12*2), AX // the first child's index, halves 4p+8 (low) and 4p+9
	LEAL -1(AX)(BX*1), AX
	MOVL AX, (R9)(DX*4) // st.ent[i] = the child's index
	MOVL (SI)(DX*4), AX
	MOVL AX, 128(R9)(DX*4) // st.xs[i] = the address
	BTSL DX, R13
	JMP next

nochild:
	ADDQ $6, R12 // the leaves start at kidsLeafOff, not rootLeafOff
	JMP leaf

fin: // o[i] = st.ent[i] - 1 for every lane: a next hop, or NoRoute from 0
	MOVQ o+24(FP), DI
	PCMPEQL X0, X0
	MOVOU (R9), X1
	PADDL X0, X1
	MOVOU X1, (DI)
	MOVOU 16(R9), X1
	PADDL X0, X1
	MOVOU X1, 16(DI)
	MOVOU 32(R9), X1
	PADDL X0, X1
	MOVOU X1, 32(DI)
	MOVOU 48(R9), X1
	PADDL X0, X1
	MOVOU X1, 48(DI)
	MOVOU 64(R9), X1
	PADDL X0, X1
	MOVOU X1, 64(DI)
	MOVOU 80(R9), X1
	PADDL X0, X1
	MOVOU X1, 80(DI)
	MOVOU 96(R9), X1
	PADDL X0, X1
	MOVOU X1, 96(DI)
	MOVOU 112(R9), X1
	PADDL X0, X1
	MOVOU X1, 112(DI)
	ADDQ $(4*32), DI
	MOVQ DI, o+24(FP)
	ADDQ $(4*32), SI
	INCQ chunks+48(FP)
	TESTL R13, R13
	JNE ret // the caller walks the deep lanes before the next chunk overwrites st
	DECQ n+32(FP)
	JNE chunk

ret:
	MOVL R13, deep+56(FP)
	RET
