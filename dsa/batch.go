package dsa

import (
	"encoding/binary"
	"errors"
	"runtime"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch codecs. Each format has its own loop over the batch, in its own function (the format
// is chosen once per batch), whose body is the format's common case written out in full: one
// bounds check for the bytes the tag touches, the tag read with one wide load and tested against a
// pre-swapped mask, the Info built from shifts and masks (a 16-byte zero store and a few narrow ones), the MAC
// addresses moved with one 8-byte and one 4-byte load and store, and the descriptor fields that
// change written back (Len and Head as one word). Per-batch constants (the tag an encode writes)
// are computed before the loop. rs is cleared first; every frame off the common case (an error, a
// trapped or VLAN-folded Marvell tag, a runt to pad, a timestamp, ...) is marked reasonSlow and
// handed afterwards to the general per-frame code (decodeOne, encode), which is also the slow path
// of the Taggers' Decode and Encode (perframe.go): the fast loops hold no call, so nothing is
// spilled around one, and the general code stays the single reference the differential tests
// (batch_test.go, perframe_test.go) compare them with.
//
// The wide loads are little-endian: the masks and constants below are the big-endian layouts of
// formats.go with their bytes swapped (byte k of a loaded word is bits 8k..8k+7).
//
// The loops run four frames per iteration through their unrolled copies in batch_x4.go, generated
// from the loops here by internal/unroll (go generate ./dsa): each copy runs the first len % 4
// frames through the same body itself, so the one-frame loops below are the source of the
// generated code, not called by the dispatch.
//
//go:generate go run ./internal/unroll/gen
//
// Direct calls of the loop functions rather than a table of funcs: every pointer passed through a
// func value escapes (ins, fr), so a caller's stack array of Info would then be allocated on every
// call (go build -gcflags=-m shows it). Each loop function is go:noinline: inlined into the switch, a
// loop shares the register allocation of a large function and spills.

var le = binary.LittleEndian

// nativeLE: the machine stores a multi-byte field least significant byte first, so a loop may
// write several fields of an Info as one little-endian word (TestNativeLE checks it against
// binary.NativeEndian). Elsewhere the loops write the Info field by field.
const nativeLE = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "arm64" ||
	runtime.GOARCH == "arm" || runtime.GOARCH == "riscv64" || runtime.GOARCH == "loong64" ||
	runtime.GOARCH == "ppc64le" || runtime.GOARCH == "mipsle" || runtime.GOARCH == "mips64le" ||
	runtime.GOARCH == "wasm"

// errShortResults is the panic of a batch codec given fewer Infos or Reasons than frames: a
// programming error, not a property of the bytes.
var errShortResults = errors.New("dsa: DecodeBatch/EncodeBatch: ins and rs must hold one entry per frame")

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
	if len(ins) < len(fr) || len(rs) < len(fr) {
		panic(errShortResults)
	}
	clear(rs[:len(fr)]) // the loops mark only the frames they leave
	switch c.kind {
	case kNone:
		decNoneBatchx4(fr, ins, rs)
	case kDSA:
		decDSABatchx4(mem, fr, ins, rs)
	case kEDSA:
		decEDSABatchx4(mem, fr, ins, rs)
	case kBrcm:
		decBrcmBatchx4(mem, fr, ins, rs)
	case kBrcmPrepend:
		decBrcmPrependBatchx4(mem, fr, ins, rs)
	case kQCA:
		decQCABatchx4(mem, fr, ins, rs)
	case kMTK:
		decMTKBatchx4(mem, fr, ins, rs)
	case kKSZ8795, kHellcreek:
		decTail1Batchx4(mem, fr, ins, rs)
	case kKSZ9477, kKSZ9893, kLAN937x:
		decKSZBatchx4(mem, fr, ins, rs)
	case kRTL4A:
		decRTL4ABatchx4(mem, fr, ins, rs)
	case kRTL84:
		decRTL84Batchx4(mem, fr, ins, rs)
	case kRTL84T:
		decRTL84TBatchx4(mem, fr, ins, rs)
	case k8021Q:
		dec8021QBatchx4(mem, fr, ins, rs, c.tpid)
	case kAR9331:
		decAR9331Batchx4(mem, fr, ins, rs)
	case kGSWIP:
		decGSWIPBatchx4(mem, fr, ins, rs)
	case kLAN9303:
		decLAN9303Batchx4(mem, fr, ins, rs)
	case kTrailer:
		decTrailerBatchx4(mem, fr, ins, rs)
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

// The decode loops. Each decodes the frames it can as the per-frame decoder would and marks the
// others reasonSlow (rs is cleared before). They walk the descriptors and the Infos by byte offset
// (f = &fr[p/frameSize], in = &ins[p/frameSize] with unsafe.Add, always inside fr and ins): two
// additions per frame instead of an index shifted twice. One bounds check per frame: the start of
// the bytes read is compared with lim = len(mem) - (bytes read), then mem is sliced with a
// constant length, so the compiler drops its own checks.

const (
	frameSize = unsafe.Sizeof(frame.Frame{})
	infoSize  = unsafe.Sizeof(Info{})
)

// walk returns the base pointers of fr, ins and rs and the byte offset just past fr's last frame.
// ins and rs must hold len(fr) entries: it panics otherwise (a short slice with room in its
// capacity would otherwise have results written past its length, unseen by the caller).
func walk(fr []frame.Frame, ins []Info, rs []Reason) (fb, ib, rb unsafe.Pointer, end uintptr) {
	if len(ins) < len(fr) || len(rs) < len(fr) {
		panic(errShortResults)
	}
	return unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(ins)),
		unsafe.Pointer(unsafe.SliceData(rs)), uintptr(len(fr)) * frameSize
}

// slow marks the frame at byte offset p of the walk for the per-frame code: rs[p/frameSize].
func slow(rb unsafe.Pointer, p uintptr) { *(*Reason)(unsafe.Add(rb, p/frameSize)) = reasonSlow }

// decNoneBatch: nothing to strip; a frame shorter than an Ethernet header takes the slow path.
//
//go:noinline
func decNoneBatch(fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		if (*frame.Frame)(unsafe.Add(fb, p)).Len >= minFrame {
			*(*Info)(unsafe.Add(ib, q)) = Info{}
			continue
		}
		slow(rb, p)
	}
}

// decDSABatch: FORWARD (cmd 3), not tagged, not from a trunk: b12 & 0xe0 == 0xc0, b13 & 0x04 ==
// 0; switch b12[4:0], port b13[7:3].
//
//go:noinline
func decDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if t := le.Uint16(h[12:14]); t&0x04e0 == 0x00c0 {
				*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 4}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// decEDSABatch: 0xDADA at b12-13, then the dsa fast tag at b16-19.
//
//go:noinline
func decEDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 20
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+20 : o+20]
			if w := le.Uint64(h[12:20]); w&0x04e0_0000_ffff == 0x00c0_0000_dada { // 0xDADA, the tag's b0-b1
				t := uint16(w >> 32)
				*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 8}
				*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 8
				setLenHead(f, lh+8<<16-8)
				continue
			}
		}
		slow(rb, p)
	}
}

