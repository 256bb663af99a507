package vlan

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch forms below do what the per-frame functions do, for every frame of a batch, with the
// loop inside: no call per frame, one pass over the descriptors. Frames that need the general path
// (an out-of-band tag, an extra TPID, a frame too short) take it, so results equal the per-frame
// functions' frame by frame (the tests check this).

// ParseBatch parses every frame of b into hs[i] (hs must hold b.Len() headers). A frame that ends
// inside its header gets a zero Header (Len 0). It returns how many frames parsed. Out-of-band tags
// are not part of the bytes and not reported here (see Outer).
func (p *Parser) ParseBatch(b *frame.Batch, hs []Header) int {
	fr := b.Frames
	hs = hs[:len(fr)]
	mem := b.Mem
	ok := 0
	for i := range fr {
		f := &fr[i]
		h := &hs[i]
		end := f.Off + uint32(f.Len)
		if f.Len < EthLen+HeaderLen || end > uint32(len(mem)) || p.n != 0 {
			if p.Parse(mem[f.Off:end], h) == nil {
				ok++
			}
			continue
		}
		d := mem[f.Off : f.Off+EthLen+HeaderLen]
		t := binary.BigEndian.Uint16(d[12:14])
		h.Inner = Tag{}
		if t != TPID8021Q && t != TPID8021AD {
			h.Outer = Tag{}
			h.EtherType, h.N, h.Len = t, 0, frame.EtherLen
			ok++
			continue
		}
		h.Outer = Tag{t, TCI(binary.BigEndian.Uint16(d[14:16]))}
		t2 := binary.BigEndian.Uint16(d[16:18])
		if t2 != TPID8021Q && t2 != TPID8021AD {
			h.EtherType, h.N, h.Len = t2, 1, EthLen
			ok++
			continue
		}
		h.Inner = Tag{t2, TCI(binary.BigEndian.Uint16(d[18:20]))}
		h.EtherType, h.N, h.Len = binary.BigEndian.Uint16(d[20:22]), 2, EthLen+HeaderLen
		ok++
	}
	return ok
}

// PushBatch pushes t onto every frame of b (as Push does, out-of-band tags put back first). Frames
// it cannot tag (no headroom, shorter than the MAC addresses) are released and removed from b, the
// others keep their order. It returns how many frames were dropped.
func PushBatch(b *frame.Batch, t Tag) (dropped int) {
	fr := b.Frames
	mem := b.Mem
	k := 0
	for i := range fr {
		f := &fr[i]
		if f.Flags&frame.FlagVLAN == 0 && f.Len >= macLen && f.Head >= HeaderLen && int(f.Len)+HeaderLen <= 0xffff &&
			f.Off >= HeaderLen && f.Off+macLen <= uint32(len(mem)) {
			f.Off -= HeaderLen
			f.Head -= HeaderLen
			f.Len += HeaderLen
			d := mem[f.Off : f.Off+macLen+HeaderLen]
			lo := binary.LittleEndian.Uint64(d[4:12])
			hi := binary.LittleEndian.Uint32(d[12:16])
			binary.LittleEndian.PutUint64(d[0:8], lo)
			binary.LittleEndian.PutUint32(d[8:12], hi)
			binary.BigEndian.PutUint16(d[12:14], t.TPID)
			binary.BigEndian.PutUint16(d[14:16], uint16(t.TCI))
		} else if Push(b, i, t) != nil {
			continue
		}
		if k != i {
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	if k < len(fr) && b.Owner != nil {
		b.Owner.Release(fr[k:])
	}
	b.Frames = fr[:k]
	return len(fr) - k
}

// PopBatch removes the outermost tag of every tagged frame of b (as Pop does: an out-of-band tag
// costs no byte move; runts are padded to 60 bytes when they have the tailroom). Untagged frames and
// frames that end inside their tag are left as they are. It returns how many tags it removed.
func (p *Parser) PopBatch(b *frame.Batch) (popped int) {
	fr := b.Frames
	mem := b.Mem
	for i := range fr {
		f := &fr[i]
		if f.Flags&frame.FlagVLAN != 0 || f.Len < frame.MinEthernetLen+HeaderLen || p.n != 0 ||
			f.Off+EthLen > uint32(len(mem)) {
			if _, err := p.Pop(b, i); err == nil {
				popped++
			}
			continue
		}
		d := mem[f.Off : f.Off+EthLen]
		if t := binary.BigEndian.Uint16(d[12:14]); t != TPID8021Q && t != TPID8021AD {
			continue
		}
		lo := binary.LittleEndian.Uint64(d[0:8])
		hi := binary.LittleEndian.Uint32(d[8:12])
		binary.LittleEndian.PutUint64(d[4:12], lo)
		binary.LittleEndian.PutUint32(d[12:16], hi)
		f.Off += HeaderLen
		f.Head += HeaderLen
		f.Len -= HeaderLen
		popped++
	}
	return popped
}

// PopBatch is Parser.PopBatch with the standard TPIDs.
func PopBatch(b *frame.Batch) int { return std.PopBatch(b) }

// SetTCIBatch rewrites the outermost tag's TCI of every tagged frame of b (out of band or in the
// bytes) and returns how many it rewrote; untagged frames are left alone.
func (p *Parser) SetTCIBatch(b *frame.Batch, tci TCI) (n int) {
	fr := b.Frames
	mem := b.Mem
	for i := range fr {
		f := &fr[i]
		if f.Flags&frame.FlagVLAN != 0 || f.Len < EthLen || p.n != 0 || f.Off+EthLen > uint32(len(mem)) {
			if p.SetTCI(b, i, tci) == nil {
				n++
			}
			continue
		}
		d := mem[f.Off+macLen : f.Off+EthLen]
		if t := binary.BigEndian.Uint16(d[0:2]); t == TPID8021Q || t == TPID8021AD {
			binary.BigEndian.PutUint16(d[2:4], uint16(tci))
			n++
		}
	}
	return n
}

// SetTCIBatch is Parser.SetTCIBatch with the standard TPIDs.
func SetTCIBatch(b *frame.Batch, tci TCI) int { return std.SetTCIBatch(b, tci) }

// ParseBatch is Parser.ParseBatch with the standard TPIDs.
func ParseBatch(b *frame.Batch, hs []Header) int { return std.ParseBatch(b, hs) }
