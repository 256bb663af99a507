package afxdp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/ifstats"
	"github.com/wirespeed/wirespeed/internal/syserr"
	"github.com/wirespeed/wirespeed/xmit"
	"golang.org/x/sys/unix"
)

const (
	defaultRing = 2048
	// copyHeadroom is where Send puts frames it copies from another arena: room for tag pushes.
	copyHeadroom = unix.XDP_PACKET_HEADROOM
	// refillMin: Recv with nothing to receive refills the fill ring only when this many slots are
	// free, so an idle poll loop does not take the UMEM lock each time.
	refillMin = 64
	// bindTries × bindPause: bind answers EBUSY for a short while after the previous socket on the
	// queue closed.
	bindTries = 50
	bindPause = 10 * time.Millisecond
	// kernelStatsEvery: Stats reads the interface's kernel counters at most this often.
	kernelStatsEvery = 100 * time.Millisecond
)

// carrierEvery: Send reads the interface's carrier at most this often.
const carrierEvery = time.Millisecond

var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }

// Port is one queue of an interface through an AF_XDP socket. It implements xmit.Port,
// xmit.Waiter and xmit.LinkStater.
//
// Concurrency: one goroutine at a time in Recv and Wait, one at a time in Send (they may differ);
// Stats, XDPStats, LinkUp, Mode, AttachMode and Close from any goroutine. Recv and Send each take a
// port mutex once per call, which only Close contends for: Close waits for the calls in progress,
// wakes a goroutine blocked in Wait, and then unmaps the rings.
type Port struct {
	_ [0]sync.Mutex

	name    string
	ifindex int
	queue   int
	fd      int
	efd     int // eventfd: Close wakes Wait through it
	ctl     int // datagram socket for SIOCGIFFLAGS
	umem    *UMEM
	private bool
	slot    uint16
	acct    *sockAcct
	prog    *xdpProg
	mode    Mode
	wakeup  bool // XDP_USE_NEED_WAKEUP in force
	busy    bool // preferred busy polling on (Config.BusyPoll)
	maxLen  int  // longest frame Send queues

	closed atomic.Bool

	rxMu sync.Mutex
	fill ring
	rx   ring
	pfd  [2]unix.PollFd
	ts   unix.Timespec
	_    [64]byte

	txMu    sync.Mutex
	tx      ring
	comp    ring
	scratch []frame.Frame
	// Send's view of the carrier (see carrier): read at most every linkEvery.
	linkIfr   *unix.Ifreq
	linkAt    int64 // nanotime of the last reading
	linkEvery int64
	linkUp    bool
	_         [64]byte

	statsMu  sync.Mutex
	fdClosed bool
	last     XDPStats
	ifr      *unix.Ifreq      // LinkUp's
	ks       *ifstats.Tracker // the interface's kernel counters (nil if they cannot be read)

	c xmit.Counters
}

var (
	_ xmit.Port       = (*Port)(nil)
	_ xmit.Waiter     = (*Port)(nil)
	_ xmit.LinkStater = (*Port)(nil)
)

// Open binds an AF_XDP socket to queue of the interface ifname (nil cfg: defaults), loading and
// attaching the redirect program unless cfg.NoProgram. The socket and the program belong to the
// network namespace of the calling thread.
//
// Its errors name the interface and the queue. A missing interface wraps xmit.ErrNoInterface; a
// refusal for want of privilege (errors.Is(err, os.ErrPermission)) says which capabilities the step
// needs and which the process lacks: CAP_BPF and CAP_NET_ADMIN for the XDP program, CAP_NET_RAW
// for the socket; an UMEM over RLIMIT_MEMLOCK says so.
func Open(ifname string, queue int, cfg *Config) (*Port, error) {
	p, err := open(ifname, queue, cfg)
	if err != nil {
		return nil, &openError{ifname, queue, err}
	}
	return p, nil
}

// openError is an error of Open: "afxdp: open IFNAME queue N: " and what failed.
type openError struct {
	ifname string
	queue  int
	err    error
}

func (e *openError) Error() string {
	msg := strings.ReplaceAll(strings.TrimPrefix(e.err.Error(), "afxdp: "), ": afxdp: ", ": ")
	return fmt.Sprintf("afxdp: open %s queue %d: %s", e.ifname, e.queue, msg)
}

