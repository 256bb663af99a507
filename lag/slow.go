package lag

import (
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// SlowEtherType is the Slow_Protocols_Type of LACP and the marker protocol (IEEE 802.3 Annex 57A).
const SlowEtherType = 0x8809

// SlowHandler takes the slow-protocols frames an aggregate's Recv removes from what its members
// received (Config.SlowProtocols): lacp.Controller's HandleSlow. It is called from the receiving
// goroutine, once per frame, with the frame's bytes, valid only during the call (the frame is
// released after it returns); member is the member index. It must return quickly.
type SlowHandler interface {
	HandleSlow(member int, frame []byte)
}

// slowScan is non-zero when some frame of fr, at least 14 bytes long, carries EtherType 0x8809
// right after the addresses. It reads two bytes per frame and takes no branch but the loop's:
// the offset is clamped to the arena (a frame shorter than 14 bytes reads what lies after it in
// the arena, then its length masks the result), and a batch of an arena shorter than 14 bytes
// reads nothing.
func slowScan(mem []byte, fr []frame.Frame) uint32 {
	lim := len(mem) - frame.EtherLen
	n := len(fr) &^ (lim >> (bits.UintSize - 1)) // lim < 0: no frame can hold a header
	base := unsafe.Pointer(unsafe.SliceData(mem))
	var acc uint32
	for i := 0; i < n; i++ {
		acc |= slowOne(base, &fr[i], lim)
	}
	return acc
}

// slowOne is 1 when frame f is a slow-protocols frame (see slowScan).
func slowOne(base unsafe.Pointer, f *frame.Frame, lim int) uint32 {
	d := int(f.Off) - lim
	off := lim + d&(d>>(bits.UintSize-1)) // min(Off, lim), without the branch min compiles to
	p := unsafe.Add(base, off+12)
	// The two bytes read as a little-endian word (one load, no byte swap): 0x8809 is 0x0988.
	et := uint32(*(*byte)(p)) | uint32(*(*byte)(unsafe.Add(p, 1)))<<8
	hit := ((et ^ 0x0988) - 1) >> 31          // 1 when et == 0x0988 (et ^ 0x0988 < 65536)
	long := ^(uint32(f.Len) - frame.EtherLen) // top bit set when Len >= 14
	return hit & (long >> 31)
}

// filterRx removes from b, received on member i, the slow-protocols frames (handed to the
// SlowHandler; those with an out-of-band VLAN tag are dropped, slow protocols being untagged)
// and, when the member is not usable, every other frame (bonding drops what inactive slaves
// receive). It returns the frames left.
func (a *Aggregate) filterRx(i int, b *frame.Batch, inactive bool) int {
	drop := a.rxDrop[:0]
	keep := 0
	var slow, slowBytes, tagged, taggedBytes, idle, idleBytes uint64
	for k := range b.Frames {
		f := b.Frames[k]
		d := f.Data(b.Mem)
		switch {
		case len(d) >= frame.EtherLen && d[12] == SlowEtherType>>8 && d[13] == SlowEtherType&0xff:
			if f.Flags&frame.FlagVLAN != 0 {
				tagged++
				taggedBytes += uint64(len(d))
			} else {
				a.slow.HandleSlow(i, d)
				slow++
				slowBytes += uint64(len(d))
			}
			drop = append(drop, f)
		case inactive:
			idle++
			idleBytes += uint64(len(d))
			drop = append(drop, f)
		default:
			b.Frames[keep] = f
			keep++
		}
	}
	b.Frames = b.Frames[:keep]
	if len(drop) > 0 && b.Owner != nil {
		b.Owner.Release(drop)
	}
	a.rxDrop = drop[:0]
	if slow > 0 {
		a.rxSlow.Add(slow)
		a.rxSlowBytes.Add(slowBytes)
	}
	if tagged+idle > 0 {
		a.rxDropped.Add(tagged + idle)
		a.rxDroppedBytes.Add(taggedBytes + idleBytes)
	}
	return keep
}

// dropInactive drops every frame of b, received on a member that is not usable
// (Config.SlowFiltered: no slow-protocols frame to look for), and counts them in RxInactive.
func (a *Aggregate) dropInactive(b *frame.Batch) int {
	var bytes uint64
	for _, f := range b.Frames {
		bytes += uint64(f.Len)
	}
	a.rxDropped.Add(uint64(len(b.Frames)))
	a.rxDroppedBytes.Add(bytes)
	if b.Owner != nil {
		b.Owner.Release(b.Frames)
	}
	b.Frames = b.Frames[:0]
	return 0
}

// SlowFrames counts the slow-protocols frames Recv handed to Config.SlowProtocols.
func (a *Aggregate) SlowFrames() uint64 { return a.rxSlow.Load() }

// RxInactive counts the frames Recv dropped with Config.SlowProtocols set: those received on
// members that were not usable, and slow-protocols frames with an out-of-band VLAN tag.
func (a *Aggregate) RxInactive() uint64 { return a.rxDropped.Load() }
