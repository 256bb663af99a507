package dsa

import (
	"encoding/binary"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch codecs. Each format has one loop over the batch (the format is chosen once per
// batch) whose body is the format's common case written out in full: one bounds check for the
// bytes the tag touches, the tag read with one wide load and tested against a pre-swapped mask,
// the Info built from shifts and masks, the MAC addresses moved with one 8-byte and one 4-byte
// load and store, and the descriptor fields that change written back. Per-batch constants (the
// tag an encode writes) are computed before the loop. Every frame off the common case (an error,
// a trapped or VLAN-folded Marvell tag, a runt to pad, a timestamp, ...) is marked reasonSlow and
// handed afterwards to the per-frame code (decodeOne, encode), which is also what Decode and
// Encode run: the fast loops hold no call, so nothing is spilled around one, and the general
// code stays the single reference the differential tests compare them with.
//
// The wide loads are little-endian: the masks and constants below are the big-endian layouts of
// formats.go with their bytes swapped (byte k of a loaded word is bits 8k..8k+7).
//
// One loop per format, with direct code rather than a table of funcs: every pointer passed
// through a func value escapes (ins, fr), so a caller's stack array of Info would then be
// allocated on every call (measured with -gcflags=-m).

var le = binary.LittleEndian

// slowDecode runs the per-frame decoder on the frames the fast loop left (rs[i] == reasonSlow)
// and returns the total number decoded; ok is the number the fast loop decoded.
//
//go:noinline
func (c *codec) slowDecode(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, ok int) int {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := range fr {
		if rs[i] != reasonSlow {
			continue
		}
		r := c.decodeOne(mem, &fr[i], &ins[i])
		rs[i] = r
		if r == ReasonNone {
			ok++
		}
	}
	return ok
}

// decodeBatch is decode over every frame of fr, with the format chosen once per batch.
func (c *codec) decodeBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) int {
	switch c.kind {
	case kNone:
		decNoneBatch(mem, fr, ins, rs)
	case kDSA:
		decDSABatch(mem, fr, ins, rs)
	case kEDSA:
		decEDSABatch(mem, fr, ins, rs)
	case kBrcm:
		decBrcmBatch(mem, fr, ins, rs)
	case kBrcmPrepend:
		decBrcmPrependBatch(mem, fr, ins, rs)
	case kQCA:
		decQCABatch(mem, fr, ins, rs)
	case kMTK:
		decMTKBatch(mem, fr, ins, rs)
	case kKSZ8795, kHellcreek:
		decKSZ8795Batch(mem, fr, ins, rs)
	case kKSZ9477, kKSZ9893, kLAN937x:
		decKSZ9477Batch(mem, fr, ins, rs)
	case kRTL4A:
		decRTL4ABatch(mem, fr, ins, rs)
	case kRTL84:
		decRTL84Batch(mem, fr, ins, rs)
	case kRTL84T:
		decRTL84TBatch(mem, fr, ins, rs)
	case k8021Q:
		dec8021QBatch(mem, fr, ins, rs, c.tpid)
	case kAR9331:
		decAR9331Batch(mem, fr, ins, rs)
	case kGSWIP:
		decGSWIPBatch(mem, fr, ins, rs)
	case kLAN9303:
		decLAN9303Batch(mem, fr, ins, rs)
	case kTrailer:
		decTrailerBatch(mem, fr, ins, rs)
	default:
		for i := range rs {
			rs[i] = ReasonBadTag
		}
		return 0
	}
	ok := countNone(rs[:len(fr)])
	if ok == len(fr) {
		return ok
	}
	return c.slowDecode(mem, fr, ins, rs, ok)
}

// decNoneBatch is decodeBatch for None.
func decNoneBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		r := reasonSlow
		if fr[i].Len >= minFrame {
			setInfo(&ins[i], 0)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// decDSABatch is decodeBatch for DSA.
// FORWARD (cmd 3), not tagged, not from a trunk: b12 & 0xe0 == 0xc0, b13 & 0x04 == 0.
func decDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			w := le.Uint32(h[12:16])
			if w&0x04e0 == 0x00c0 {
				setInfo(&ins[i], uint32(w>>11&0x1f|w&0x1f<<16|4<<24))
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[4:12], lo)
				le.PutUint32(h[12:16], hi)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decEDSABatch is decodeBatch for EDSA.
// 0xDADA at b12-13, then the dsa fast tag at b16-19.
func decEDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o+20 <= len(mem) {
			h := (*[20]byte)(mem[o : o+20])
			w := le.Uint32(h[16:20])
			if le.Uint16(h[12:14]) == 0xdada && w&0x04e0 == 0x00c0 {
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[8:16], lo)
				le.PutUint32(h[16:20], hi)
				f.Off = uint32(o + 8)
				setLenHead(f, lh+8<<16-8)
				setInfo(&ins[i], uint32(w>>11&0x1f|w&0x1f<<16|8<<24))
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decBrcmBatch is decodeBatch for Brcm.
// opcode b12[7:5] == 0, reason code b14[7:6] == 0; port b15[4:0], code b14.
func decBrcmBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			w := le.Uint32(h[12:16])
			if w&0xc000e0 == 0 {
				in := &ins[i]
				setInfo(in, uint32(w>>24&0x1f|4<<24))
				in.Code = uint8(w >> 16)
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[4:12], lo)
				le.PutUint32(h[12:16], hi)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decBrcmPrependBatch is decodeBatch for BrcmPrepend.
func decBrcmPrependBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+4 <= len(mem) {
			w := le.Uint32(mem[o : o+4])
			if w&0xc000e0 == 0 {
				in := &ins[i]
				setInfo(in, uint32(w>>24&0x1f|4<<24))
				in.Code = uint8(w >> 16)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decQCABatch is decodeBatch for QCA.
// BE16 version[15:14] == 2 (b12[7:6]); type (code) 1 and 2 are management frames.
func decQCABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o+14 <= len(mem) {
			h := (*[14]byte)(mem[o : o+14])
			t := binary.BigEndian.Uint16(h[12:14])
			code := uint8(t>>6) & 0x1f
			if t>>14 == 2 && code-1 > 1 {
				in := &ins[i]
				setInfo(in, uint32(t&7)|2<<24)
				in.Code = uint8(code)
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[2:10], lo)
				le.PutUint32(h[10:14], hi)
				f.Off = uint32(o + 2)
				setLenHead(f, lh+2<<16-2)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decMTKBatch is decodeBatch for MTK.
func decMTKBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			setInfo(&ins[i], uint32(h[13]&7)|4<<24)
			lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
			le.PutUint64(h[4:12], lo)
			le.PutUint32(h[12:16], hi)
			f.Off = uint32(o + 4)
			setLenHead(f, lh+4<<16-4)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// decKSZ8795Batch is decodeBatch for kKSZ8795, kHellcreek.
// One tail byte, port[1:0].
func decKSZ8795Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= minFrame+1 && tl < 0xffff && e <= len(mem) {
			setInfo(&ins[i], uint32(mem[e-1]&3)|1<<24)
			f.Len, f.Tail = l-1, tl+1
			r = ReasonNone
		}
		rs[i] = r
	}
}

// decKSZ9477Batch is decodeBatch for kKSZ9477, kKSZ9893, kLAN937x.
// One tail byte, port[2:0]; bit 7 (a timestamp precedes it) takes the slow path.
func decKSZ9477Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= minFrame+1 && tl < 0xffff && e <= len(mem) {
			if t := mem[e-1]; t&0x80 == 0 {
				setInfo(&ins[i], uint32(t&7)|1<<24)
				f.Len, f.Tail = l-1, tl+1
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decRTL4ABatch is decodeBatch for RTL4A.
// 0x8899 at b12-13, protocol b14[7:4] == 0xA; port b15.
func decRTL4ABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			w := le.Uint32(h[12:16])
			if w&0xf0ffff == 0xa09988 {
				setInfo(&ins[i], uint32(w>>24|4<<24))
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[4:12], lo)
				le.PutUint32(h[12:16], hi)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decRTL84Batch is decodeBatch for RTL84.
// 0x8899 0x04 at b12-14, REASON b15 (80, trapped, takes the slow path), port b19[3:0].
func decRTL84Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o+20 <= len(mem) {
			h := (*[20]byte)(mem[o : o+20])
			w := le.Uint64(h[12:20])
			if code := uint8(w >> 24); w&0xffffff == 0x049988 && code != 80 {
				in := &ins[i]
				setInfo(in, uint32(w>>56&0xf)|8<<24)
				in.Code = uint8(code)
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[8:16], lo)
				le.PutUint32(h[16:20], hi)
				f.Off = uint32(o + 8)
				setLenHead(f, lh+8<<16-8)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decRTL84TBatch is decodeBatch for RTL84T.
func decRTL84TBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= minFrame+8 && tl <= 0xffff-8 && e <= len(mem) {
			w := le.Uint64(mem[e-8 : e])
			if code := uint8(w >> 24); w&0xffffff == 0x049988 && code != 80 {
				in := &ins[i]
				setInfo(in, uint32(w>>56&0xf)|8<<24)
				in.Code = uint8(code)
				f.Len, f.Tail = l-8, tl+8
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// dec8021QBatch is decodeBatch for 8021Q.
// TPID at b12-13, TCI at b14-15 with RSV (TCI[11:10]) == 3 and VBID (TCI 9, 5:4) == 0.
func dec8021QBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tpid uint16) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	want := uint32(tpid>>8|tpid<<8) | 0x0c<<16
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			w := le.Uint32(h[12:16])
			if w&(0x30<<24|0x0e<<16|0xffff) == want {
				tci := uint16(w>>24) | uint16(w>>8)&0xff00
				in := &ins[i]
				setInfo(in, uint32(tci&0xf)|uint32(tci>>6&7)<<16|4<<24)
				in.TCI = tci
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[4:12], lo)
				le.PutUint32(h[12:16], hi)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decAR9331Batch is decodeBatch for AR9331.
// LE16 before the DA: version[15:14] == 1, FROM_CPU bit 6 clear; port[3:0].
func decAR9331Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o+2 <= len(mem) {
			t := le.Uint16(mem[o : o+2])
			if t&0xc040 == 0x4000 {
				setInfo(&ins[i], uint32(t&0xf)|2<<24)
				f.Off = uint32(o + 2)
				setLenHead(f, lh+2<<16-2)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decGSWIPBatch is decodeBatch for GSWIP.
func decGSWIPBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o+8 <= len(mem) {
			setInfo(&ins[i], uint32(mem[o+7]>>4&7)|8<<24)
			f.Off = uint32(o + 8)
			setLenHead(f, lh+8<<16-8)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// decLAN9303Batch is decodeBatch for LAN9303.
// 0x8100 at b12-13; VID bits 3 and 4 (trapped) take the slow path; port VID[1:0].
func decLAN9303Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o+16 <= len(mem) {
			h := (*[16]byte)(mem[o : o+16])
			w := le.Uint32(h[12:16])
			if w&(0x18<<24|0xffff) == 0x0081 {
				in := &ins[i]
				setInfo(in, uint32(w>>24&3|4<<24))
				in.Code = uint8(w >> 24)
				lo, hi := le.Uint64(h[0:8]), le.Uint32(h[8:12])
				le.PutUint64(h[4:12], lo)
				le.PutUint32(h[12:16], hi)
				f.Off = uint32(o + 4)
				setLenHead(f, lh+4<<16-4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// decTrailerBatch is decodeBatch for Trailer.
// 0x80, port[2:0], 0x00 or 0x10, 0x00 (BE mask 0xfff8efff).
func decTrailerBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= minFrame+4 && tl <= 0xffff-4 && e <= len(mem) {
			w := le.Uint32(mem[e-4 : e])
			if w&0xffeff8ff == 0x80 {
				setInfo(&ins[i], uint32(w>>8&7|4<<24))
				f.Len, f.Tail = l-4, tl+4
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// setInfo writes all of *in: zero, then w = Port | Switch<<16 | TagLen<<24 with one 4-byte store
// (the compiler combines the three). The caller writes Code or TCI after it where they are not 0.
func setInfo(in *Info, w uint32) {
	*in = Info{}
	in.Port = uint16(w)
	in.Switch = uint8(w >> 16)
	in.TagLen = uint8(w >> 24)
}

// lenHead is f.Len | f.Head<<16, which the compiler loads with one 4-byte load; setLenHead
// stores it back with one store.
func lenHead(f *frame.Frame) uint32 { return uint32(f.Len) | uint32(f.Head)<<16 }

func setLenHead(f *frame.Frame, x uint32) {
	f.Len = uint16(x)
	f.Head = uint16(x >> 16)
}

// markSlow hands every frame to the per-frame code (a Dest the fast loops do not cover).
func markSlow(rs []Reason) {
	for i := range rs {
		rs[i] = reasonSlow
	}
}

// countNone returns how many of rs are ReasonNone, given that each is ReasonNone or reasonSlow
// (0xff): eight at a time, by summing the low bits of the bytes of a word.
func countNone(rs []Reason) int {
	slow := 0
	b := unsafe.Slice((*byte)(unsafe.SliceData(rs)), len(rs))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		slow += int((le.Uint64(b[i:i+8]) & 0x0101010101010101 * 0x0101010101010101) >> 56)
	}
	for ; i < len(b); i++ {
		slow += int(b[i] & 1)
	}
	return len(rs) - slow
}

// bswap16 and bswap32 turn a big-endian tag into the value whose little-endian store writes it.
func bswap16(v uint16) uint16 { return v>>8 | v<<8 }
func bswap32(w uint32) uint32 { return w>>24 | w>>8&0xff00 | w<<8&0xff0000 | w<<24 }

// slowEncode runs the per-frame encoder on the frames the fast loop left and returns the total
// number encoded; ok is the number the fast loop encoded.
//
//go:noinline
func (c *codec) slowEncode(mem []byte, fr []frame.Frame, d Dest, rs []Reason, ok int) int {
	rs = rs[:len(fr)]
	for i := range fr {
		if rs[i] != reasonSlow {
			continue
		}
		r := c.encode(mem, &fr[i], d)
		rs[i] = r
		if r == ReasonNone {
			ok++
		}
	}
	return ok
}

// linkLocalLE reports a destination 01:80:c2:00:00:0X from the frame's first 8 bytes.
func linkLocalLE(w uint64) bool { return w&0xf0ffffffffff == 0xc28001 }

// encodeBatch is encode over every frame of fr toward d, with d validated and the format chosen
// once per batch; the tag each format writes is built here, once.
func (c *codec) encodeBatch(mem []byte, fr []frame.Frame, d Dest, rs []Reason) int {
	rs = rs[:len(fr)]
	bad := c.checkDest(d)
	if bad != ReasonNone || c.kind == kNone || c.kind > kTrailer {
		if c.kind > kTrailer {
			bad = ReasonBadTag
		}
		ok := 0
		for i := range fr {
			r := bad
			if fr[i].Len < minFrame {
				r = ReasonTruncated
			}
			rs[i] = r
			if r == ReasonNone {
				ok++
			}
		}
		return ok
	}
	switch c.kind {
	case kDSA, kEDSA:
		if d.Switch > 0x1f {
			markSlow(rs)
			break
		}
		tw := bswap32(mvTxWord(d))
		if c.kind == kDSA {
			encDSABatch(mem, fr, rs, tw)
		} else {
			encEDSABatch(mem, fr, rs, uint64(tw)<<32|0xdada)
		}
	case kBrcm, kBrcmPrepend:
		// b0 = opcode 1 <<5 | TC<<2, b1 = 0, b2.0 = port 8, b3 = ports 7-0.
		tw := uint32(1<<5|(d.Prio&7)<<2) | uint32(d.Ports>>8&1)<<16 | uint32(d.Ports&0xff)<<24
		if c.kind == kBrcm {
			encBrcmBatch(mem, fr, rs, tw)
		} else {
			encBrcmPrependBatch(mem, fr, rs, tw)
		}
	case kQCA:
		// version 2 <<14 | priority[13:11] | FROM_CPU bit 7 | port mask[6:0].
		encQCABatch(mem, fr, rs, bswap16(uint16(2)<<14|uint16(d.Prio&7)<<11|1<<7|uint16(d.Ports)&0x7f))
	case kMTK:
		// b0 = 0 (untagged), b1 = port mask | passthrough bit 7 for a switch index > 0, b2-b3 = 0.
		tw := uint32(d.Ports&0x3f) << 8
		if d.Switch != 0 {
			tw |= 0x80 << 8
		}
		encMTKBatch(mem, fr, rs, tw)
	case kKSZ8795, kKSZ9893:
		if d.Flags&DestTimestamp != 0 && c.kind == kKSZ9893 {
			markSlow(rs)
			break
		}
		// ksz8795: mask | override bit 6; ksz9893: mask[2:0] | prio[4:3] | override bit 5.
		t, ll := byte(d.Ports), byte(1<<6)
		if c.kind == kKSZ9893 {
			t, ll = byte(d.Ports)|(d.Prio&3)<<3, 1<<5
		}
		encTail1Batch(mem, fr, rs, t, t|ll)
	case kHellcreek:
		encTail1Batch(mem, fr, rs, byte(d.Ports), byte(d.Ports))
	case kKSZ9477, kLAN937x:
		if d.Flags&DestTimestamp != 0 {
			markSlow(rs)
			break
		}
		// ksz9477: BE16 mask[6:0] | prio[8:7] | override bit 9; lan937x: mask[7:0] | prio[10:8] |
		// override bit 11 | valid bit 13.
		v, ll := uint16(d.Ports)|uint16(d.Prio&3)<<7, uint16(1<<9)
		if c.kind == kLAN937x {
			v, ll = uint16(d.Ports)|uint16(d.Prio&7)<<8|1<<13, 1<<11
		}
		encTail2Batch(mem, fr, rs, bswap16(v), bswap16(v|ll))
	case kRTL4A:
		// 0x8899, 0xA<<12 | BIT(port); frames under 60 bytes (padding) take the slow path.
		encSA4Batch(mem, fr, rs, 0x9988|uint32(bswap16(0xa<<12|uint16(d.Ports)&0xff))<<16, 60)
	case kRTL84, kRTL84T:
		// 0x8899, 0x0400 (protocol 4, reason 0), 0x0020 (LEARN_DIS), ALLOW 0 | mask[10:0].
		tw := uint64(0x0004_9988) | uint64(0x2000)<<32 | uint64(bswap16(uint16(d.Ports)&0x7ff))<<48
		if c.kind == kRTL84 {
			encRTL84Batch(mem, fr, rs, tw)
		} else {
			encTail8Batch(mem, fr, rs, tw)
		}
	case k8021Q:
		if d.Switch > 7 || d.Bridge > 7 {
			markSlow(rs)
			break
		}
		vid := Tag8021QBridgeVID(int(d.Bridge))
		if d.Bridge == 0 {
			vid = Tag8021QVID(int(d.Switch), d.Ports.First())
		}
		tci := uint16(d.Prio&7)<<13 | vid
		encSA4Batch(mem, fr, rs, uint32(bswap16(c.tpid))|uint32(bswap16(tci))<<16, minFrame)
	case kAR9331:
		// LE16 version 1<<14 | FROM_CPU bit 6 | reserved 0b11 <<4 | port.
		encPrefixBatch(mem, fr, rs, uint32(1<<14|1<<6|3<<4|d.Ports.First()), 2)
	case kGSWIP:
		// SLPID CPU (2), DPID ELAN (0), PORT_MAP_EN|PORT_MAP_SEL (0xC0), port map[6:1] | DPID_EN.
		encPrefixBatch(mem, fr, rs, 2|0xc0<<16|uint32(byte(d.Ports<<1)&0x7e|1)<<24, 4)
	case kLAN9303:
		// Not bridged: 0x8100, port | STP_OVERRIDE (bit 4). Bridged unicast depends on the DA:
		// the slow path.
		if d.Flags&DestBridged != 0 {
			markSlow(rs)
			break
		}
		encSA4Batch(mem, fr, rs, 0x0081|uint32(bswap16(uint16(d.Ports.First())|1<<4))<<16, minFrame)
	case kTrailer:
		// 0x80, BIT(port), 0x10, 0x00.
		encTail4Batch(mem, fr, rs, 0x80|uint32(byte(d.Ports))<<8|0x10<<16)
	}
	ok := countNone(rs)
	if ok == len(fr) {
		return ok
	}
	return c.slowEncode(mem, fr, d, rs, ok)
}

// The encode loops. Each tags the frames it can as the per-frame encoder would and marks the others
// reasonSlow. tw is the tag's little-endian image.

// encDSABatch: an untagged frame (no 802.1Q tag in its bytes or out of band): the MAC addresses
// move 4 bytes toward the head and the tag takes their place.
func encDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-4 && o >= 4 && o+14 <= len(mem) {
			q := (*[18]byte)(mem[o-4 : o+14])
			if le.Uint16(q[16:18]) != 0x0081 {
				lo, hi := le.Uint64(q[4:12]), le.Uint32(q[12:16])
				le.PutUint64(q[0:8], lo)
				le.PutUint32(q[8:12], hi)
				le.PutUint32(q[12:16], tw)
				f.Off = uint32(o - 4)
				setLenHead(f, lh-4<<16+4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// encEDSABatch is encDSABatch with 8 bytes: 0xDADA 0x0000 and the DSA tag.
func encEDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if f.Flags&frame.FlagVLAN == 0 && lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o+14 <= len(mem) {
			q := (*[22]byte)(mem[o-8 : o+14])
			if le.Uint16(q[20:22]) != 0x0081 {
				lo, hi := le.Uint64(q[8:16]), le.Uint32(q[16:20])
				le.PutUint64(q[0:8], lo)
				le.PutUint32(q[8:12], hi)
				le.PutUint64(q[12:20], tw)
				f.Off = uint32(o - 8)
				setLenHead(f, lh-8<<16+8)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// encBrcmBatch pads to 64 bytes (a frame of 60-63 bytes takes one 4-byte zero store, a shorter
// one the slow path), then inserts the tag after the source MAC.
func encBrcmBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh, tl := int(f.Off), lenHead(f), f.Tail
		l := uint16(lh)
		r := reasonSlow
		if lh >= 4<<16 && l >= 60 && l <= 0xffff-4 && o >= 4 && o+12 <= len(mem) && (l >= 64 || tl >= 4) {
			if l < 64 {
				e := o + int(l)
				le.PutUint32(mem[e:e+4], 0)
				f.Tail = tl - (64 - l)
				lh += uint32(64 - l)
			}
			q := (*[16]byte)(mem[o-4 : o+12])
			lo, hi := le.Uint64(q[4:12]), le.Uint32(q[12:16])
			le.PutUint64(q[0:8], lo)
			le.PutUint32(q[8:12], hi)
			le.PutUint32(q[12:16], tw)
			f.Off = uint32(o - 4)
			setLenHead(f, lh-4<<16+4)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encBrcmPrependBatch pads as encBrcmBatch, then puts the tag in front of the frame.
func encBrcmPrependBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh, tl := int(f.Off), lenHead(f), f.Tail
		l := uint16(lh)
		r := reasonSlow
		if lh >= 4<<16 && l >= 60 && l <= 0xffff-4 && o >= 4 && o <= len(mem) && (l >= 64 || tl >= 4) {
			if l < 64 {
				e := o + int(l)
				le.PutUint32(mem[e:e+4], 0)
				f.Tail = tl - (64 - l)
				lh += uint32(64 - l)
			}
			le.PutUint32(mem[o-4:o], tw)
			f.Off = uint32(o - 4)
			setLenHead(f, lh-4<<16+4)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encQCABatch inserts the 2-byte tag after the source MAC.
func encQCABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint16) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if lh >= 2<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-2 && o >= 2 && o+12 <= len(mem) {
			q := (*[14]byte)(mem[o-2 : o+12])
			lo, hi := le.Uint64(q[2:10]), le.Uint32(q[10:14])
			le.PutUint64(q[0:8], lo)
			le.PutUint32(q[8:12], hi)
			le.PutUint16(q[12:14], tw)
			f.Off = uint32(o - 2)
			setLenHead(f, lh-2<<16+2)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encMTKBatch: a frame of 60 bytes or more with no VLAN tag (in its bytes or out of band) gets
// the 4-byte tag after the source MAC; a VLAN-tagged one (the special tag replaces the TPID) and
// a runt (padding) take the slow path.
func encMTKBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= 60 && uint16(lh) <= 0xffff-4 && o >= 4 && o+14 <= len(mem) {
			q := (*[18]byte)(mem[o-4 : o+14])
			if et := le.Uint16(q[16:18]); et != 0x0081 && et != 0xa888 {
				lo, hi := le.Uint64(q[4:12]), le.Uint32(q[12:16])
				le.PutUint64(q[0:8], lo)
				le.PutUint32(q[8:12], hi)
				le.PutUint32(q[12:16], tw)
				f.Off = uint32(o - 4)
				setLenHead(f, lh-4<<16+4)
				r = ReasonNone
			}
		}
		rs[i] = r
	}
}

// encSA4Batch inserts the 4-byte tag after the source MAC of every frame of at least short bytes
// (minFrame, or 60 for a format that pads: shorter frames take the slow path).
func encSA4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, short uint16) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if lh >= 4<<16 && uint16(lh) >= short && uint16(lh) <= 0xffff-4 && o >= 4 && o+12 <= len(mem) {
			q := (*[16]byte)(mem[o-4 : o+12])
			lo, hi := le.Uint64(q[4:12]), le.Uint32(q[12:16])
			le.PutUint64(q[0:8], lo)
			le.PutUint32(q[8:12], hi)
			le.PutUint32(q[12:16], tw)
			f.Off = uint32(o - 4)
			setLenHead(f, lh-4<<16+4)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encRTL84Batch inserts the 8-byte tag after the source MAC.
func encRTL84Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o+12 <= len(mem) {
			q := (*[20]byte)(mem[o-8 : o+12])
			lo, hi := le.Uint64(q[8:16]), le.Uint32(q[16:20])
			le.PutUint64(q[0:8], lo)
			le.PutUint32(q[8:12], hi)
			le.PutUint64(q[12:20], tw)
			f.Off = uint32(o - 8)
			setLenHead(f, lh-8<<16+8)
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encPrefixBatch puts the n-byte tag (2 or 4) in front of every frame.
func encPrefixBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, n int) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, lh := int(f.Off), lenHead(f)
		r := reasonSlow
		if int(lh>>16) >= n && uint16(lh) >= minFrame && int(uint16(lh)) <= 0xffff-n && o >= n && o <= len(mem) {
			if n == 2 {
				le.PutUint16(mem[o-2:o], uint16(tw))
			} else {
				le.PutUint32(mem[o-4:o], tw)
			}
			f.Off = uint32(o - n)
			setLenHead(f, lh-uint32(n)<<16+uint32(n))
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encTail1Batch appends one byte to every frame of 60 bytes or more: t, or tll for a link-local
// destination (KSZ's override bit).
func encTail1Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll byte) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= 60 && tl >= 1 && l <= 0xffff-1 && e < len(mem) {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8])) {
				v = tll
			}
			mem[e] = v
			f.Len, f.Tail = l+1, tl-1
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encTail2Batch is encTail1Batch with a two-byte tag.
func encTail2Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll uint16) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= 60 && tl >= 2 && l <= 0xffff-2 && e+2 <= len(mem) {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8])) {
				v = tll
			}
			le.PutUint16(mem[e:e+2], v)
			f.Len, f.Tail = l+2, tl-2
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encTail4Batch appends the 4-byte tag to every frame of 60 bytes or more.
func encTail4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= 60 && tl >= 4 && l <= 0xffff-4 && e+4 <= len(mem) {
			le.PutUint32(mem[e:e+4], tw)
			f.Len, f.Tail = l+4, tl-4
			r = ReasonNone
		}
		rs[i] = r
	}
}

// encTail8Batch appends the 8-byte tag to every frame of 60 bytes or more.
func encTail8Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	rs = rs[:len(fr)]
	for i := len(fr) - 1; i >= 0; i-- {
		f := &fr[i]
		o, l, tl := int(f.Off), f.Len, f.Tail
		r := reasonSlow
		if e := o + int(l); l >= 60 && tl >= 8 && l <= 0xffff-8 && e+8 <= len(mem) {
			le.PutUint64(mem[e:e+8], tw)
			f.Len, f.Tail = l+8, tl-8
			r = ReasonNone
		}
		rs[i] = r
	}
}
