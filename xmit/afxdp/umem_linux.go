package afxdp

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/wirespeed/wirespeed/frame"
	"golang.org/x/sys/unix"
)

// Chunk places (UMEM.where). Values from placeSock up name the socket slot whose kernel side holds
// the chunk (its fill ring, the kernel, its RX ring; or its TX ring, the kernel, its completion ring).
const (
	placeFree uint16 = iota
	placeUser
	placeSock
)

// UMEM is the memory AF_XDP sockets receive into and transmit from: Frames chunks of FrameSize
// bytes in one mmap'd arena. A port makes its own unless Config.UMEM names one to share.
//
// A UMEM is the frame.Owner of the frames its ports hand out: Release returns them to its free list.
// Every method is safe for concurrent use; the free list and the per-chunk places are guarded by a
// mutex taken once per batch. The arena stays mapped until the UMEM is closed (by its last port for
// a private UMEM, by Close for a shared one) and every frame a caller holds has been released.
type UMEM struct {
	_ [0]sync.Mutex

	mem       []byte
	frameSize uint32
	shift     uint
	nframes   uint32
	headroom  uint32
	shared    bool

	mu      sync.Mutex
	free    []uint32 // stack of free chunk indices
	where   []uint16 // place of each chunk
	nUser   int
	slots   []*sockAcct // index s-placeSock: the sockets using the UMEM (nil: free slot)
	nClosed int
	ports   int  // open sockets
	closing bool // no more ports; unmap when nUser reaches 0
	regFD   int  // a live socket fd to share the UMEM through (-1: none registered yet)
	wakeup  bool // the registering socket uses need_wakeup (sharing sockets inherit it)
}

// sockAcct is one socket's share of a UMEM's chunks.
type sockAcct struct {
	fill int // posted to the fill ring, not yet received
	tx   int // posted to the TX ring, not yet completed
	fd   int
}

// NewUMEM maps a UMEM to be shared by several ports (Config.UMEM). Close it after its ports.
func NewUMEM(cfg *UMEMConfig) (*UMEM, error) {
	u, err := newUMEM(cfg)
	if err == nil {
		u.shared = true
	}
	return u, err
}

func newUMEM(cfg *UMEMConfig) (*UMEM, error) {
	var c UMEMConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Frames == 0 {
		c.Frames = 4096
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	switch {
	case c.FrameSize != 2048 && c.FrameSize != 4096:
		return nil, fmt.Errorf("afxdp: frame size %d: want 2048 or 4096", c.FrameSize)
	case c.Frames < 16 || c.Frames > 1<<20:
		return nil, fmt.Errorf("afxdp: %d frames: want 16 to 1M", c.Frames)
	case c.Headroom < 0 || c.Headroom > c.FrameSize/2:
		return nil, fmt.Errorf("afxdp: headroom %d too large for %d-byte frames", c.Headroom, c.FrameSize)
	}
	n := 1 << bits.Len(uint(c.Frames-1))
	mem, err := mmapUMEM(n * c.FrameSize)
	if err != nil {
		return nil, err
	}
	u := &UMEM{
		mem:       mem,
		frameSize: uint32(c.FrameSize),
		shift:     uint(bits.TrailingZeros(uint(c.FrameSize))),
		nframes:   uint32(n),
		headroom:  uint32(c.Headroom),
		free:      make([]uint32, n),
		where:     make([]uint16, n),
		regFD:     -1,
	}
	for i := range u.free {
		u.free[i] = uint32(n - 1 - i)
	}
	return u, nil
}

// Mem is the arena (the b.Mem of every batch the UMEM's ports hand out).
func (u *UMEM) Mem() []byte { return u.mem }

// Frames is the number of chunks.
func (u *UMEM) Frames() int { return int(u.nframes) }

// FrameSize is the chunk size.
func (u *UMEM) FrameSize() int { return int(u.frameSize) }

// Release returns frames the caller holds to the free list (frame.Owner). Releasing a frame the
// caller does not hold (released twice, already sent, of another UMEM) panics: two holders believed
// they owned it.
func (u *UMEM) Release(frames []frame.Frame) {
	if len(frames) == 0 {
		return
	}
	u.mu.Lock()
	for i := range frames {
		c := frames[i].Buf
		if c >= u.nframes || u.where[c] != placeUser {
			u.mu.Unlock()
			panic(fmt.Sprintf("afxdp: UMEM chunk %d released but not held by the caller (double release or foreign frame)", c))
		}
		u.where[c] = placeFree
		u.free = append(u.free, c)
	}
	u.nUser -= len(frames)
	u.maybeUnmapLocked()
	u.mu.Unlock()
}

// Accounting reports where the chunks are; the counts always add up to Total.
func (u *UMEM) Accounting() Accounting {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := Accounting{Total: int(u.nframes), Free: len(u.free), User: u.nUser, Closed: u.nClosed}
	for _, s := range u.slots {
		if s != nil {
			a.Fill += s.fill
			a.TX += s.tx
		}
	}
	return a
}

// Verify checks the accounting against every chunk's recorded place: the free list holds each
// free chunk exactly once, and the per-place counts match. Tests call it; it costs O(Frames).
func (u *UMEM) Verify() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	counts := make(map[uint16]int)
	for _, w := range u.where {
		counts[w]++
	}
	seen := make([]bool, u.nframes)
	for _, c := range u.free {
		if c >= u.nframes || seen[c] || u.where[c] != placeFree {
			return fmt.Errorf("afxdp: free list entry %d duplicated or not free", c)
		}
		seen[c] = true
	}
	if counts[placeFree] != len(u.free) {
		return fmt.Errorf("afxdp: %d chunks marked free, %d on the free list", counts[placeFree], len(u.free))
	}
	if counts[placeUser] != u.nUser {
		return fmt.Errorf("afxdp: %d chunks marked held by callers, counted %d", counts[placeUser], u.nUser)
	}
	for i, s := range u.slots {
		n := counts[placeSock+uint16(i)]
		if s == nil {
			if n != 0 {
				return fmt.Errorf("afxdp: %d chunks in closed socket slot %d", n, i)
			}
			continue
		}
		if n != s.fill+s.tx {
			return fmt.Errorf("afxdp: socket slot %d holds %d chunks, counted %d fill + %d tx", i, n, s.fill, s.tx)
		}
	}
	return nil
}

