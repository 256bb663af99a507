//go:build !purego && !fwd_portable

#include "textflag.h"

// The layouts and constants pass_amd64.go pins (passLayoutDiff), as this file uses them:
//   frame.Frame (32 bytes): Off 0, Len 8, Head 10, Flags 16 (FlagVLAN bit 0), Port 22, Out 24, L3 26
//   portTab: mp 0, memLim 8, de 16, cls 24, rxPackets 0x8020, rxBytes 0x10028, filter 0x18030,
//            martian 0x1a030 (cls, rxPackets, rxBytes: 4097 words, the untagged frames' at 4096)
//   adj (128 bytes): blk 0, txc 24, cur 32, outL3 48, lim 52, n 54; txCursor: base 0, off 8
//   vlan.Counters: TxPackets 16, TxBytes 24
// Both loops walk their offsets divided by 8 (BX, CX: p/8, q/8), so that a descriptor is at
// (AX)(BX*8) and a 4-byte destination or next-hop index at (base)(BX*1).

// func rxLoop(fe unsafe.Pointer, p, q int, t *portTab) (int, int)
TEXT ·rxLoop(SB), NOSPLIT, $0-48
	MOVQ fe+0(FP), AX
	MOVQ p+8(FP), BX
	MOVQ q+16(FP), CX
	MOVQ t+24(FP), DI
	SARQ $3, BX
	SARQ $3, CX
	MOVQ 16(DI), R10 // t.de
	MOVQ $0xfffefffefffeffff, R14 // the inverse of 0xffff modulo 2^64
	MOVQ $0x1000100010001, R15 // (2^64-1) / 0xffff: a product at most this is a multiple of 0xffff
	TESTQ BX, BX
	JGT rxdone

rxframe:
	MOVL (AX)(BX*8), DX // off
	MOVWLZX 8(AX)(BX*8), SI // ln
	LEAQ (DX)(SI*1), R11
	CMPQ R11, 8(DI) // off+ln > t.memLim
	JHI rxdone
	TESTB $1, 16(AX)(BX*8) // FlagVLAN
	JNE rxdone
	ADDQ (DI), DX // d: the frame's first byte
	CMPW 12(DX), $0x0081 // the TPID 0x8100
	JEQ rxtagged
	MOVL $4096, R13 // j: the untagged frames' slot
	MOVL $14, R12 // l3

rxmac:
	MOVQ (DX), R8
	SHLQ $16, R8 // macKey
	XORQ 24(DI)(R13*8), R8 // ^ t.cls[j]
	DECQ R8 // id: the interface when the destination MAC is its own
	CMPQ R8, $0xffff
	JCC rxdone
	ADDQ R12, DX // h: the network header
	MOVL -2(DX), R9
	ANDL $0xffffff, R9
	CMPL R9, $0x450008 // EtherType IPv4, version 4, IHL 5
	JNE rxdone
	MOVBLZX 12(DX), R9
	MOVBLZX 16(DX), R11
	MOVBLZX 0x1a030(DI)(R9*1), R9
	ORB 0x1a030(DI)(R11*1), R9 // the martian classes of both addresses
	JNE rxdone
	CMPB 8(DX), $1 // TTL <= 1
	JLS rxdone
	CMPW 10(DX), $0xfffe // a checksum ttlWord does not update
	JCC rxdone
	MOVWLZX 2(DX), R9
	ROLW $8, R9 // the total length
	CMPL R9, $20
	JCS rxdone
	ADDL R12, R9
	CMPL R9, SI // beyond the frame
	JHI rxdone
	MOVQ (DX), R11 // the header checksum (headerSumBad)
	ADDQ 8(DX), R11
	MOVL 16(DX), R9
	ADCQ R9, R11
	ADCQ $0, R11
	IMULQ R14, R11
	CMPQ R11, R15
	JHI rxdone
	BSWAPL R9 // the destination
	IMUL3L $0x9e3779b1, R9, R11 // filterHash
	MOVL R11, DX
	SHRL $22, R11
	MOVQ 0x18030(DI)(R11*8), R11
	BTQ DX, R11 // bit hb mod 64 of word hb>>22: maybe one of the router's addresses
	JCS rxdone
	MOVW R8, 22(AX)(BX*8) // Port
	MOVW R12, 26(AX)(BX*8) // L3
	INCQ 0x8020(DI)(R13*8) // t.rxPackets[j]
	ADDQ SI, 0x10028(DI)(R13*8) // t.rxBytes[j]
	MOVL R9, (R10)(CX*1) // dst[k]
	CMPQ BX, CX
	JNE rxmove

