package fwd

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// maxFragments bounds the fragments of one packet (a 64 KiB packet over the minimum MTU of 68).
const maxFragments = 8192

// fragment cuts frame i, an IPv4 packet without DF that exceeds the egress MTU of a, into fragments
// (RFC 791): the first in the frame's own buffer (to Output.Egress), the others in fresh buffers of
// the pool (to Output.Generated). Every fragment's TTL is one less than the packet's.
func (w *Worker) fragment(in *frame.Batch, i int, ip frame.IPv4, a *adj) {
	f := &in.Frames[i]
	tl := ip.TotalLen()
	hl := ip.HeaderLen()
	ip = ip[:tl]
	// The header of the later fragments: options without the copied flag become no-operations.
	var later [60]byte
	copy(later[:], ip[:hl])
	if !nopUncopied(later[frame.IPv4MinLen:hl]) {
		w.dropFrame(in, f, DropMalformed)
		return
	}
	// Fragment payloads are multiples of 8 bytes, as large as the MTU and a pool buffer allow (the
	// L2 header takes EtherLen bytes of the buffer; a longer one grows into the headroom).
	room := int(w.r.pool.BufSize()) - int(w.r.pool.Headroom()) - frame.EtherLen
	per := (min(int(a.mtu), room) - hl) &^ 7
	n := (tl - hl + per - 1) / max(per, 1)
	p := a.rw.Port()
	g := w.out.Generated[p]
	if per < 8 || n > maxFragments || g.Space() < n-1 {
		w.dropFrame(in, f, DropFragment)
		return
	}
	base := len(g.Frames)
	if got, _ := w.r.pool.Alloc(g, n-1); got < n-1 {
		w.r.pool.Release(g.Frames[base:])
		g.Frames = g.Frames[:base]
		w.dropFrame(in, f, DropFragment)
		return
	}
	ip.DecTTL()
	later[8], later[10], later[11] = ip[8], 0, 0
	flags := binary.BigEndian.Uint16(ip[6:8])
	off0 := int(flags & 0x1fff)
	mf0 := flags & 0x2000
	reserved := flags & 0x8000
	for j := 1; j < n; j++ {
		start := hl + j*per
		end := min(start+per, tl)
		nf := &g.Frames[base+j-1]
		nf.Resize(frame.EtherLen + hl + end - start)
		b := nf.Data(g.Mem)[frame.EtherLen:]
		copy(b, later[:hl])
		copy(b[hl:], ip[start:end])
		h := frame.IPv4(b)
		binary.BigEndian.PutUint16(h[2:], uint16(hl+end-start))
		mf := mf0
		if j < n-1 {
			mf = 0x2000
		}
		binary.BigEndian.PutUint16(h[6:], reserved|mf|uint16(off0+j*per/8))
		h.SetChecksum()
		nf.L3 = frame.EtherLen
		if w.vw.Apply(g, base+j-1, &a.rw) != nil { // only without headroom, which New rules out
			w.r.pool.Release(g.Frames[base:])
			g.Frames = g.Frames[:base]
			w.dropFrame(in, f, DropFragment)
			return
		}
	}
	// The first fragment: the packet's own header and buffer, cut short.
	binary.BigEndian.PutUint16(ip[2:], uint16(hl+per))
	binary.BigEndian.PutUint16(ip[6:], reserved|0x2000|uint16(off0))
	ip.SetChecksum()
	f.Resize(int(f.L3) + hl + per)
	if w.vw.Apply(in, i, &a.rw) != nil {
		w.r.pool.Release(g.Frames[base:])
		g.Frames = g.Frames[:base]
		w.dropFrame(in, f, DropEgress)
		return
	}
	w.cnt[cFragmented]++
	w.cnt[cFragments] += uint64(n)
	if w.tap != nil {
		w.capture(f.Data(in.Mem), Forwarded)
	}
	w.out.Egress[p].Append(*f)
}

// nopUncopied replaces every option of opts whose copied flag is clear by no-operation options, as
// the later fragments of a packet carry them; it reports false for a malformed option list.
func nopUncopied(opts []byte) bool {
	for i := 0; i < len(opts); {
		switch t := opts[i]; t {
		case 0: // end of options
			return true
		case 1: // no operation
			i++
		default:
			if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
				return false
			}
			l := int(opts[i+1])
			if t&0x80 == 0 {
				for k := i; k < i+l; k++ {
					opts[k] = 1
				}
			}
			i += l
		}
	}
	return true
}
