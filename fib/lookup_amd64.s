//go:build !purego

#include "textflag.h"

// The layout constants of table.go, as this file uses them: dp entries (dirBits = 8 bits of chunk,
// chunkBits = 10 bits of slot), nodeBit 31, kidsBit 30, rootMask 0x3fffffff, the first node level's
// stride at bits 8..13 of the address, rootLeafOff 4, kidsLeafOff 10, rootBaseOff 8 (16-bit units).

// func lookup32Stages(dir *[1 << dirBits]*dpChunk, roots *uint64, a, o *[batchLanes]uint32, st *lanes) (deep uint32)
TEXT ·lookup32Stages(SB), NOSPLIT, $0-44
	MOVQ dir+0(FP), R8
	MOVQ roots+8(FP), R11
	MOVQ a+16(FP), SI
	MOVQ o+24(FP), DI
	MOVQ st+32(FP), R9
	XORL R10, R10 // pend: lanes whose entry is a first-level node, lane i in bit i
	MOVQ $31, DX

	// Stage 1, lanes 31 down to 0, two per round: the dp entry e, o[i] = e (the leaf's next hop + 1;
	// done subtracts the 1 from every lane at once).
dp:
	MOVBLZX 3(SI)(DX*4), BX // address bits 24..31: the chunk
	MOVQ (R8)(BX*8), BX
	MOVWLZX 1(SI)(DX*4), CX
	SHRL $6, CX // address bits 14..23: the slot
	MOVL (BX)(CX*4), BX // e
	MOVL (SI)(DX*4), AX // the address
	MOVL BX, (R9)(DX*4) // st.ent[i] = e
	MOVL AX, 128(R9)(DX*4) // st.xs[i] = the address
	MOVL BX, (DI)(DX*4) // o[i] = e
	MOVL BX, CX
	ANDL $0x3fffffff, CX
	PREFETCHT0 (R11)(CX*8) // a node's roots[p]; for a leaf a word below 64 Ki, which may lie past roots (a prefetch never faults)
	ADDL BX, BX // CF = nodeBit
	ADCL R10, R10 // pend = pend<<1 | nodeBit

	MOVBLZX -1(SI)(DX*4), BX // lane i-1
	MOVQ (R8)(BX*8), BX
	MOVWLZX -3(SI)(DX*4), CX
	SHRL $6, CX
	MOVL (BX)(CX*4), BX
	MOVL -4(SI)(DX*4), AX
	MOVL BX, -4(R9)(DX*4)
	MOVL AX, 124(R9)(DX*4)
	MOVL BX, -4(DI)(DX*4)
	MOVL BX, CX
	ANDL $0x3fffffff, CX
	PREFETCHT0 (R11)(CX*8)
	ADDL BX, BX
	ADCL R10, R10
	SUBQ $2, DX
	JGE dp

	// Stage 2, the lanes of pend, lowest first: the first-level node at word p of roots.
	XORL R13, R13 // deep
	BSFL R10, DX // i; ZF when no lane is left
	JNE level
	JMP done

level:
	BTRL DX, R10
	MOVL (R9)(DX*4), R12
	SHLL $2, R12 // 4p; CF = kidsBit
	MOVBLZX 129(R9)(DX*4), CX // address bits 8..15
	NOTL CX // 63 - v in CL's low 6 bits: SHLQ CX keeps bits 0..v, bit v on top
	MOVQ (R11)(R12*2), SI // the leaf vector, roots[p]
	JCS kids

leaf:
	SHLQ CX, SI
	POPCNTQ SI, SI
	LEAQ (R12)(SI*1), AX
	MOVWLZX 6(R11)(AX*2), AX // halves[4p + rootLeafOff - 1 + count]
	MOVL AX, (DI)(DX*4) // o[i] = the leaf (next hop + 1)

next:
	BSFL R10, DX
	JNE level
	JMP done

kids:
	MOVQ 8(R11)(R12*2), BX // the child vector, roots[p+1]
	SHLQ CX, BX
	TESTQ BX, BX // entry v is a child when bit 63 is set
	JPL nochild
	POPCNTQ BX, BX
	MOVL 16(R11)(R12*2), AX // the first child's index, halves 4p+8 (low) and 4p+9
	LEAL -1(AX)(BX*1), AX
	MOVL AX, (R9)(DX*4) // st.ent[i] = the child's index
	BTSL DX, R13
	JMP next

nochild:
	ADDQ $6, R12 // the leaves start at kidsLeafOff, not rootLeafOff
	JMP leaf

done: // o[i] -= 1 for every lane: a next hop, or NoRoute from 0
	PCMPEQL X0, X0
	MOVOU (DI), X1
	PADDL X0, X1
	MOVOU X1, (DI)
	MOVOU 16(DI), X1
	PADDL X0, X1
	MOVOU X1, 16(DI)
	MOVOU 32(DI), X1
	PADDL X0, X1
	MOVOU X1, 32(DI)
	MOVOU 48(DI), X1
	PADDL X0, X1
	MOVOU X1, 48(DI)
	MOVOU 64(DI), X1
	PADDL X0, X1
	MOVOU X1, 64(DI)
	MOVOU 80(DI), X1
	PADDL X0, X1
	MOVOU X1, 80(DI)
	MOVOU 96(DI), X1
	PADDL X0, X1
	MOVOU X1, 96(DI)
	MOVOU 112(DI), X1
	PADDL X0, X1
	MOVOU X1, 112(DI)
	MOVL R13, deep+40(FP)
	RET
