package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- none: untagged frames, one port (net/dsa/tag_none.c) ----

var fmtNone = format{
	spec: spec("none", PosNone, 0, 0, 0, 1, false),
	parse: func(_ *codec, p []byte, in *Info) Reason {
		if len(p) < minFrame {
			return ReasonTruncated
		}
		*in = Info{}
		return ReasonNone
	},
	decode:      decNone,
	decodeBatch: decNoneBatchx4,
	encode:      func(*codec, []byte, *frame.Frame, Dest) Reason { return ReasonNone },
	swEncode:    func(*codec, []byte, *frame.Frame, Info) Reason { return ReasonNone },
	swDecode:    func(*SwitchSide, []byte, *frame.Frame, []byte) (Dest, Reason) { return Dest{}, ReasonNone },
	tagger:      func(c codec) Tagger { return &tNone{c} },
}

func decNone(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	*in = Info{}
	return ReasonNone
}

// decNoneBatch: nothing to strip; a frame shorter than an Ethernet header takes the slow path.
//
//go:noinline
func decNoneBatch(_ []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	for i := range fr {
		if fr[i].Len >= minFrame {
			ins[i] = Info{}
			continue
		}
		slow(&rs[i])
	}
}

type tNone struct{ codec }

func (t *tNone) Decode(b *frame.Batch, i int, in *Info) error {
	if b.Frames[i].Len >= minFrame {
		*in = Info{}
		return nil
	}
	return t.decodeSlow(b, i, in)
}

func (t *tNone) Encode(b *frame.Batch, i int, d Dest) error {
	if d.Ports&^1 == 0 && b.Frames[i].Len >= minFrame {
		return nil
	}
	return t.encodeSlow(b, i, d)
}