// decBrcmBatch: opcode b12[7:5] == 0, reason code b14[7:6] == 0; port b15[4:0], code b14.
//
//go:noinline
func decBrcmBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&0xc000e0 == 0 {
				*in = Info{Port: uint16(h[15] & 0x1f), TagLen: 4, Code: h[14]}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// decBrcmPrependBatch: the brcm tag in front of the DA.
//
//go:noinline
func decBrcmPrependBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 4
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+4 : o+4]
			if le.Uint32(h)&0xc000e0 == 0 {
				*in = Info{Port: uint16(h[3] & 0x1f), TagLen: 4, Code: h[2]}
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// decQCABatch: BE16 at b12: version[15:14] == 2 (b12[7:6]), type[10:6] (1 and 2 are management
// frames), port[2:0].
//
//go:noinline
func decQCABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 14
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o <= lim {
			h := mem[o : o+14 : o+14]
			t := uint16(h[12])<<8 | uint16(h[13])
			if e := qcaRx[t>>6]; e != 0 {
				*in = Info{Port: t & 7, TagLen: 2, Code: e - 1}
				*(*[12]byte)(h[2:14]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 2
				setLenHead(f, lh+2<<16-2)
				continue
			}
		}
		slow(rb, p)
	}
}

// qcaRx is, for bits 15-6 of a qca tag (version, priority, type), 1 + the type when the batch loop
// decodes the frame (version 2, not a management frame: type 1 or 2), else 0: one load for the
// three tests.
var qcaRx = func() (t [1024]uint8) {
	for i := range t {
		if code := uint8(i) & 0x1f; i>>8 == 2 && code-1 > 1 {
			t[i] = code + 1
		}
	}
	return t
}()