// Close unmaps a shared UMEM once every frame callers hold is released. It returns ErrUMEMInUse,
// changing nothing, while a port still uses it.
func (u *UMEM) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ports > 0 {
		return ErrUMEMInUse
	}
	u.closing = true
	u.maybeUnmapLocked()
	return nil
}

func (u *UMEM) maybeUnmapLocked() {
	if u.closing && u.ports == 0 && u.nUser == 0 && u.mem != nil {
		unix.Munmap(u.mem)
		u.mem = nil
	}
}

// attach gives a new socket a slot.
func (u *UMEM) attach(fd int) (uint16, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return 0, fmt.Errorf("afxdp: UMEM closed")
	}
	s := &sockAcct{fd: fd}
	for i, old := range u.slots {
		if old == nil {
			u.slots[i] = s
			u.ports++
			return placeSock + uint16(i), nil
		}
	}
	if len(u.slots) >= 0xffff-int(placeSock) {
		return 0, fmt.Errorf("afxdp: too many sockets on one UMEM")
	}
	u.slots = append(u.slots, s)
	u.ports++
	return placeSock + uint16(len(u.slots)-1), nil
}

// detach reclaims every chunk the socket's kernel side held (the socket is closed: the kernel no
// longer uses them) and frees its slot. With last, the UMEM closes (a private UMEM).
func (u *UMEM) detach(slot uint16, last bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c, w := range u.where {
		if w == slot {
			u.where[c] = placeFree
			u.free = append(u.free, uint32(c))
		}
	}
	s := u.slots[slot-placeSock]
	u.slots[slot-placeSock] = nil
	u.ports--
	if u.regFD == s.fd {
		u.regFD = -1
		for _, o := range u.slots {
			if o != nil {
				u.regFD = o.fd
				break
			}
		}
	}
	if last {
		u.closing = true
	}
	u.maybeUnmapLocked()
}

// mmapUMEM maps size bytes of anonymous memory for a UMEM and asks for transparent huge pages
// (MADV_HUGEPAGE, which works with the kernel's default THP mode "madvise"). Every received frame
// sits in its own chunk, so with 4 KiB pages a receiver takes a TLB miss every one or two frames;
// a 2 MiB page covers 1024 chunks. The pages are not populated here: registering the UMEM
// (XDP_UMEM_REG) pins, and so faults in, every page, as huge pages where the kernel can. Linux 6.7
// and later place anonymous mappings whose size is a multiple of 2 MiB on a 2 MiB boundary, so the
// whole UMEM can be huge pages; older kernels give the 2 MiB-aligned part huge pages and the ends 4
// KiB ones; with THP off, or no huge page to be had, it is all 4 KiB pages and works the same.
func mmapUMEM(size int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap UMEM: %w", err)
	}
	unix.Madvise(mem, unix.MADV_HUGEPAGE) // best effort
	return mem, nil
}
