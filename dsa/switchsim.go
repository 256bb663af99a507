package dsa

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// SwitchSide is the other end of a conduit: the switch chip's view of a tag format. Its Encode
// writes the tag a switch puts on a frame it hands to the CPU (the RX format, which
// Tagger.Decode reads) and its Decode reads and strips the tag the CPU puts on a frame for the
// switch (the TX format, which Tagger.Encode writes). It exists for simulations and tests: a
// generator that plays the switch and the hosts behind it, and an independent check that what a
// forwarder tags is what the switch would act on.
//
// The layouts are the mirror images of the Tagger's (see doc.go): wherever Linux's tag driver
// reads a field on receive, Encode writes it; wherever it writes a field on transmit, Decode
// reads it and rejects what the driver would never send (wrong opcode, command or reserved bits).
// Encode and Decode work in place, allocate nothing and never panic on any bytes.
//
// Concurrency: set TxTimestamp before use; a SwitchSide is then read-only and safe for concurrent
// use by any number of goroutines (each working on its own batches).
type SwitchSide struct {
	c *codec
	t Tagger
	// TxTimestamp: the switch expects the 4-byte PTP timestamp field in front of the tail tag
	// of every frame from the CPU (Microchip ksz9477 and lan937x with hardware timestamping
	// on, i.e. the conduit sends with DestTimestamp). Ignored by other formats.
	TxTimestamp bool
}

// NewSwitchSide returns the switch side of t, which must be one of the built-in taggers (ByName).
func NewSwitchSide(t Tagger) (*SwitchSide, error) {
	bt, ok := t.(builtin)
	if !ok || bt.base().fm.swEncode == nil || bt.base().fm.swDecode == nil {
		return nil, fmt.Errorf("dsa: no switch side for tagger %T: %w", t, ErrUnknown)
	}
	return &SwitchSide{c: bt.base(), t: t}, nil
}

// Tagger is the format this is the switch side of.
func (s *SwitchSide) Tagger() Tagger { return s.t }

// Encode tags frame i as the switch sends it to the CPU, so that the tagger's Decode reports in:
// in.Port and in.Switch are the source; InfoTrapped and in.Code select a trap or reason code
// where the format has one (Marvell TO_CPU, Broadcom RC, Qualcomm type, Realtek REASON,
// LAN9303 STP bit); InfoTrunk (Marvell) marks a trunk ID; InfoBridge with in.Code = VBID (tag_8021q)
// a bridge domain; InfoTimestamp with in.Timestamp adds the KSZ timestamp; the PCP of in.TCI is
// the tag_8021q priority. A Marvell switch folds an 802.1Q tag at the front of the frame into
// its own tag, as the real chip does. Tail formats pad a runt to 60 bytes first. in.TagLen and
// InfoVLAN are ignored (they follow from the format and the frame).
//
// It returns ErrPort when the source does not fit the format's fields, ErrTruncated for a
// frame shorter than an Ethernet header, ErrNoHeadroom or ErrNoTailroom; on error the frame is
// unchanged.
func (s *SwitchSide) Encode(b *frame.Batch, i int, in Info) error {
	return s.encodeRX(b.Mem, &b.Frames[i], in).Err()
}

// EncodeMalformed tags frame i from port with a tag the tagger must reject, as a corrupted or
// misconfigured switch would send it, and returns the Reason the conduit will count. Formats in
// which every tag is valid (mtk, the ksz family, gswip, hellcreek, none: Linux checks nothing)
// return ReasonNone and leave the frame unchanged.
func (s *SwitchSide) EncodeMalformed(b *frame.Batch, i int, port int) Reason {
	corrupt := s.c.fm.malformed
	if corrupt == nil {
		return ReasonNone
	}
	f := &b.Frames[i]
	mem := b.Mem
	if port < 0 || s.encodeRX(mem, f, Info{Port: uint16(port)}) != ReasonNone {
		if s.encodeRX(mem, f, Info{}) != ReasonNone { // port 0 exists in every format
			return ReasonNone
		}
	}
	return corrupt(f.Data(mem))
}

// encodeRX writes the RX-format tag. On failure f and its bytes are unchanged.
func (s *SwitchSide) encodeRX(mem []byte, f *frame.Frame, in Info) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	return s.c.fm.swEncode(s.c, mem, f, in)
}

// Decode reads and strips the tag the CPU put on frame i (Tagger.Encode's format) and returns
// where it asked the switch to send the frame. It restores an 802.1Q or 802.1ad tag that the
// format merged into its own (Marvell tagged bit, MediaTek TPID), leaves the zero padding of
// formats that pad before tagging, and reports only what the format carries: Dest.Prio where
// there is a priority field, Dest.Switch for Marvell and tag_8021q, DestForward and DestBridged
// for Marvell, DestBridged for LAN9303's address lookup
// (no port then), DestTimestamp when TxTimestamp is set.
//
// It returns ErrTruncated, ErrNotTagged (tag_8021q: not a tag_8021q VID; edsa, rtl4a: wrong
// EtherType) or ErrBadTag (a field the driver never writes so) and leaves the frame unchanged
// on error.
func (s *SwitchSide) Decode(b *frame.Batch, i int) (Dest, error) {
	d, r := s.decodeTX(b.Mem, &b.Frames[i])
	return d, r.Err()
}

// decodeTX reads and strips the TX-format tag. On failure f and its bytes are unchanged.
func (s *SwitchSide) decodeTX(mem []byte, f *frame.Frame) (Dest, Reason) {
	p := f.Data(mem)
	need := s.c.spec.TxLen
	if s.c.fm.swTxLen != nil {
		need = s.c.fm.swTxLen(s)
	}
	if len(p) < minFrame+need {
		return Dest{}, ReasonTruncated
	}
	return s.c.fm.swDecode(s, mem, f, p)
}

// swStripSA removes n bytes between the source MAC and what follows (the caller checked the length).
func swStripSA(mem []byte, f *frame.Frame, n int) {
	p := f.Data(mem)
	copy(p[n:n+12], p[:12])
	f.PullHead(n)
}