// decMTKBatch: port b13[2:0]; Linux checks nothing else.
//
//go:noinline
func decMTKBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			*in = Info{Port: uint16(h[13] & 7), TagLen: 4}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			f.Off += 4
			setLenHead(f, lh+4<<16-4)
			continue
		}
		slow(rb, p)
	}
}

// decTail1Batch: one tail byte, port[1:0] (ksz8795, hellcreek).
//
//go:noinline
func decTail1Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem))
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+1 && tl < 0xffff && e <= lim {
			*in = Info{TagLen: 1, Port: uint16(mem[e-1] & 3)}
			f.Len, f.Tail = l-1, tl+1
			continue
		}
		slow(rb, p)
	}
}

// decKSZBatch: one tail byte, port[2:0] (ksz9477, ksz9893, lan937x); bit 7, a timestamp before
// it, takes the slow path.
//
//go:noinline
func decKSZBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem))
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+1 && tl < 0xffff && e <= lim {
			if t := mem[e-1]; t&0x80 == 0 {
				*in = Info{TagLen: 1, Port: uint16(t & 7)}
				f.Len, f.Tail = l-1, tl+1
				continue
			}
		}
		slow(rb, p)
	}
}

// decRTL4ABatch: 0x8899 at b12-13, protocol b14[7:4] == 0xA; port b15.
//
//go:noinline
func decRTL4ABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&0xf0ffff == 0xa09988 {
				*in = Info{Port: uint16(h[15]), TagLen: 4}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// decRTL84Batch: 0x8899 0x04 at b12-14, REASON b15 (80, trapped, takes the slow path), port
// b19[3:0].
//
//go:noinline
func decRTL84Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 20
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+20 : o+20]
			if w := le.Uint32(h[12:16]); w&0xffffff == 0x049988 && w>>24 != 80 {
				*in = Info{Port: uint16(h[19] & 0xf), TagLen: 8, Code: uint8(w >> 24)}
				*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 8
				setLenHead(f, lh+8<<16-8)
				continue
			}
		}
		slow(rb, p)
	}
}

// decRTL84TBatch: the rtl8_4 tag as the last 8 bytes.
//
//go:noinline
func decRTL84TBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem))
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+8 && tl <= 0xffff-8 && e <= lim {
			w := le.Uint64(mem[e-8 : e : e])
			if code := uint8(w >> 24); w&0xffffff == 0x049988 && code != 80 {
				*in = Info{Port: uint16(w>>56) & 0xf, TagLen: 8, Code: code}
				f.Len, f.Tail = l-8, tl+8
				continue
			}
		}
		slow(rb, p)
	}
}