func (e *openError) Unwrap() error { return e.err }

func open(ifname string, queue int, cfg *Config) (*Port, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.RingSize == 0 {
		c.RingSize = defaultRing
	}
	if c.BusyPoll < 0 || c.BusyPoll > 0xffff || c.BusyPollMicros < 0 {
		return nil, fmt.Errorf("afxdp: busy polling budget %d, %d µs: want a budget of 0 (off) to 65535 frames and 0 (default) or more µs", c.BusyPoll, c.BusyPollMicros)
	}
	if c.RingSize < 16 || c.RingSize&(c.RingSize-1) != 0 || c.RingSize > 1<<18 {
		return nil, fmt.Errorf("afxdp: ring size %d: want a power of two from 16 to 256K", c.RingSize)
	}
	if queue < 0 || queue >= xskMapEntries {
		return nil, fmt.Errorf("afxdp: queue %d out of range", queue)
	}
	index, mtu, err := syserr.Interface(ifname)
	if err != nil {
		return nil, err
	}
	ifi := &net.Interface{Index: index, MTU: mtu, Name: ifname}
	u := c.UMEM
	private := u == nil
	if private {
		if u, err = newUMEM(&c.UMEMConfig); err != nil {
			return nil, err
		}
	}
	var prog *xdpProg
	if !c.NoProgram {
		if prog, err = acquireProg(netnsID(), ifi.Index, c.Attach, c.PassEtherType); err != nil {
			if private {
				u.Close()
			}
			return nil, err
		}
	}
	u.mu.Lock()
	sharing := u.regFD >= 0
	u.mu.Unlock()
	modes := []Mode{c.Mode}
	if c.Mode == ModeAuto && !sharing {
		modes = []Mode{ModeZeroCopy, ModeCopy}
	}
	var p *Port
	for _, m := range modes {
		p, err = openSocket(ifi, queue, &c, u, m)
		if err == nil || !errors.Is(err, unix.EOPNOTSUPP) || m != ModeZeroCopy || c.Mode != ModeAuto {
			break
		}
	}
	if err != nil {
		if prog != nil {
			prog.release(-1)
		}
		if private {
			u.Close()
		}
		if c.Mode == ModeZeroCopy && errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("%w: %w", ErrZeroCopy, err)
		}
		return nil, err
	}
	p.private, p.prog = private, prog
	if prog != nil {
		if err := prog.setSocket(queue, p.fd); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// openSocket makes, maps and binds the socket in one mode, undoing everything on failure.
func openSocket(ifi *net.Interface, queue int, c *Config, u *UMEM, mode Mode) (_ *Port, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		err = os.NewSyscallError("socket(AF_XDP)", err)
		if syserr.IsPermission(err) {
			err = syserr.WithHint(err, syserr.Hint("an AF_XDP socket", []syserr.Cap{syserr.NetRaw},
				"a security policy (seccomp, SELinux, AppArmor) or a user namespace that does not own the network namespace refuses it"))
		}
		return nil, err
	}
	p := &Port{name: ifi.Name, ifindex: ifi.Index, queue: queue, fd: fd, efd: -1, ctl: -1, umem: u, mode: mode}
	p.maxLen = min(ifi.MTU+frame.EtherLen+2*frame.VLANLen, int(u.frameSize)-copyHeadroom)
	p.slot, err = u.attach(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	p.acct = u.slots[p.slot-placeSock]
	registered := false
	defer func() {
		if err != nil {
			p.fill.unmap()
			p.comp.unmap()
			p.rx.unmap()
			p.tx.unmap()
			unix.Close(fd)
			if p.efd >= 0 {
				unix.Close(p.efd)
			}
			if p.ctl >= 0 {
				unix.Close(p.ctl)
			}
			u.detach(p.slot, false)
			if registered {
				u.mu.Lock()
				if u.regFD == fd {
					u.regFD = -1
				}
				u.mu.Unlock()
			}
		}
	}()

	u.mu.Lock()
	shareFD := u.regFD
	u.mu.Unlock()
	if shareFD < 0 {
		// In copy mode, unaligned chunk mode, though every chunk the port posts is aligned: in
		// aligned mode the kernel keeps its per-buffer state (struct xdp_buff_xsk) in an array
		// indexed by chunk, so every received frame touches the state of a chunk last used
		// thousands of frames ago (a cache miss on the receiving CPU, two with the descriptor's
		// address); in unaligned mode it takes that state from a stack of free ones and returns
		// it there once the frame is copied, so it reuses the same few, hot in that CPU's cache.
		// On veth that took the kernel's buffer allocation (xp_alloc) from 12 % of the receiving
		// CPU's time to 3.5 % (bench/notes/e2e.md).
		// Received descriptors then carry the frame's offset in their top 16 bits, which Recv
		// adds back (they are zero in aligned mode); fill and TX addresses are the same in both
		// modes. Kernels before 5.4 ignore the flag (the UMEM is then aligned); one that refuses
		// it gets an aligned UMEM. Zero-copy keeps the aligned mode, whose driver paths are the
		// common ones.
		reg := unix.XDPUmemReg{
			Addr:     uint64(uintptr(unsafe.Pointer(&u.mem[0]))),
			Len:      uint64(len(u.mem)),
			Size:     u.frameSize,
			Headroom: u.headroom,
		}
		if mode == ModeCopy {
			reg.Flags = unix.XDP_UMEM_UNALIGNED_CHUNK_FLAG
		}
		err = setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
		if err == unix.EINVAL && reg.Flags != 0 {
			reg.Flags = 0
			err = setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
		}
		if err != nil {
			err = os.NewSyscallError("setsockopt(XDP_UMEM_REG)", err)
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) {
				if h := syserr.Memlock("the UMEM", len(u.mem)); h != "" {
					err = syserr.WithHint(err, h)
				}
			}
			return nil, err
		}
	}
	n := c.RingSize
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err = unix.SetsockoptInt(fd, unix.SOL_XDP, o, n); err != nil {
			return nil, fmt.Errorf("afxdp: setsockopt ring %d: %w", o, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err = getsockopt(fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return nil, fmt.Errorf("afxdp: getsockopt XDP_MMAP_OFFSETS: %w", err)
	}
	const descSize = unsafe.Sizeof(unix.XDPDesc{})
	if p.fill, err = mapRing(fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, uint32(n), 8, false, true); err != nil {
		return nil, err
	}
	if p.comp, err = mapRing(fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, uint32(n), 8, false, false); err != nil {
		return nil, err
	}
	if p.rx, err = mapRing(fd, off.Rx, unix.XDP_PGOFF_RX_RING, uint32(n), descSize, true, false); err != nil {
		return nil, err
	}
	if p.tx, err = mapRing(fd, off.Tx, unix.XDP_PGOFF_TX_RING, uint32(n), descSize, true, true); err != nil {
		return nil, err
	}
	// Let one sendto drain the whole TX ring in copy mode (Linux 6.17+; older kernels keep 32).
	unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, n)

	sa := &unix.SockaddrXDP{Ifindex: uint32(ifi.Index), QueueID: uint32(queue)}
	if shareFD >= 0 {
		// A socket sharing a UMEM may not pass mode flags: it inherits copy/zero-copy and
		// need_wakeup from the socket that registered the UMEM.
		sa.Flags = unix.XDP_SHARED_UMEM
		sa.SharedUmemFD = uint32(shareFD)
		p.wakeup = u.wakeup
	} else {
		if !c.NoNeedWakeup {
			sa.Flags |= unix.XDP_USE_NEED_WAKEUP
			p.wakeup = true
		}
		if mode == ModeZeroCopy {
			sa.Flags |= unix.XDP_ZEROCOPY
		} else {
			sa.Flags |= unix.XDP_COPY
		}
	}
	for i := 0; ; i++ {
		err = unix.Bind(fd, sa)
		if err != unix.EBUSY || i == bindTries {
			break
		}
		time.Sleep(bindPause)
	}
	if err != nil {
		return nil, fmt.Errorf("bind (%s mode): %w", mode, err)
	}
	if shareFD < 0 {
		u.mu.Lock()
		if u.regFD < 0 {
			u.regFD = fd
			u.wakeup = p.wakeup
			registered = true
		}
		u.mu.Unlock()
	}
	var opts uint32
	if getsockopt(fd, unix.SOL_XDP, unix.XDP_OPTIONS, unsafe.Pointer(&opts), 4) == nil {
		if opts&unix.XDP_OPTIONS_ZEROCOPY != 0 {
			p.mode = ModeZeroCopy
		} else {
			p.mode = ModeCopy
		}
	}
	if c.BusyPoll > 0 {
		us := c.BusyPollMicros
		if us <= 0 {
			us = 20
		}
		for _, o := range [][2]int{{unix.SO_PREFER_BUSY_POLL, 1}, {unix.SO_BUSY_POLL, us}, {unix.SO_BUSY_POLL_BUDGET, c.BusyPoll}} {
			if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], o[1]); err != nil {
				return nil, fmt.Errorf("afxdp: busy polling (Config.BusyPoll): setsockopt %#x = %d: %w", o[0], o[1], err)
			}
		}
		p.busy = true
	}
	if p.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("afxdp: eventfd: %w", err)
	}
	if p.ctl, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("afxdp: socket: %w", err)
	}
	p.pfd = [2]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p.efd), Events: unix.POLLIN}}
	if p.ifr, err = unix.NewIfreq(ifi.Name); err != nil {
		return nil, fmt.Errorf("afxdp: %s: %w", ifi.Name, err)
	}
	if p.linkIfr, err = unix.NewIfreq(ifi.Name); err != nil {
		return nil, fmt.Errorf("afxdp: %s: %w", ifi.Name, err)
	}
	p.linkEvery, p.linkAt = int64(carrierEvery), nanotime()
	p.linkUp = p.readLink(p.linkIfr)
	if p.ks, err = ifstats.Track(ifi.Index, kernelStatsEvery); err != nil {
		p.ks, err = nil, nil // the port works without them; Stats().Errors says they are missing
		p.c.Error()
	}
	// Give the kernel half of what is free (all of it up to the ring size for a private UMEM
	// whose other half serves TX copies and refills).
	u.mu.Lock()
	k := min(uint32(n), uint32(len(u.free)/2))
	p.postFillLocked(k)
	u.mu.Unlock()
	atomic.StoreUint32(p.fill.prod, p.fill.local)
	return p, nil
}

