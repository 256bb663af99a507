package dsa

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// The per-format decoders behind Decode, and behind DecodeBatch and Conduit.Recv for the frames
// their fast loops (batch.go) leave to the general code. Each reads the tag at its place in frame
// f's bytes, most with the same info function as the format's parser; mtk, ksz8795/hellcreek, gswip
// and the common Marvell tags fill the Info themselves (the fuzz targets and the vector tests hold
// Parse and Decode to the same answer), then strips the tag in place. On failure f and its
// bytes are unchanged. One bounds check for the frame's bytes, word loads for the tag, and for a
// tag after the source MAC two word loads and two stores to move the MAC addresses (no memmove).

// stripSA removes the n tag bytes that follow the source MAC of f, whose bytes are p: the 12 MAC
// bytes move n bytes toward the end and the frame starts n bytes later. The caller checked that p
// holds 12+n bytes and that the headroom can take n more.
func stripSA(p []byte, f *frame.Frame, n int) Reason {
	if headFull(f, n) {
		return ReasonTruncated
	}
	_ = p[n+11]
	lo := binary.LittleEndian.Uint64(p[0:8])
	hi := binary.LittleEndian.Uint32(p[8:12])
	binary.LittleEndian.PutUint64(p[n:n+8], lo)
	binary.LittleEndian.PutUint32(p[n+8:n+12], hi)
	f.Off += uint32(n)
	f.Head += uint16(n)
	f.Len -= uint16(n)
	return ReasonNone
}

// pullFront removes n bytes (a tag in front of the DA) from the front of f.
func pullFront(f *frame.Frame, n int) Reason {
	if headFull(f, n) {
		return ReasonTruncated
	}
	f.Off += uint32(n)
	f.Head += uint16(n)
	f.Len -= uint16(n)
	return ReasonNone
}

// trimTail removes n bytes (a tail tag) from the end of f.
func trimTail(f *frame.Frame, n int) Reason {
	if tailFull(f, n) {
		return ReasonTruncated
	}
	f.Len -= uint16(n)
	f.Tail += uint16(n)
	return ReasonNone
}

// headFull reports that f's headroom cannot grow by n bytes (a descriptor limit, never reached by
// the pools in this module).
func headFull(f *frame.Frame, n int) bool { return int(f.Head)+n > 0xffff }

// tailFull is headFull for the tailroom.
func tailFull(f *frame.Frame, n int) bool { return int(f.Tail)+n > 0xffff }

func decNone(mem []byte, f *frame.Frame, in *Info) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	*in = Info{}
	return ReasonNone
}