// dec8021QBatch: TPID at b12-13, TCI at b14-15 with RSV (TCI[11:10]) == 3 and VBID (TCI 9, 5:4)
// == 0; switch TCI[8:6], port TCI[3:0]. On a little-endian machine the Info is three stores: its
// first 8 bytes from q8021Head (indexed by TCI[8:0]), TCI, Timestamp 0 (the 2 bytes of padding
// after TCI are left as they were: no field, never compared).
//
//go:noinline
func dec8021QBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tpid uint16) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	want := uint32(bswap16(tpid)) | 0x0c<<16
	tab := q8021HeadP
	_ = *tab // one nil check, before the loop
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if (uint64(lh)+4<<16-(minFrame+4))&^0x7fff7fff == 0 && o <= lim { // see lenHead4
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&(0x30<<24|0x0e<<16|0xffff) == want {
				tci := uint16(h[14])<<8 | uint16(h[15])
				if nativeLE { // Port, Switch, TagLen, Flags, Code, TPID as one 8-byte store from a table
					le.PutUint64((*[8]byte)(unsafe.Pointer(in))[:], tab[tci&0x1ff])
					in.TCI, in.Timestamp = tci, 0
				} else {
					*in = Info{Port: tci & 0xf, Switch: uint8(tci>>6) & 7, TagLen: 4, TCI: tci}
				}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				addLenHead(f, lh, 4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// q8021Head is, for the low 9 bits of a tag_8021q TCI, the first 8 bytes of its Info on a
// little-endian machine: Port (TCI[3:0]), Switch (TCI[8:6]), TagLen 4, Flags, Code and TPID 0.
var q8021Head = func() (t [512]uint64) {
	for i := range t {
		t[i] = uint64(i&0xf) | uint64(i>>6&7)<<16 | 4<<24
	}
	return t
}()

// q8021HeadP is &q8021Head, loaded once before the loop so that the address stays in a register
// (a LEAQ of the symbol would be rematerialised in every frame).
var q8021HeadP = &q8021Head

// decAR9331Batch: LE16 before the DA: version[15:14] == 1, FROM_CPU bit 6 clear; port[3:0].
//
//go:noinline
func decAR9331Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 2
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o <= lim {
			if t := le.Uint16(mem[o : o+2 : o+2]); t&0xc040 == 0x4000 {
				*in = Info{Port: t & 0xf, TagLen: 2}
				f.Off += 2
				setLenHead(f, lh+2<<16-2)
				continue
			}
		}
		slow(rb, p)
	}
}

// decGSWIPBatch: 8 bytes before the DA, port b7[6:4]; Linux checks nothing else.
//
//go:noinline
func decGSWIPBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 8
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+8 : o+8]
			*in = Info{Port: uint16(h[7]>>4) & 7, TagLen: 8}
			f.Off += 8
			setLenHead(f, lh+8<<16-8)
			continue
		}
		slow(rb, p)
	}
}

// decLAN9303Batch: 0x8100 at b12-13; VID bits 3 and 4 (trapped) take the slow path; port VID[1:0].
//
//go:noinline
func decLAN9303Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem)) - 16
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&(0x18<<24|0xffff) == 0x0081 {
				*in = Info{Port: uint16(h[15] & 3), TagLen: 4, Code: h[15]}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(rb, p)
	}
}

// decTrailerBatch: 0x80, port[2:0] (other bits 0), 0x00 or 0x10, 0x00 as the last 4 bytes.
//
//go:noinline
func decTrailerBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	lim := int64(len(mem))
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+4 && tl <= 0xffff-4 && e <= lim {
			if w := le.Uint32(mem[e-4 : e : e]); w&0xffeff8ff == 0x80 {
				*in = Info{Port: uint16(w>>8) & 7, TagLen: 4}
				f.Len, f.Tail = l-4, tl+4
				continue
			}
		}
		slow(rb, p)
	}
}

// lenHead is f.Len | f.Head<<16, which the compiler loads with one 4-byte load; setLenHead
// stores it back with one store.
func lenHead(f *frame.Frame) uint32 { return uint32(f.Len) | uint32(f.Head)<<16 }

func setLenHead(f *frame.Frame, x uint32) {
	f.Len = uint16(x)
	f.Head = uint16(x >> 16)
}