// postFillLocked moves k chunks from the free list to the fill ring (not yet published).
func (p *Port) postFillLocked(k uint32) {
	u, f := p.umem, &p.fill
	top := uint32(len(u.free))
	for j := uint32(0); j < k; j++ {
		c := u.free[top-1-j]
		u.where[c] = p.slot
		f.addrs[(f.local+j)&f.mask] = uint64(c) << u.shift
	}
	u.free = u.free[:top-k]
	p.acct.fill += int(k)
	f.local += k
}

// Name is the interface's name.
func (p *Port) Name() string { return p.name }

// Queue is the queue the socket is bound to.
func (p *Port) Queue() int { return p.queue }

// FD is the AF_XDP socket (for a caller's own XDP program; see Config.NoProgram).
func (p *Port) FD() int { return p.fd }

// UMEM is the memory the port receives into.
func (p *Port) UMEM() *UMEM { return p.umem }

// Mode reports whether the socket runs in copy or zero-copy mode.
func (p *Port) Mode() Mode { return p.mode }

// AttachMode reports how the XDP program is attached (AttachAuto if the port loaded none).
func (p *Port) AttachMode() Attach {
	if p.prog == nil {
		return AttachAuto
	}
	return p.prog.attach
}

func (p *Port) unlockPanic(msg string, c uint32) {
	p.umem.mu.Unlock()
	panic(fmt.Sprintf("afxdp: %s: UMEM chunk %d", msg, c))
}