// decMarvell strips a dsa (extra 0) or edsa (extra 4) tag; a tag with the "tagged" bit leaves a
// regular 802.1Q tag in its last four bytes (tag_dsa.c dsa_rcv_ll).
func decMarvell(p []byte, f *frame.Frame, in *Info, extra int) Reason {
	n := 4 + extra
	if r := mvInfo(be32(p[12+extra:16+extra]), uint8(n), in); r != ReasonNone {
		return r
	}
	if headFull(f, n) {
		return ReasonTruncated
	}
	fl := in.Flags
	if fl&InfoVLAN != 0 {
		binary.BigEndian.PutUint32(p[n+8:n+12], uint32(frame.TypeVLAN)<<16|uint32(in.TCI))
		n -= 4
	}
	if n > 0 {
		_ = stripSA(p, f, n) // cannot fail: headFull was checked for the whole tag above
	}
	if fl&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

// reasonSlow marks a frame off a fast path (the batch loops' and encDSA/encEDSA's answer); it never
// leaves the package.
const reasonSlow Reason = 0xff

// decDSA and decEDSA check the length (and EDSA's EtherType) and hand the tag to decMarvell. The
// common tag (FORWARD, not "tagged", not from a trunk) never reaches them from the Taggers: the
// per-frame Decode (perframe.go) and the batch loop decode it themselves.
func decDSA(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return decMarvell(p[:16], f, in, 0)
}

func decEDSA(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	if be16(p[12:14]) != ethPEDSA {
		return ReasonNotTagged
	}
	return decMarvell(p[:20], f, in, 4)
}

func decBrcm(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := brcmInfo(be32(p[12:16]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

func decBrcmPrepend(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := brcmInfo(be32(p[0:4]), in); r != ReasonNone {
		return r
	}
	return pullFront(f, 4)
}

func decQCA(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	if r := qcaInfo(be16(p[12:14]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 2)
}

func decMTK(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 4, Port: uint16(p[13] & 7)}
	return stripSA(p, f, 4)
}

// decKSZ8795 is ksz8795 and hellcreek: one tail byte, port[1:0].
func decKSZ8795(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+1 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 1, Port: uint16(p[n-1] & 3)}
	return trimTail(f, 1)
}

// decKSZ9477 is ksz9477, ksz9893 and lan937x: one tail byte, or five with a timestamp.
func decKSZ9477(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if r := parseKSZ9477(p, in); r != ReasonNone {
		return r
	}
	n := int(in.TagLen)
	return trimTail(f, n)
}

func decRTL4A(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := rtl4aInfo(be32(p[12:16]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

func decRTL84(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	if r := rtl84Info(be32(p[12:16]), p[19], in); r != ReasonNone {
		return r
	}
	if r := stripSA(p, f, 8); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

func decRTL84T(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+8 {
		return ReasonTruncated
	}
	if r := rtl84Info(be32(p[n-8:n-4]), p[n-1], in); r != ReasonNone {
		return r
	}
	if r := trimTail(f, 8); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

func dec8021Q(mem []byte, f *frame.Frame, in *Info, tpid uint16) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := q8021Info(be32(p[12:16]), tpid, in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

func decAR9331(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	if r := ar9331Info(binary.LittleEndian.Uint16(p[0:2]), in); r != ReasonNone {
		return r
	}
	return pullFront(f, 2)
}

func decGSWIP(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 8, Port: uint16(p[7]>>4) & 7}
	return pullFront(f, 8)
}

func decLAN9303(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := lan9303Info(be32(p[12:16]), in); r != ReasonNone {
		return r
	}
	if r := stripSA(p, f, 4); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

func decTrailer(mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+4 {
		return ReasonTruncated
	}
	if r := trailerInfo(be32(p[n-4:n]), in); r != ReasonNone {
		return r
	}
	return trimTail(f, 4)
}

// mvTxWord is the FROM_CPU (or FORWARD) tag for an untagged frame toward d, which passed checkDest.
func mvTxWord(d Dest) uint32 {
	cmd := uint32(mvCmdFromCPU)
	if d.Flags&DestForward != 0 {
		cmd = mvCmdForward
	}
	vid := uint32(mvVIDStandalone)
	if d.Flags&DestBridged != 0 {
		vid = mvVIDBridged
	}
	return (cmd<<6|uint32(d.Switch))<<24 | uint32(d.Ports.First())<<19 | vid
}

// encDSA and encEDSA are the common Marvell encode as leaf functions: an untagged frame (no
// 802.1Q tag in its bytes or out of band) with room for the tag. Anything else returns reasonSlow
// for encMarvell, which also reports the exact error. The frame's bytes and the headroom in front
// are one array q: the tag goes at q[12:], the MAC bytes move from q[n:n+12] to q[0:12].
func encDSA(mem []byte, f *frame.Frame, d Dest) Reason {
	if d.Switch > 0x1f || f.Flags&frame.FlagVLAN != 0 || f.Head < 4 || f.Len > 0xffff-4 || f.Len < minFrame {
		return reasonSlow
	}
	off := f.Off - 4
	q := (*[18]byte)(mem[off : off+18])
	if be16(q[16:18]) == frame.TypeVLAN {
		return reasonSlow
	}
	lo := binary.LittleEndian.Uint64(q[4:12])
	hi := binary.LittleEndian.Uint32(q[12:16])
	binary.LittleEndian.PutUint64(q[0:8], lo)
	binary.LittleEndian.PutUint32(q[8:12], hi)
	binary.BigEndian.PutUint32(q[12:16], mvTxWord(d))
	f.Off = off
	f.Head -= 4
	f.Len += 4
	return ReasonNone
}

func encEDSA(mem []byte, f *frame.Frame, d Dest) Reason {
	if d.Switch > 0x1f || f.Flags&frame.FlagVLAN != 0 || f.Head < 8 || f.Len > 0xffff-8 || f.Len < minFrame {
		return reasonSlow
	}
	off := f.Off - 8
	q := (*[22]byte)(mem[off : off+22])
	if be16(q[20:22]) == frame.TypeVLAN {
		return reasonSlow
	}
	lo := binary.LittleEndian.Uint64(q[8:16])
	hi := binary.LittleEndian.Uint32(q[16:20])
	binary.LittleEndian.PutUint64(q[0:8], lo)
	binary.LittleEndian.PutUint32(q[8:12], hi)
	binary.BigEndian.PutUint32(q[12:16], ethPEDSA<<16)
	binary.BigEndian.PutUint32(q[16:20], mvTxWord(d))
	f.Off = off
	f.Head -= 8
	f.Len += 8
	return ReasonNone
}