// lenHead4: for lh = lenHead(f), x = uint64(lh) + 4<<16 - (minFrame+4) has bits 15 and 31-63
// clear exactly when Len is in [minFrame+4, minFrame+4+0x7fff] and Head <= 0x7fff-4: Len - 18 is
// Len's half of x (no borrow from Head's; a shorter Len borrows and leaves 0xffee-0xffff there,
// bit 15 set), Head + 4 is the upper half. So one test (x&^0x7fff7fff == 0: TESTQ with a 32-bit
// immediate) stands for "Len >= minFrame+4 and Head+4 fits in 16 bits", less the frames of 32 KiB
// or more or with 32 KiB of headroom or more, which take the slow path (decoded the same way, only
// slower). Len - 4 and Head + 4 then neither borrow nor carry (addLenHead).

// addLenHead is setLenHead(f, lh+d) for lh = lenHead(f), where the caller has checked that the
// sum neither carries nor borrows between the halves. On a little-endian machine it is one add to
// memory: Len and Head are adjacent 16-bit fields, Len first, at a 4-byte aligned offset.
func addLenHead(f *frame.Frame, lh, d uint32) {
	if nativeLE {
		*(*uint32)(unsafe.Pointer(&f.Len)) += d
	} else {
		setLenHead(f, lh+d)
	}
}

// markSlow hands every frame to the per-frame code (a Dest the fast loops do not cover).
func markSlow(rs []Reason) {
	for i := range rs {
		rs[i] = reasonSlow
	}
}

