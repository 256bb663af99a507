package frame

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// PoolConfig sizes a Pool. The zero value gives 4096 buffers of 2112 bytes with 128 bytes of headroom.
//
// The default stride is 2112 bytes (33 cache lines), not 2048, on purpose: with a power-of-two stride
// the headers of consecutive buffers all fall into the same few sets of the CPU caches, and a batch
// of 64 frames evicts its own headers; an odd number of lines spreads them over every set.
type PoolConfig struct {
	Buffers  int // number of buffers (default 4096)
	BufSize  int // bytes per buffer, headroom included (default 2112, at most 65535+Headroom)
	Headroom int // bytes reserved in front of every fresh frame (default 128)
}

// Pool is an arena of fixed-size buffers: the memory behind the in-memory ports, and a model of what
// AF_XDP's UMEM and AF_PACKET's rings provide.
//
// Alloc and Release take a mutex once per call (once per batch), so a Pool may be shared by every
// goroutine of a process. Release detects a buffer released twice (a bug in the caller: it panics)
// and InUse counts the buffers handed out and not yet returned, so a test can prove that none was
// lost.
type Pool struct {
	_ [0]sync.Mutex

	mem      []byte
	bufSize  uint32
	headroom uint32

	mu    sync.Mutex
	free  []uint32 // stack of free buffer indices
	out   []uint64 // bit i set: buffer i is handed out
	inUse atomic.Int64
}

// NewPool allocates the arena. A nil config means defaults.
func NewPool(cfg *PoolConfig) (*Pool, error) {
	var c PoolConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Buffers == 0 {
		c.Buffers = 4096
	}
	if c.BufSize == 0 {
		c.BufSize = 2112
	}
	if c.Headroom == 0 {
		c.Headroom = 128
	}
	switch {
	case c.Buffers < 0 || c.BufSize < 0 || c.Headroom < 0:
		return nil, errors.New("frame: negative pool size")
	case c.Headroom >= c.BufSize:
		return nil, fmt.Errorf("frame: headroom %d leaves no room in %d-byte buffers", c.Headroom, c.BufSize)
	case c.Headroom > 0xffff || c.BufSize-c.Headroom > 0xffff:
		return nil, fmt.Errorf("frame: buffer of %d bytes does not fit a 16-bit frame length", c.BufSize)
	case uint64(c.Buffers)*uint64(c.BufSize) > 1<<32:
		return nil, fmt.Errorf("frame: pool of %d x %d bytes exceeds 4 GiB", c.Buffers, c.BufSize)
	}
	p := &Pool{
		mem:      make([]byte, c.Buffers*c.BufSize),
		bufSize:  uint32(c.BufSize),
		headroom: uint32(c.Headroom),
		free:     make([]uint32, c.Buffers),
		out:      make([]uint64, (c.Buffers+63)/64),
	}
	for i := range p.free {
		p.free[i] = uint32(c.Buffers - 1 - i) // pop order 0, 1, 2, ...
	}
	return p, nil
}

// Mem is the arena.
func (p *Pool) Mem() []byte { return p.mem }

// Buffers is the pool's total number of buffers.
func (p *Pool) Buffers() int { return len(p.mem) / int(p.bufSize) }

// BufSize is the size of one buffer, headroom included.
func (p *Pool) BufSize() int { return int(p.bufSize) }

// Headroom is the headroom of a fresh frame.
func (p *Pool) Headroom() int { return int(p.headroom) }

// InUse is the number of buffers handed out and not yet released.
func (p *Pool) InUse() int { return int(p.inUse.Load()) }

// Alloc appends up to n fresh, empty frames (Len 0, full headroom and tailroom, zero metadata) to b
// and returns how many it appended: fewer when the pool or the batch runs out of room. An empty b
// becomes a batch of this pool; a non-empty b must already be one (else 0, ErrForeign).
func (p *Pool) Alloc(b *Batch, n int) (int, error) {
	if len(b.Frames) == 0 {
		b.Mem, b.Owner = p.mem, p
	} else if b.Owner != Owner(p) {
		return 0, ErrForeign
	}
	n = min(n, b.Space())
	if n <= 0 {
		return 0, nil
	}
	p.mu.Lock()
	n = min(n, len(p.free))
	top := len(p.free)
	got := p.free[top-n : top]
	base := len(b.Frames)
	b.Frames = b.Frames[:base+n]
	out := b.Frames[base : base+n]
	tail := uint16(p.bufSize - p.headroom)
	for i, idx := range got {
		p.out[idx>>6] |= 1 << (idx & 63)
		out[i] = Frame{
			Off:  idx*p.bufSize + p.headroom,
			Buf:  idx,
			Head: uint16(p.headroom),
			Tail: tail,
		}
	}
	p.free = p.free[:top-n]
	p.mu.Unlock()
	p.inUse.Add(int64(n))
	return n, nil
}

// Release returns frames to the pool. Frames must have come from this pool's Alloc (Buf is the
// buffer index); releasing a buffer that is not handed out panics, since it means two holders
// believed they owned it.
func (p *Pool) Release(frames []Frame) {
	if len(frames) == 0 {
		return
	}
	nbuf := uint32(len(p.out) * 64)
	p.mu.Lock()
	for i := range frames {
		idx := frames[i].Buf
		if idx >= nbuf || p.out[idx>>6]&(1<<(idx&63)) == 0 {
			p.mu.Unlock()
			panic(fmt.Sprintf("frame: buffer %d released but not handed out (double release or foreign frame)", idx))
		}
		p.out[idx>>6] &^= 1 << (idx & 63)
		p.free = append(p.free, idx)
	}
	p.mu.Unlock()
	p.inUse.Add(-int64(len(frames)))
}