// Recv implements xmit.Port: it hands out up to b.Cap() received frames (descriptors into the
// UMEM, b.Owner the UMEM) and refills the fill ring with the chunks released since the last call.
func (p *Port) Recv(b *frame.Batch) (int, error) {
	if len(b.Frames) != 0 {
		return 0, xmit.ErrNotEmpty
	}
	p.rxMu.Lock()
	if p.closed.Load() {
		p.rxMu.Unlock()
		return 0, xmit.ErrClosed
	}
	rx, fill, u := &p.rx, &p.fill, p.umem
	n := rx.cached - rx.local
	if n == 0 {
		rx.cached = atomic.LoadUint32(rx.prod)
		n = rx.cached - rx.local
		if n == 0 && p.busy {
			// Busy polling: run the interface's receive NAPI here, then look again.
			kick(unix.SYS_RECVFROM, p.fd)
			rx.cached = atomic.LoadUint32(rx.prod)
			n = rx.cached - rx.local
		}
	}
	n = min(n, uint32(cap(b.Frames)))
	fill.cached = atomic.LoadUint32(fill.cons)
	room := fill.size - (fill.local - fill.cached)
	if n == 0 && room < refillMin {
		p.rxMu.Unlock()
		return 0, nil
	}
	fr := b.Frames[:n]
	mask := u.frameSize - 1
	bytes := 0
	for i := range fr {
		d := &rx.descs[(rx.local+uint32(i))&rx.mask]
		a := d.Addr&(1<<48-1) + d.Addr>>48 // unaligned mode: base | offset<<48 (aligned: no offset bits)
		off := uint32(a) & mask
		fr[i] = frame.Frame{
			Off:  uint32(a),
			Buf:  uint32(a >> u.shift),
			Len:  uint16(d.Len),
			Head: uint16(off),
			Tail: uint16(u.frameSize - off - d.Len),
		}
		bytes += int(d.Len)
	}
	u.mu.Lock()
	for i := range fr {
		c := fr[i].Buf
		if c >= u.nframes || u.where[c] != p.slot {
			p.rxMu.Unlock()
			p.unlockPanic("kernel returned a chunk its socket did not hold", c)
		}
		u.where[c] = placeUser
	}
	p.acct.fill -= int(n)
	u.nUser += int(n)
	k := uint32(0)
	if room >= refillMin || n > 0 {
		k = min(room, uint32(len(u.free)))
		p.postFillLocked(k)
	}
	u.mu.Unlock()
	if n > 0 {
		rx.local += n
		atomic.StoreUint32(rx.cons, rx.local)
	}
	if k > 0 {
		atomic.StoreUint32(fill.prod, fill.local)
		if p.wakeup && fill.needWakeup() {
			kick(unix.SYS_RECVFROM, p.fd)
		}
	}
	p.rxMu.Unlock()
	if n == 0 {
		return 0, nil
	}
	b.Frames, b.Mem, b.Owner = fr, u.mem, u
	p.c.Rx(int(n), bytes)
	return int(n), nil
}