// countNone returns how many of rs are ReasonNone, given that each is ReasonNone or reasonSlow
// (0xff). The common case, none slow, is an OR of the words, 64 bytes per iteration; otherwise
// the slow ones are counted eight at a time, by summing the low bits of the bytes of a word.
func countNone(rs []Reason) int {
	b := unsafe.Slice((*byte)(unsafe.SliceData(rs)), len(rs))
	var or uint64 // the OR of every Reason
	w := b
	for ; len(w) >= 64; w = w[64:] {
		a := (*[64]byte)(w)
		or |= le.Uint64(a[0:8]) | le.Uint64(a[8:16]) | le.Uint64(a[16:24]) | le.Uint64(a[24:32]) |
			le.Uint64(a[32:40]) | le.Uint64(a[40:48]) | le.Uint64(a[48:56]) | le.Uint64(a[56:64])
	}
	for _, x := range w {
		or |= uint64(x)
	}
	if or == 0 {
		return len(rs)
	}
	slow, i := 0, 0
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
	if len(rs) < len(fr) {
		panic(errShortResults)
	}
	rs = rs[:len(fr)]
	bad := c.checkDest(d)
	if bad != ReasonNone || c.kind == kNone || c.kind > kTrailer {
		if c.kind > kTrailer {
			bad = ReasonBadTag
		}
		return encNoneAll(fr, rs, bad)
	}
	clear(rs) // the loops mark only the frames they leave
	switch c.kind {
	case kDSA, kEDSA:
		if d.Switch > 0x1f {
			markSlow(rs)
			break
		}
		tw := bswap32(mvTxWord(d))
		if c.kind == kDSA {
			encDSABatchx4(mem, fr, rs, tw)
		} else {
			encEDSABatchx4(mem, fr, rs, uint64(tw)<<32|0xdada)
		}
	case kBrcm, kBrcmPrepend:
		// b0 = opcode 1 <<5 | TC<<2, b1 = 0, b2.0 = port 8, b3 = ports 7-0.
		tw := uint32(1<<5|(d.Prio&7)<<2) | uint32(d.Ports>>8&1)<<16 | uint32(d.Ports&0xff)<<24
		if c.kind == kBrcm {
			encBrcmBatchx4(mem, fr, rs, tw)
		} else {
			encBrcmPrependBatchx4(mem, fr, rs, tw)
		}
	case kQCA:
		// version 2 <<14 | priority[13:11] | FROM_CPU bit 7 | port mask[6:0].
		encQCABatchx4(mem, fr, rs, bswap16(uint16(2)<<14|uint16(d.Prio&7)<<11|1<<7|uint16(d.Ports)&0x7f))
	case kMTK:
		// b0 = 0 (untagged), b1 = port mask, b2-b3 = 0; with DestPad, frames under 60 bytes
		// (padding) take the slow path.
		encMTKBatchx4(mem, fr, rs, uint32(d.Ports&0x3f)<<8, uint16(max(minFrame, mtkPadTo(d))))
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
		encTail1Batchx4(mem, fr, rs, uint32(t), uint32(t|ll))
	case kHellcreek:
		encTail1Batchx4(mem, fr, rs, uint32(byte(d.Ports)), uint32(byte(d.Ports)))
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
		encTail2Batchx4(mem, fr, rs, bswap16(v), bswap16(v|ll))
	case kRTL4A:
		// 0x8899, 0xA<<12 | BIT(port); frames under 60 bytes (padding) take the slow path.
		encSA4Batchx4(mem, fr, rs, 0x9988|uint32(bswap16(0xa<<12|uint16(d.Ports)&0xff))<<16, 60)
	case kRTL84, kRTL84T:
		// 0x8899, 0x0400 (protocol 4, reason 0), 0x0020 (LEARN_DIS), ALLOW 0 | mask[10:0].
		tw := uint64(0x0004_9988) | uint64(0x2000)<<32 | uint64(bswap16(uint16(d.Ports)&0x7ff))<<48
		if c.kind == kRTL84 {
			encRTL84Batchx4(mem, fr, rs, tw)
		} else {
			encTail8Batchx4(mem, fr, rs, tw)
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
		encSA4Batchx4(mem, fr, rs, uint32(bswap16(c.tpid))|uint32(bswap16(tci))<<16, minFrame)
	case kAR9331:
		// LE16 version 1<<14 | FROM_CPU bit 6 | reserved 0b11 <<4 | port.
		encPrefixBatchx4(mem, fr, rs, uint32(1<<14|1<<6|3<<4|d.Ports.First()), 2)
	case kGSWIP:
		// SLPID CPU (2), DPID ELAN (0), PORT_MAP_EN|PORT_MAP_SEL (0xC0), port map[6:1] | DPID_EN.
		encPrefixBatchx4(mem, fr, rs, 2|0xc0<<16|uint32(byte(d.Ports<<1)&0x7e|1)<<24, 4)
	case kLAN9303:
		// Not bridged: 0x8100, port | STP_OVERRIDE (bit 4). Bridged unicast depends on the DA:
		// the slow path.
		if d.Flags&DestBridged != 0 {
			markSlow(rs)
			break
		}
		encSA4Batchx4(mem, fr, rs, 0x0081|uint32(bswap16(uint16(d.Ports.First())|1<<4))<<16, minFrame)
	case kTrailer:
		// 0x80, BIT(port), 0x10, 0x00.
		encTail4Batchx4(mem, fr, rs, 0x80|uint32(byte(d.Ports))<<8|0x10<<16)
	}
	ok := countNone(rs)
	if ok == len(fr) {
		return ok
	}
	return c.slowEncode(mem, fr, d, rs, ok)
}

// The encode loops. Each tags the frames it can as the per-frame encoder would and marks the others
// reasonSlow (rs is cleared before); tw is the tag's little-endian image. They walk the
// descriptors by byte offset and bounds-check once per frame as the decode loops do.

// frames is walk without Infos.
func frames(fr []frame.Frame, rs []Reason) (fb, rb unsafe.Pointer, end uintptr) {
	if len(rs) < len(fr) {
		panic(errShortResults)
	}
	return unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(rs)), uintptr(len(fr)) * frameSize
}

