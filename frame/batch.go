package frame

// DefaultBatch is the batch capacity wirespeed's examples use.
const DefaultBatch = 64

// Batch is a fixed-capacity vector of frames that live in one arena and go back to one owner.
//
// A batch is owned by one goroutine at a time; it is not safe for concurrent use. Its capacity is
// fixed at NewBatch and never grows, so the hot path never allocates. Frames is the live part
// (len = number of frames); stages may index, reorder and truncate it freely, as long as every frame
// removed is passed on or released (see the package documentation on ownership).
type Batch struct {
	Frames []Frame
	// Mem is the arena the frames point into. Set by whoever fills an empty batch.
	Mem []byte
	// Owner receives the frames back. Set together with Mem.
	Owner Owner
}

// NewBatch returns an empty batch with room for capacity frames (DefaultBatch if capacity <= 0).
func NewBatch(capacity int) *Batch {
	if capacity <= 0 {
		capacity = DefaultBatch
	}
	return &Batch{Frames: make([]Frame, 0, capacity)}
}

// Len is the number of frames in the batch.
func (b *Batch) Len() int { return len(b.Frames) }

// Cap is the batch's fixed capacity.
func (b *Batch) Cap() int { return cap(b.Frames) }

// Space is how many more frames fit.
func (b *Batch) Space() int { return cap(b.Frames) - len(b.Frames) }

// Bytes returns frame i's bytes.
func (b *Batch) Bytes(i int) []byte { return b.Frames[i].Data(b.Mem) }

// Reset empties the batch without releasing its frames: use it after the frames were passed on.
// The arena and owner are kept.
func (b *Batch) Reset() { b.Frames = b.Frames[:0] }

// Free releases every frame to the owner and empties the batch.
func (b *Batch) Free() {
	if len(b.Frames) > 0 && b.Owner != nil {
		b.Owner.Release(b.Frames)
	}
	b.Frames = b.Frames[:0]
}

// Adopt empties b (which must hold no frames it owns) and makes it a batch of src's arena and
// owner, ready to take frames moved out of src.
func (b *Batch) Adopt(src *Batch) {
	b.Frames = b.Frames[:0]
	b.Mem = src.Mem
	b.Owner = src.Owner
}

// Append adds f and reports whether there was room. f must belong to b's arena.
func (b *Batch) Append(f Frame) bool {
	n := len(b.Frames)
	if n == cap(b.Frames) {
		return false
	}
	b.Frames = b.Frames[:n+1]
	b.Frames[n] = f
	return true
}

// SameArena reports whether o's frames live in b's arena (so frames may move between them).
func (b *Batch) SameArena(o *Batch) bool {
	return len(b.Mem) == len(o.Mem) && (len(b.Mem) == 0 || &b.Mem[0] == &o.Mem[0])
}