// Send implements xmit.Port. Frames of the port's UMEM (received on it or on another port sharing
// it) go on the TX ring as they are; frames of another arena are copied into free chunks first.
// Frames the TX ring has no room for, longer than the MTU allows, or shorter than an Ethernet
// header are released and counted in TxDropped, and so is the whole batch while the interface is
// down or without a carrier (LinkUp false; Send reads it at most once a millisecond), which the
// kernel would drop or leave on the ring. Send also reaps the completion ring and kicks the
// kernel; calling it with an empty batch does only that.
func (p *Port) Send(b *frame.Batch) (int, error) {
	p.txMu.Lock()
	if p.closed.Load() {
		p.txMu.Unlock()
		p.c.TxDrop(len(b.Frames))
		b.Free()
		return 0, xmit.ErrClosed
	}
	u := p.umem
	if !p.carrier() {
		// Down or without a carrier: the kernel would drop what it takes off the TX ring (or
		// leave it there), so the frames are dropped and counted here and the ring is not kicked.
		n := len(b.Frames)
		b.Free()
		u.mu.Lock()
		cprod := p.reapLocked()
		u.mu.Unlock()
		p.publishReaped(cprod)
		p.txMu.Unlock()
		p.c.TxDrop(n)
		return 0, nil
	}
	if len(b.Frames) > 0 && b.Owner != frame.Owner(u) {
		p.copyIn(b)
	}
	fr := b.Frames
	n := len(fr)
	mask := u.frameSize - 1
	// Tags in band; keep what can go out in front, in order.
	k := 0
	for i := range fr {
		if fr[i].Flags&frame.FlagVLAN != 0 && b.ReinsertVLAN(i) != nil {
			continue
		}
		f := &fr[i]
		if int(f.Len) > p.maxLen || f.Len < frame.EtherLen || f.Off>>u.shift != f.Buf || f.Off&mask+uint32(f.Len) > u.frameSize {
			continue
		}
		if k != i {
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	tx := &p.tx
	room := tx.size - (tx.local - tx.cached)
	if room < uint32(k) {
		tx.cached = atomic.LoadUint32(tx.cons)
		room = tx.size - (tx.local - tx.cached)
	}
	q := min(uint32(k), room)
	bytes := 0
	for i := uint32(0); i < q; i++ {
		f := &fr[i]
		d := &tx.descs[(tx.local+i)&tx.mask]
		d.Addr, d.Len, d.Options = uint64(f.Off), uint32(f.Len), 0
		bytes += int(f.Len)
	}
	u.mu.Lock()
	for i := range fr {
		if c := fr[i].Buf; c >= u.nframes || u.where[c] != placeUser {
			p.txMu.Unlock()
			p.unlockPanic("sent but not held by the caller (sent or released twice, or foreign)", c)
		}
	}
	for i := range fr {
		c := fr[i].Buf
		if uint32(i) < q {
			u.where[c] = p.slot
		} else {
			u.where[c] = placeFree
			u.free = append(u.free, c)
		}
	}
	u.nUser -= n
	p.acct.tx += int(q)
	cprod := p.reapLocked()
	u.mu.Unlock()
	p.publishReaped(cprod)
	if q > 0 {
		tx.local += q
		atomic.StoreUint32(tx.prod, tx.local)
	}
	if tx.local != tx.cached {
		p.kickTx()
	}
	b.Frames = fr[:0]
	p.txMu.Unlock()
	p.c.Tx(int(q), bytes)
	p.c.TxDrop(n - int(q))
	return int(q), nil
}

// reapLocked returns completed TX chunks to the free list (u.mu held); publishReaped then gives
// the completion ring slots back to the kernel.
func (p *Port) reapLocked() uint32 {
	u, cr := p.umem, &p.comp
	prod := atomic.LoadUint32(cr.prod)
	nc := prod - cr.local
	for j := uint32(0); j < nc; j++ {
		c := uint32(cr.addrs[(cr.local+j)&cr.mask] >> u.shift)
		if c >= u.nframes || u.where[c] != p.slot {
			p.txMu.Unlock()
			p.unlockPanic("kernel completed a chunk its socket did not hold", c)
		}
		u.where[c] = placeFree
		u.free = append(u.free, c)
	}
	p.acct.tx -= int(nc)
	return prod
}

func (p *Port) publishReaped(prod uint32) {
	if prod != p.comp.local {
		p.comp.local = prod
		atomic.StoreUint32(p.comp.cons, prod)
	}
}

// kickTx makes the kernel transmit what is on the TX ring. In copy mode the kernel transmits only
// inside sendto, so it is always called; in zero-copy mode only when the kernel asks.
//
// In copy mode EBUSY means the kernel took one frame off the ring and the device dropped it (it is
// down or has no carrier): the frame's chunk comes back through the completion ring like a sent
// one's, so the frame is counted in TxLost here. ENETDOWN (the interface is down) leaves the frames
// on the ring until it is up again or Close.
func (p *Port) kickTx() {
	if p.mode == ModeZeroCopy && p.wakeup && !p.tx.needWakeup() {
		return
	}
	for i := 0; i < 8; i++ {
		e := kick(unix.SYS_SENDTO, p.fd)
		switch e {
		case 0, unix.EAGAIN:
			// EAGAIN: the kernel's per-call budget ran out (or the device was busy).
			p.tx.cached = atomic.LoadUint32(p.tx.cons)
			if p.tx.cached == p.tx.local || e == 0 && p.mode == ModeZeroCopy {
				return
			}
		case unix.EBUSY:
			if p.mode != ModeZeroCopy {
				p.c.TxLose(1)
			}
			return
		case unix.ENOBUFS:
			return
		default: // ENETDOWN, ENXIO: frames stay on the ring until the link is back or Close
			p.c.Error()
			return
		}
	}
}

// copyIn replaces b's frames (another arena's) by copies in free chunks, releasing the originals.
func (p *Port) copyIn(b *frame.Batch) {
	u := p.umem
	n := len(b.Frames)
	if cap(p.scratch) < n {
		p.scratch = make([]frame.Frame, n) // grows to the largest batch once
	}
	sc := p.scratch[:n]
	u.mu.Lock()
	cprod := p.reapLocked()
	k := min(n, len(u.free))
	top := len(u.free)
	for j := 0; j < k; j++ {
		c := u.free[top-1-j]
		u.where[c] = placeUser
		sc[j].Buf = c
	}
	u.free = u.free[:top-k]
	u.nUser += k
	u.mu.Unlock()
	p.publishReaped(cprod)
	room := int(u.frameSize) - copyHeadroom
	for i := 0; i < k; i++ {
		src := &b.Frames[i]
		c := sc[i].Buf
		off := c<<u.shift + copyHeadroom
		l := int(src.Len)
		if l > room {
			l = 0 // cannot be sent: Send drops it as too short
		} else {
			copy(u.mem[off:off+uint32(l)], src.Data(b.Mem))
		}
		sc[i] = frame.Frame{
			Off: off, Buf: c, Len: uint16(l), Head: copyHeadroom, Tail: uint16(room - l),
			Flags: src.Flags, TPID: src.TPID, TCI: src.TCI, Port: src.Port, Out: src.Out, Meta: src.Meta,
		}
	}
	p.c.TxCopy(k)
	p.c.TxDrop(n - k) // no free chunk
	b.Free()
	b.Frames = append(b.Frames[:0], sc[:k]...)
	b.Mem, b.Owner = u.mem, u
}

// Wait implements xmit.Waiter: it blocks until the RX ring has frames, the timeout passes
// (timeoutNs < 0: none) or the port is closed (ErrClosed). Call it from the receiving goroutine.
func (p *Port) Wait(timeoutNs int64) error {
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	if p.closed.Load() {
		return xmit.ErrClosed
	}
	if atomic.LoadUint32(p.rx.prod) != p.rx.local {
		return nil
	}
	var ts *unix.Timespec
	if timeoutNs >= 0 {
		p.ts = unix.NsecToTimespec(timeoutNs)
		ts = &p.ts
	}
	_, err := unix.Ppoll(p.pfd[:], ts, nil)
	if p.closed.Load() {
		return xmit.ErrClosed
	}
	if err != nil && err != unix.EINTR {
		p.c.Error()
		return fmt.Errorf("afxdp: ppoll: %w", err)
	}
	return nil
}

// PollFD implements xmit.Poller for the worker that calls Recv: the socket, and whether the receive
// ring holds frames now.
func (p *Port) PollFD() (fd int, ready bool) {
	if p.closed.Load() {
		return -1, false
	}
	return int(p.pfd[0].Fd), atomic.LoadUint32(p.rx.prod) != p.rx.local
}

// LinkUp implements xmit.LinkStater: the interface is up and has carrier (IFF_UP|IFF_RUNNING).
func (p *Port) LinkUp() bool {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.fdClosed {
		return false
	}
	return p.readLink(p.ifr)
}

// readLink reads the interface's flags (SIOCGIFFLAGS on the port's control socket, in the port's
// network namespace) and reports whether it is up with a carrier: IFF_UP and IFF_RUNNING (the
// operational state the kernel derives from the carrier). The socket must be open.
func (p *Port) readLink(ifr *unix.Ifreq) bool {
	if unix.IoctlIfreq(p.ctl, unix.SIOCGIFFLAGS, ifr) != nil {
		return false
	}
	f := ifr.Uint16()
	return f&unix.IFF_UP != 0 && f&unix.IFF_RUNNING != 0
}

// carrier is Send's view of LinkUp, read again when the last reading is carrierEvery old: one ioctl
// a millisecond at most, not one per batch. Under txMu, the port open.
func (p *Port) carrier() bool {
	if now := nanotime(); now-p.linkAt >= p.linkEvery {
		p.linkAt = now
		p.linkUp = p.readLink(p.linkIfr)
	}
	return p.linkUp
}

// XDPStats reads the kernel's counters for the socket (the last values after Close).
func (p *Port) XDPStats() (XDPStats, error) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.fdClosed {
		return p.last, nil
	}
	var s unix.XDPStatistics
	if err := getsockopt(p.fd, unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&s), unsafe.Sizeof(s)); err != nil {
		return XDPStats{}, fmt.Errorf("afxdp: getsockopt XDP_STATISTICS: %w", err)
	}
	p.last = XDPStats{s.Rx_dropped, s.Rx_invalid_descs, s.Tx_invalid_descs, s.Rx_ring_full, s.Rx_fill_ring_empty_descs, s.Tx_ring_empty_descs}
	return p.last, nil
}