// encNoneAll is encode for "none" (nothing to write) and for a Dest that failed checkDest
// (bad): every frame gets bad, or ReasonTruncated if it is shorter than an Ethernet header.
//
//go:noinline
func encNoneAll(fr []frame.Frame, rs []Reason, bad Reason) int {
	rs = rs[:len(fr)]
	ok := len(fr)
	if bad != ReasonNone {
		ok = 0
	}
	for i := range fr {
		r := bad
		if fr[i].Len < minFrame {
			r = ReasonTruncated
			if bad == ReasonNone {
				ok--
			}
		}
		rs[i] = r
	}
	return ok
}

// encDSABatch: an untagged frame (no 802.1Q tag in its bytes or out of band): the MAC addresses
// move 4 bytes toward the head and the tag takes their place.
//
//go:noinline
func encDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 14
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+14 : o+14]
			if le.Uint16(q[16:18]) != 0x0081 {
				*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
				le.PutUint32(q[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(rb, p)
	}
}

// encEDSABatch is encDSABatch with 8 bytes: 0xDADA 0x0000 and the DSA tag.
//
//go:noinline
func encEDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 14
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o <= lim {
			q := mem[o-8 : o+14 : o+14]
			if le.Uint16(q[20:22]) != 0x0081 {
				*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
				le.PutUint64(q[12:20], tw)
				f.Off -= 8
				setLenHead(f, lh-8<<16+8)
				continue
			}
		}
		slow(rb, p)
	}
}

// encBrcmBatch pads to 64 bytes (a frame of 60-63 bytes takes one 4-byte zero store into its
// tailroom, a shorter one the slow path), then inserts the tag after the source MAC. One bounds
// check covers the 4 bytes before the frame and its first 68 (a frame whose 68th byte is past
// the arena takes the slow path). The padded case, the minimum-size frame where the per-frame
// cost matters most, is tested first; each case is written out in full.
//
//go:noinline
func encBrcmBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 68
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		if o, lh := int64(f.Off), lenHead(f); lh >= 4<<16 && o >= 4 && o <= lim {
			h := mem[o-4 : o+68 : o+68]
			if l, tl := uint16(lh), f.Tail; l-60 < 4 && tl >= 4 {
				le.PutUint32(h[4+int(l&63):], 0) // pad to 64
				f.Tail = tl + l - 64
				*(*[12]byte)(h[0:12]) = *(*[12]byte)(h[4:16]) // MACs
				le.PutUint32(h[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh&^0xffff-4<<16+68)
				continue
			} else if l-64 <= 0xffff-4-64 {
				*(*[12]byte)(h[0:12]) = *(*[12]byte)(h[4:16]) // MACs
				le.PutUint32(h[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(rb, p)
	}
}

// encBrcmPrependBatch pads as encBrcmBatch, then puts the tag in front of the frame.
//
//go:noinline
func encBrcmPrependBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 68
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		if o, lh := int64(f.Off), lenHead(f); lh >= 4<<16 && o >= 4 && o <= lim {
			h := mem[o-4 : o+68 : o+68]
			if l, tl := uint16(lh), f.Tail; l-60 < 4 && tl >= 4 {
				le.PutUint32(h[4+int(l&63):], 0) // pad to 64
				f.Tail = tl + l - 64
				le.PutUint32(h[0:4], tw)
				f.Off -= 4
				setLenHead(f, lh&^0xffff-4<<16+68)
				continue
			} else if l-64 <= 0xffff-4-64 {
				le.PutUint32(h[0:4], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(rb, p)
	}
}

// encQCABatch inserts the 2-byte tag after the source MAC.
//
//go:noinline
func encQCABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint16) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 12
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 2<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-2 && o >= 2 && o <= lim {
			q := mem[o-2 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[2:14]) // MACs
			le.PutUint16(q[12:14], tw)
			f.Off -= 2
			setLenHead(f, lh-2<<16+2)
			continue
		}
		slow(rb, p)
	}
}

// encMTKBatch: a frame of at least short bytes (minFrame, or 60 with DestPad) with no VLAN tag
// (in its bytes or out of band) gets the 4-byte tag after the source MAC; a VLAN-tagged one (the
// special tag replaces the TPID) and a shorter one take the slow path.
//
//go:noinline
func encMTKBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, short uint16) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 14
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= short && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+14 : o+14]
			if et := le.Uint16(q[16:18]); et != 0x0081 && et != 0xa888 {
				*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
				le.PutUint32(q[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(rb, p)
	}
}

// encSA4Batch inserts the 4-byte tag after the source MAC of every frame of at least short bytes
// (minFrame, or 60 for a format that pads: shorter frames take the slow path).
//
//go:noinline
func encSA4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, short uint16) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 12
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 4<<16 && uint16(lh) >= short && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
			le.PutUint32(q[12:16], tw)
			f.Off -= 4
			setLenHead(f, lh-4<<16+4)
			continue
		}
		slow(rb, p)
	}
}

