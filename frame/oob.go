package frame

import "encoding/binary"

// VLANLen is the length of one 802.1Q or 802.1ad tag in a frame's bytes.
const VLANLen = 4

// ReinsertVLAN puts frame i's out-of-band VLAN tag (FlagVLAN, Frame.TPID and Frame.TCI, as
// AF_PACKET reports the tag it took out) back into the bytes as the outermost tag, and clears the
// flag and the two fields. The 12 address bytes move 4 into the headroom; the payload does not move.
// A TPID of 0 means 0x8100 (kernels before 3.14 do not report it). A frame without the flag is left
// as it is. It returns ErrTruncated for a frame shorter than its two addresses and ErrNoHeadroom
// when there are fewer than 4 bytes of headroom, changing nothing in either case.
//
// The out-of-band tag is the I/O layer's: a port's Send calls this for any frame that still has
// the flag, so that what leaves is what the stages saw plus the tag.
func (b *Batch) ReinsertVLAN(i int) error {
	f := &b.Frames[i]
	if f.Flags&FlagVLAN == 0 {
		return nil
	}
	if f.Len < 12 {
		return ErrTruncated
	}
	if !f.PushHead(VLANLen) {
		return ErrNoHeadroom
	}
	tp := f.TPID
	if tp == 0 {
		tp = TypeVLAN
	}
	d := b.Mem[f.Off : f.Off+12+VLANLen]
	lo := binary.LittleEndian.Uint64(d[4:12])
	hi := binary.LittleEndian.Uint32(d[12:16])
	binary.LittleEndian.PutUint64(d[0:8], lo)
	binary.LittleEndian.PutUint32(d[8:12], hi)
	binary.BigEndian.PutUint16(d[12:14], tp)
	binary.BigEndian.PutUint16(d[14:16], f.TCI)
	f.Flags &^= FlagVLAN
	f.TPID, f.TCI = 0, 0
	return nil
}