// Stats implements xmit.Port. RxDropped includes the kernel's drops for the socket (XDP_STATISTICS
// rx_dropped and rx_ring_full) and Errors its invalid descriptors. TxLost counts the frames the TX
// ring took that never left: those the kernel took off the ring and the device dropped (sendto
// answered EBUSY: the interface went down or lost its carrier), TX descriptors the kernel skipped
// as invalid (XDP_STATISTICS tx_invalid_descs), and those Close found still on the ring. The
// Kernel* fields are the interface's own counters (see xmit.Stats), read over rtnetlink at most
// every 100 ms and a last time at Close.
func (p *Port) Stats() xmit.Stats {
	var k ifstats.Counters
	if p.ks != nil {
		var err error
		if k, _, err = p.ks.Counters(); err != nil {
			p.c.Error()
		}
	}
	s := p.c.Stats()
	x, _ := p.XDPStats()
	s.RxDropped += x.RxDropped + x.RxRingFull
	s.Errors += x.RxInvalidDescs + x.TxInvalidDescs
	s.TxLost += x.TxInvalidDescs
	k.AddTo(&s)
	return s
}

// Close detaches the socket from the XDP program (unloading it with the interface's last port),
// closes the socket and reclaims every chunk its rings held; frames still on the TX ring, which the
// kernel never took, are counted in Stats().TxLost. A goroutine blocked in Wait returns
// ErrClosed; Recv and Send in progress finish first. Frames the caller still holds stay valid
// until released; a private UMEM is unmapped after the last one. Closing twice is harmless.
func (p *Port) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	one := [8]byte{1}
	unix.Write(p.efd, one[:])
	p.rxMu.Lock()
	p.txMu.Lock()
	if !p.private && p.tx.local != p.comp.local {
		// Other ports go on using the UMEM: let frames in flight complete so the chunks come back
		// through the completion ring rather than being reused while the kernel reads them.
		for i := 0; i < 50 && p.tx.local != p.comp.local; i++ {
			p.kickTx()
			time.Sleep(time.Millisecond)
			p.umem.mu.Lock()
			cprod := p.reapLocked()
			p.umem.mu.Unlock()
			p.publishReaped(cprod)
		}
	} else if p.tx.local != atomic.LoadUint32(p.tx.cons) {
		// Frames a Send left on the TX ring (the kernel's budget or the completion ring ran out):
		// give the kernel one more chance to take them.
		p.umem.mu.Lock()
		cprod := p.reapLocked()
		p.umem.mu.Unlock()
		p.publishReaped(cprod)
		p.kickTx()
	}
	// Frames still on the TX ring were never taken by the kernel: Close discards them.
	p.c.TxLose(int(p.tx.local - atomic.LoadUint32(p.tx.cons)))
	p.XDPStats() // keep the final counters
	if p.prog != nil {
		p.prog.release(p.queue)
	}
	p.statsMu.Lock()
	p.fdClosed = true
	unix.Close(p.fd)
	unix.Close(p.efd)
	unix.Close(p.ctl)
	p.statsMu.Unlock()
	p.fill.unmap()
	p.comp.unmap()
	p.rx.unmap()
	p.tx.unmap()
	p.umem.detach(p.slot, p.private)
	p.txMu.Unlock()
	p.rxMu.Unlock()
	if p.ks != nil {
		p.ks.Close() // the final reading of the interface's counters
	}
	return nil
}

// kick is a non-blocking sendto or recvfrom without data on the socket: the kernel transmits
// from the TX ring, or takes the fill ring (or busy-polls). It is a raw system call, which the Go
// scheduler does not see: a kick never blocks, but a copy-mode sendto of a batch takes longer
// than the scheduler monitor's 20 µs tick, and as an ordinary system call its P would be handed to
// another thread meanwhile and the worker would wait for a thread switch to get it back, once per
// batch (bench/notes/e2e.md).
func kick(trap uintptr, fd int) unix.Errno {
	_, _, e := unix.RawSyscall6(trap, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}