// encRTL84Batch inserts the 8-byte tag after the source MAC.
//
//go:noinline
func encRTL84Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 12
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o <= lim {
			q := mem[o-8 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
			le.PutUint64(q[12:20], tw)
			f.Off -= 8
			setLenHead(f, lh-8<<16+8)
			continue
		}
		slow(rb, p)
	}
}

// encPrefixBatch puts the 2-byte (ar9331) or 4-byte (gswip) tag in front of every frame.
//
//go:noinline
func encPrefixBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, n int) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem))
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, lh := int64(f.Off), lenHead(f)
		if int(lh>>16) >= n && uint16(lh) >= minFrame && int(uint16(lh)) <= 0xffff-n && o >= 4 && o <= lim {
			if n == 2 {
				le.PutUint16(mem[o-2:o:o], uint16(tw))
			} else {
				le.PutUint32(mem[o-4:o:o], tw)
			}
			f.Off -= uint32(n)
			setLenHead(f, lh-uint32(n)<<16+uint32(n))
			continue
		}
		slow(rb, p)
	}
}

// encTail1Batch appends one byte to every frame of 60 bytes or more: t, or tll for a link-local
// destination (KSZ's override bit); uint32 rather than byte, so that the choice is a CMOV.
//
//go:noinline
func encTail1Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll uint32) {
	fb, rb, end := frames(fr, rs)
	lim, limDA := int64(len(mem))-1, int64(len(mem))-8 // o <= limDA follows from e <= lim, for the prover
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 1 && l <= 0xffff-1 && e <= lim && o <= limDA {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
				v = tll
			}
			mem[e] = byte(v)
			f.Len, f.Tail = l+1, tl-1
			continue
		}
		slow(rb, p)
	}
}

// encTail2Batch is encTail1Batch with a two-byte tag.
//
//go:noinline
func encTail2Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll uint16) {
	fb, rb, end := frames(fr, rs)
	lim, limDA := int64(len(mem))-2, int64(len(mem))-8 // o <= limDA follows from e <= lim, for the prover
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 2 && l <= 0xffff-2 && e <= lim && o <= limDA {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
				v = tll
			}
			le.PutUint16(mem[e:e+2:e+2], v)
			f.Len, f.Tail = l+2, tl-2
			continue
		}
		slow(rb, p)
	}
}

// encTail4Batch appends the 4-byte tag to every frame of 60 bytes or more.
//
//go:noinline
func encTail4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 4
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 4 && l <= 0xffff-4 && e <= lim {
			le.PutUint32(mem[e:e+4:e+4], tw)
			f.Len, f.Tail = l+4, tl-4
			continue
		}
		slow(rb, p)
	}
}

// encTail8Batch appends the 8-byte tag to every frame of 60 bytes or more.
//
//go:noinline
func encTail8Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	fb, rb, end := frames(fr, rs)
	lim := int64(len(mem)) - 8
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(fb, p))
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 8 && l <= 0xffff-8 && e <= lim {
			le.PutUint64(mem[e:e+8:e+8], tw)
			f.Len, f.Tail = l+8, tl-8
			continue
		}
		slow(rb, p)
	}
}
