package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/internal/syserr"
)

// xskMapEntries bounds the queue numbers a port can bind (one XSKMAP slot per queue).
const xskMapEntries = 1024

// xdpProg is the redirect program and XSKMAP of one interface, shared by every port of the process
// that binds a queue of that interface (an interface holds one XDP program per mode).
type xdpProg struct {
	key    progKey
	pass   uint16 // Config.PassEtherType
	refs   int
	m      *ebpf.Map
	prog   *ebpf.Program
	l      link.Link
	attach Attach // what actually attached
}

type progKey struct {
	netns   uint64 // inode of the network namespace (ifindexes are per namespace)
	ifindex int
}

var progs struct {
	sync.Mutex
	m map[progKey]*xdpProg
}

// redirectInsns is the XDP program: look the receive queue up in the XSKMAP and redirect the frame
// to the socket found there; XDP_PASS if the queue has none (bpf_redirect_map's flags argument is
// the action on a miss, since Linux 5.3). With pass not zero, an untagged frame of EtherType pass
// is XDP_PASS'ed first, whatever its queue.
func redirectInsns(m *ebpf.Map, pass uint16) (asm.Instructions, error) {
	ld := asm.LoadMapPtr(asm.R1, m.FD())
	if err := ld.AssociateMap(m); err != nil {
		return nil, err
	}
	var insns asm.Instructions
	if pass != 0 {
		// The EtherType as the 16-bit load from the packet reads it on this machine.
		et := binary.NativeEndian.Uint16([]byte{byte(pass >> 8), byte(pass)})
		insns = asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // r2 = ctx->data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // r3 = ctx->data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14),
			asm.JGT.Reg(asm.R4, asm.R3, "redirect"), // shorter than an Ethernet header
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
			asm.JNE.Imm(asm.R5, int32(et), "redirect"),
			asm.Mov.Imm(asm.R0, 2), // XDP_PASS
			asm.Return(),
		}
	}
	return append(insns,
		asm.LoadMem(asm.R2, asm.R1, 16, asm.Word).WithSymbol("redirect"), // r2 = ctx->rx_queue_index
		ld,                       // r1 = &xskmap
		asm.Mov.Imm(asm.R3, 2),   // r3 = XDP_PASS on a miss
		asm.FnRedirectMap.Call(), // r0 = bpf_redirect_map(r1, r2, r3)
		asm.Return(),
	), nil
}

// acquireProg returns the interface's program, loading and attaching it on first use.
func acquireProg(netns uint64, ifindex int, want Attach, pass uint16) (*xdpProg, error) {
	key := progKey{netns, ifindex}
	progs.Lock()
	defer progs.Unlock()
	if x := progs.m[key]; x != nil {
		if want != AttachAuto && want != x.attach {
			return nil, fmt.Errorf("afxdp: interface %d already has the program attached %s, not %s", ifindex, x.attach, want)
		}
		if pass != x.pass {
			return nil, fmt.Errorf("afxdp: interface %d already has the program passing EtherType %#04x to the kernel, not %#04x", ifindex, x.pass, pass)
		}
		x.refs++
		return x, nil
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ws_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: xskMapEntries})
	if err != nil {
		return nil, bpfError("create the XSKMAP", "bpf(BPF_MAP_CREATE)", err)
	}
	insns, err := redirectInsns(m, pass)
	if err != nil {
		m.Close()
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ws_xsk_redir", Type: ebpf.XDP, License: "GPL", Instructions: insns})
	if err != nil {
		m.Close()
		return nil, bpfError("load the XDP program", "bpf(BPF_PROG_LOAD)", err)
	}
	x := &xdpProg{key: key, pass: pass, refs: 1, m: m, prog: prog}
	tries := []Attach{want}
	if want == AttachAuto {
		tries = []Attach{AttachNative, AttachGeneric}
	}
	var errs []error
	for _, a := range tries {
		flags := link.XDPDriverMode
		if a == AttachGeneric {
			flags = link.XDPGenericMode
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: flags})
		if err == nil {
			x.l, x.attach = l, a
			break
		}
		errs = append(errs, fmt.Errorf("attach %s: %w", a, err))
	}
	if x.l == nil {
		prog.Close()
		m.Close()
		err := fmt.Errorf("attach the XDP program: %w", errors.Join(errs...))
		if syserr.IsPermission(err) {
			err = syserr.WithHint(err, syserr.Hint("attaching an XDP program", []syserr.Cap{syserr.NetAdmin}, ""))
		}
		return nil, err
	}
	if progs.m == nil {
		progs.m = make(map[progKey]*xdpProg)
	}
	progs.m[key] = x
	return x, nil
}

// bpfError is the error of a bpf(2) step of loading the program. A refusal for want of privilege
// says which capabilities the port needs, the program's and the socket's (the library's own hint about memlock points at one of
// its Go functions and, on kernels from 5.11, which account BPF memory to the memory cgroup, at
// the wrong cause; the hint here names it only when the process has the capabilities).
func bpfError(step, call string, err error) error {
	if !syserr.IsPermission(err) {
		return fmt.Errorf("%s: %w", step, err)
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		errno = unix.EPERM
	}
	return fmt.Errorf("%s: %w", step, syserr.WithHint(os.NewSyscallError(call, errno),
		syserr.Hint("an AF_XDP port with its XDP program", []syserr.Cap{syserr.BPF, syserr.NetAdmin, syserr.NetRaw},
			"on kernels before 5.11 RLIMIT_MEMLOCK too small for BPF maps answers this too (raise it: ulimit -l, systemd "+
				"LimitMEMLOCK=); otherwise a security policy or kernel lockdown refuses BPF")+
			"; with Config.NoProgram, which leaves redirecting the queue to the caller, a port needs only CAP_NET_RAW"))
}

// setSocket puts the socket fd into the queue's XSKMAP slot.
func (x *xdpProg) setSocket(queue, fd int) error {
	if queue < 0 || queue >= xskMapEntries {
		return fmt.Errorf("afxdp: queue %d out of range [0,%d)", queue, xskMapEntries)
	}
	if err := x.m.Update(uint32(queue), uint32(fd), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("afxdp: XSKMAP update: %w", err)
	}
	return nil
}

// release removes the queue's socket from the map and, with the last user, detaches and unloads.
func (x *xdpProg) release(queue int) {
	progs.Lock()
	defer progs.Unlock()
	if queue >= 0 {
		x.m.Delete(uint32(queue)) // ENOENT if never set: fine
	}
	x.refs--
	if x.refs > 0 {
		return
	}
	delete(progs.m, x.key)
	x.l.Close() // detaches (bpf_link)
	x.prog.Close()
	x.m.Close()
}

// netnsID is the inode of the calling thread's network namespace.
func netnsID() uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/thread-self/ns/net", &st) != nil {
		return 0
	}
	return st.Ino
}
