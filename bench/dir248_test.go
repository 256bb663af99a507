package bench

import (
	"net/netip"
	"slices"
)

// dir248 is a plain DIR-24-8 longest-prefix-match table (Gupta, Lin, McKeown 1998), the classic
// reference: a 2^24-entry first level (64 MiB of uint32) indexed by the top 24 bits, whose entries hold
// either a next hop or the index of a 256-entry second-level chunk for prefixes longer than /24.
// Entries hold nh+1; 0 means no route.
type dir248 struct {
	tbl24   []uint32
	tblLong []uint32
}

const dir248Chunk = uint32(1) << 31

func newDIR248(routes []route) *dir248 {
	d := &dir248{tbl24: make([]uint32, 1<<24)}
	rs := slices.Clone(routes)
	// Paint shorter prefixes first so that longer ones overwrite them.
	slices.SortStableFunc(rs, func(a, b route) int { return a.p.Bits() - b.p.Bits() })
	for _, r := range rs {
		a := u32(r.p.Addr())
		l := r.p.Bits()
		v := r.nh + 1
		if l <= 24 {
			lo := a >> 8
			for i := lo; i < lo+1<<(24-l); i++ {
				d.tbl24[i] = v
			}
			continue
		}
		e := d.tbl24[a>>8]
		if e&dir248Chunk == 0 {
			c := uint32(len(d.tblLong) >> 8)
			for range 256 {
				d.tblLong = append(d.tblLong, e)
			}
			e = c | dir248Chunk
			d.tbl24[a>>8] = e
		}
		base := (e &^ dir248Chunk) << 8
		lo := a & 0xFF
		for i := lo; i < lo+1<<(32-l); i++ {
			d.tblLong[base+i] = v
		}
	}
	return d
}

func (d *dir248) lookup(a uint32) (uint32, bool) {
	e := d.tbl24[a>>8]
	if e&dir248Chunk != 0 {
		e = d.tblLong[(e&^dir248Chunk)<<8|a&0xFF]
	}
	return e - 1, e != 0
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