rxnext:
	ADDQ $4, CX
	ADDQ $4, BX
	JLE rxframe

rxdone:
	SHLQ $3, BX
	SHLQ $3, CX
	MOVQ BX, ret+32(FP)
	MOVQ CX, ret1+40(FP)
	RET

rxtagged:
	MOVWLZX 14(DX), R13
	ROLW $8, R13
	ANDL $0xfff, R13 // j: the VID
	MOVL $18, R12 // l3
	JMP rxmac

rxmove: // the frame to slot k
	MOVUPS (AX)(BX*8), X0
	MOVUPS 16(AX)(BX*8), X1
	MOVUPS X0, (AX)(CX*8)
	MOVUPS X1, 16(AX)(CX*8)
	JMP rxnext

// func txLoop(fe, ne unsafe.Pointer, p int, ab unsafe.Pointer, na uint64, mp unsafe.Pointer) int
TEXT ·txLoop(SB), NOSPLIT, $0-56
	MOVQ fe+0(FP), AX
	MOVQ ne+8(FP), DI
	MOVQ p+16(FP), BX
	MOVQ ab+24(FP), R8
	MOVQ na+32(FP), R9
	MOVQ mp+40(FP), R10
	SARQ $3, BX
	TESTQ BX, BX
	JGT txdone

txframe:
	MOVL (DI)(BX*1), R11 // the next-hop index
	CMPQ R11, R9
	JCC txdone
	SHLQ $7, R11
	ADDQ R8, R11 // a: its adjacency
	MOVWLZX 26(AX)(BX*8), R12 // l3
	MOVL (AX)(BX*8), R13
	ADDQ R12, R13 // abs: the network header's offset
	MOVWLZX 10(AX)(BX*8), DX
	ADDQ R12, DX // front
	MOVWLZX 8(AX)(BX*8), SI
	SUBQ R12, SI
	MOVWLZX 54(R11), R12 // n
	ADDQ R12, SI // ln: the length after the rewrite
	LEAQ (R10)(R13*1), R14 // h
	MOVWLZX 2(R14), R15
	ROLW $8, R15
	CMPW R15, 52(R11) // the total length above a.lim
	JHI txdone
	LEAQ -60(SI), R15
	CMPQ R15, $0xffc3 // ln outside 60..65535
	JHI txdone
	LEAQ -24(DX), R15
	CMPQ R15, $0xfff5 // front outside 24..65549
	JHI txdone
	CMPQ R13, $24
	JCS txdone
	MOVUPS (R11), X0 // the next hop's header, to end at the network header
	MOVUPS X0, -24(R14)
	MOVQ 16(R11), R15
	MOVQ R15, -8(R14)
	MOVQ 32(R11), R15 // a.cur
	MOVQ 8(R15), CX
	ADDQ $32, 8(R15)
	ADDQ (R15), CX // g: the egress batch's next slot
	MOVUPS (AX)(BX*8), X0
	MOVUPS 16(AX)(BX*8), X1
	MOVUPS X0, (CX)
	MOVUPS X1, 16(CX)
	SUBQ R12, R13
	MOVL R13, (CX) // Off
	MOVW SI, 8(CX) // Len
	SUBQ R12, DX
	MOVW DX, 10(CX) // Head
	MOVL 48(R11), R15
	MOVL R15, 24(CX) // Out, L3
	MOVQ 24(R11), R15 // a.txc
	INCQ 16(R15)
	ADDQ SI, 24(R15)
	ADDL $0xffff, 8(R14) // ttlWord: TTL - 1 and the checksum after it
	ADDQ $4, BX
	JLE txframe

txdone:
	SHLQ $3, BX
	MOVQ BX, ret+48(FP)
	RET

// func prefetchFrames(mem unsafe.Pointer, fr []frame.Frame)
TEXT ·prefetchFrames(SB), NOSPLIT, $0-32
	MOVQ mem+0(FP), DI
	MOVQ fr_base+8(FP), AX
	MOVQ fr_len+16(FP), CX
	TESTQ CX, CX
	JEQ pfdone

pfnext:
	MOVL (AX), DX
	PREFETCHT0 (DI)(DX*1)
	ADDQ $32, AX
	DECQ CX
	JNE pfnext

pfdone:
	RET
