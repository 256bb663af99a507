package gen

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// xdpLive sends with BPF_PROG_RUN + BPF_F_TEST_XDP_LIVE_FRAMES: the kernel runs the program
// Repeat times on recycled pages initialised from data, and the program redirects each frame out of
// the interface.
//
// One flow of one size: the program stores the frame's bytes as immediates (no map). Several flows
// or sizes: an array map holds each flow's frame prefix (up to 128 bytes, the headers and then
// padding) and the tail adjustment for its size; a one-entry array map holds a counter the program
// advances per frame, so the flows go out round robin as with the AF_PACKET engine.
type xdpLive struct {
	prog       *ebpf.Program
	flows, ctr *ebpf.Map
	data       []byte
}

// xdpCopyMax bounds the bytes of each frame the multi-flow program rewrites.
const xdpCopyMax = 128

func newXDP(ifindex int, c *Config, frames [][]byte) (engine, error) {
	sizes := slices.Clone(c.Sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	e := &xdpLive{data: make([]byte, sizes[len(sizes)-1])}
	var insns asm.Instructions
	if len(frames) == 1 {
		f := frames[0]
		copy(e.data, f)
		insns = asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, int32(len(f))),
			asm.JGT.Reg(asm.R4, asm.R3, "drop"),
		}
		o := 0
		for ; o+4 <= len(f); o += 4 {
			insns = append(insns, asm.StoreImm(asm.R2, int16(o), int64(int32(binary.LittleEndian.Uint32(f[o:]))), asm.Word))
		}
		for ; o < len(f); o++ {
			insns = append(insns, asm.StoreImm(asm.R2, int16(o), int64(f[o]), asm.Byte))
		}
	} else {
		copyLen := min(sizes[0], xdpCopyMax)
		var err error
		e.ctr, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
		if err != nil {
			return nil, fmt.Errorf("gen: xdp: counter map: %w", err)
		}
		e.flows, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: uint32(8 + copyLen), MaxEntries: uint32(len(frames))})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("gen: xdp: flow map: %w", err)
		}
		v := make([]byte, 8+copyLen)
		for i, f := range frames {
			binary.LittleEndian.PutUint32(v[0:4], uint32(int32(len(f)-len(e.data))))
			copy(v[8:], f[:copyLen])
			if err := e.flows.Put(uint32(i), v); err != nil {
				e.close()
				return nil, fmt.Errorf("gen: xdp: flow map: %w", err)
			}
		}
		insns = asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, e.ctr.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "drop"),
			asm.LoadMem(asm.R7, asm.R0, 0, asm.DWord),
			asm.Mov.Reg(asm.R8, asm.R7),
			asm.Add.Imm(asm.R8, 1),
			asm.StoreMem(asm.R0, 0, asm.R8, asm.DWord),
			asm.Mod.Imm(asm.R7, int32(len(frames))),
			asm.StoreMem(asm.R10, -8, asm.R7, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -8),
			asm.LoadMapPtr(asm.R1, e.flows.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "drop"),
			asm.Mov.Reg(asm.R7, asm.R0),
		}
		if len(sizes) > 1 {
			insns = append(insns,
				asm.Mov.Reg(asm.R1, asm.R6),
				asm.LoadMemSX(asm.R2, asm.R7, 0, asm.Word),
				asm.FnXdpAdjustTail.Call(),
				asm.JNE.Imm(asm.R0, 0, "drop"),
			)
		}
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R6, 0, asm.Word),
			asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, int32(copyLen)),
			asm.JGT.Reg(asm.R4, asm.R3, "drop"),
		)
		o := 0
		for _, w := range []struct {
			n int
			s asm.Size
		}{{8, asm.DWord}, {4, asm.Word}, {2, asm.Half}, {1, asm.Byte}} {
			for ; o+w.n <= copyLen; o += w.n {
				insns = append(insns,
					asm.LoadMem(asm.R5, asm.R7, int16(8+o), w.s),
					asm.StoreMem(asm.R2, int16(o), asm.R5, w.s))
			}
		}
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R1, int32(ifindex)),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("drop"), // XDP_DROP
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: insns})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("gen: xdp: load program: %w", err)
	}
	e.prog = prog
	return e, nil
}

func (e *xdpLive) send(n int) (int, error) {
	_, err := e.prog.Run(&ebpf.RunOptions{Data: e.data, Repeat: uint32(n), Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
	if err != nil {
		return 0, fmt.Errorf("gen: xdp: BPF_PROG_RUN: %w", err)
	}
	return n, nil
}

func (e *xdpLive) close() {
	if e.prog != nil {
		e.prog.Close()
	}
	if e.flows != nil {
		e.flows.Close()
	}
	if e.ctr != nil {
		e.ctr.Close()
	}
}
