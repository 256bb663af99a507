package lag

import (
	"encoding/binary"
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

// The XOR mode's batch pass: one loop per policy group and member choice (usable[hash % count] by
// Lemire's fastmod, or the bucket table), chosen once per batch, hashing and choosing in one pass
// with no per-frame switch. The bulk of real traffic takes the straight path of its loop:
//
//   - layer2: any untagged Ethernet frame (dst[5] ^ src[5] ^ EtherType);
//   - vlan+srcmac: any frame (the TCI from the out-of-band tag or an in-band outermost tag);
//   - layer2+3, layer3+4, encap2+3, encap3+4: untagged IPv4 with a 20-byte header that is not a
//     fragment, carrying TCP or UDP (for such a frame the encap policies equal layer2+3 and
//     layer3+4: the flow dissector finds nothing more inside TCP or UDP).
//
// The L3 loops hand IPv4 behind one in-band tag and IPv6 without extension headers carrying TCP or
// UDP to l3Rare, called from the loop; every other frame is listed and hashed after the loop by the
// general path (hashFrame), so that the loop keeps its state in registers. TestSelectEqualsGeneral
// and FuzzSelect check every loop against the general path, which TestHashMatchesOracle and
// FuzzHash check against the naive transcription of the kernel.

// Little-endian views of network-order values, so that a 2- or 8-byte load compares with a constant.
const (
	v4LE   = 0x0008 // EtherType 0x0800
	v6LE   = 0xdd86 // EtherType 0x86dd
	vlanLE = 0x0081 // EtherType 0x8100
	qinqLE = 0xa888 // EtherType 0x88a8
)

// l3Win is the header window the L3 loops read with one bounds check: Ethernet, one tag and 50
// bytes of network header (an IPv6 header and the ports word need 44). It may run past the frame's
// end into its own buffer or ring slot, but only bytes inside the frame decide anything: l3MinLen
// covers untagged IPv4 (14 + 20 + 4), l3Rare checks the length of the rest.
const (
	l3Win    = 68
	l3MinLen = 38
	l2Win    = 18 // layer2 and vlan+srcmac: Ethernet and one tag
)

// v4OK reports whether the 24 bytes at ip start an IPv4 header the L3 loops hash inline: version
// 4 with a 20-byte header (IHL 5), not a fragment (no MF flag, offset 0), carrying TCP or UDP. Two
// 4-byte loads: the first byte, and flags/offset, TTL and protocol (bytes 6-9), compared masked.
func v4OK(ip *[24]byte) bool {
	x := binary.LittleEndian.Uint32(ip[6:10]) & 0xff00ff3f
	return ip[0] == 0x45 && (x == protoTCP<<24 || x == protoUDP<<24)
}

// v4Straight is the straight path's test: untagged (EtherType 0x0800 at 12) and v4OK, with the
// EtherType and the first byte of the header in one load.
func v4Straight(w *[l3Win]byte) bool {
	x := binary.LittleEndian.Uint32(w[20:24]) & 0xff00ff3f
	return binary.LittleEndian.Uint32(w[12:16])&0xffffff == 0x45<<16|v4LE && (x == protoTCP<<24 || x == protoUDP<<24)
}

// v4Addrs is src ^ dst of the IPv4 header at ip (the kernel's little-endian loads).
func v4Addrs(ip *[24]byte) uint32 {
	a := binary.LittleEndian.Uint64(ip[12:20])
	return uint32(a) ^ uint32(a>>32)
}

// l3Rare is the L3 loops' second chance, for the frames f whose window w v4Straight refused: IPv4
// as v4Straight wants it behind one in-band tag taken as the accelerated tag, and IPv6 (untagged
// or behind such a tag) whose next header is TCP or UDP, with ipv6_addr_hash of each address. It
// returns the value bond_ip_hash folds (start ^ src ^ dst, the start being the ports word when
// ports, else the layer2 hash), or false for the general path.
func l3Rare(w *[l3Win]byte, f *frame.Frame, ports bool) (uint32, bool) {
	n := f.Len
	t := binary.LittleEndian.Uint16(w[12:14])
	ip := (*[48]byte)(w[14:62])
	nh := uint16(14)
	if (t == vlanLE || t == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
		t = binary.LittleEndian.Uint16(w[16:18])
		ip = (*[48]byte)(w[18:66])
		nh = 18
	}
	var sd, pw uint32
	switch {
	case t == v4LE && nh+24 <= n && v4OK((*[24]byte)(ip[:24])):
		sd = v4Addrs((*[24]byte)(ip[:24]))
		pw = binary.LittleEndian.Uint32(ip[20:24])
	case t == v6LE && nh+44 <= n && (ip[6] == protoTCP || ip[6] == protoUDP):
		a := binary.LittleEndian.Uint64(ip[8:16]) ^ binary.LittleEndian.Uint64(ip[16:24]) ^
			binary.LittleEndian.Uint64(ip[24:32]) ^ binary.LittleEndian.Uint64(ip[32:40])
		sd = uint32(a) ^ uint32(a>>32)
		pw = binary.LittleEndian.Uint32(ip[40:44])
	default:
		return 0, false
	}
	if !ports {
		pw = uint32(w[5]) ^ uint32(w[11]) ^ uint32(bits.ReverseBytes16(t))
	}
	return pw ^ sd, true
}

// ipFold is bond_ip_hash's fold after the XOR of the start value with the addresses.
func ipFold(h uint32) uint32 {
	h ^= h >> 16
	return h ^ h>>8
}

// pick is usable[h % count] without a division: Lemire, Kaser and Kurz's direct remainder
// ("Faster Remainder by Direct Computation", 2019, theorem 1) with a 38-bit fraction, exact for
// every 32-bit h and count <= 64 (F >= N + L with N = 32, 2^L >= count, L = 6): with
// c = ceil(2^38 / count), h % count = ((c * h mod 2^38) * count) >> 38. Keeping the fraction in
// the top 38 bits of a 64-bit word (mp = c << 26) and the count shifted (ds = count << 18) leaves
// the remainder in the top byte: two multiplies and two shifts, no 128-bit product, and an index
// below 256 into u (the usable members, padded) with no bounds check. TestPick checks it.
func pick(u *[256]uint8, mp, ds uint64, h uint32) uint8 {
	return u[(mp*uint64(h))>>26*ds>>56]
}

// pickConsts are pick's constants for count usable members (1 <= count <= 64).
func pickConsts(count uint32) (mp, ds uint64) {
	c := (uint64(1)<<38 + uint64(count) - 1) / uint64(count)
	return c << 26, uint64(count) << 18
}

// xorBatch chooses the members of the frames of b in XOR mode (len(out) of them, at most 64) and
// returns the set of frames (bit i: frame i) it left to the general path.
func xorBatch(st *snapshot, pol Policy, b *frame.Batch, out []uint8) uint64 {
	mem := b.Mem
	fr := b.Frames[:len(out)]
	u, mp, ds := &st.members, st.mp, st.ds
	t := st.table
	switch pol {
	case Layer2:
		if t != nil {
			return xorL2Table(mem, fr, out, t)
		}
		return xorL2(mem, fr, out, u, mp, ds)
	case Layer34, Encap34:
		if t != nil {
			return xorL34Table(mem, fr, out, t)
		}
		return xorL34(mem, fr, out, u, mp, ds)
	case Layer23, Encap23:
		if t != nil {
			return xorL23Table(mem, fr, out, t)
		}
		return xorL23(mem, fr, out, u, mp, ds)
	case VLANSrcMAC:
		if t != nil {
			return xorSrcMACTable(mem, fr, out, t)
		}
		return xorSrcMAC(mem, fr, out, u, mp, ds)
	}
	return ^uint64(0) >> (64 - len(out))
}

// The loops below come in pairs (usable[hash % count], table[Bucket(hash)]) that differ only in
// their last line.

// l2Hash is bond_eth_hash of the 18-byte window of a frame of length n: dst[5] ^ src[5] ^ the
// EtherType behind an in-band outermost tag (taken as the accelerated tag unless one is out of
// band and if the frame holds it).
func l2Hash(w *[l2Win]byte, flags frame.Flags, n uint16) uint32 {
	t := binary.BigEndian.Uint16(w[12:14])
	if (t == ethVLAN || t == ethQinQ) && flags&frame.FlagVLAN == 0 && n >= 18 {
		t = binary.BigEndian.Uint16(w[16:18])
	}
	return uint32(w[5]) ^ uint32(w[11]) ^ uint32(t)
}

func xorL2(mem []byte, fr []frame.Frame, out []uint8, u *[256]uint8, mp, ds uint64) (rare uint64) {
	out = out[:len(fr)]
	_ = u[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < frame.EtherLen || off+l2Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		out[i] = pick(u, mp, ds, l2Hash((*[l2Win]byte)(mem[off:off+l2Win]), f.Flags, f.Len))
	}
	return rare
}

func xorL2Table(mem []byte, fr []frame.Frame, out []uint8, t *[Buckets]uint8) (rare uint64) {
	out = out[:len(fr)]
	_ = t[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < frame.EtherLen || off+l2Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		out[i] = t[Bucket(l2Hash((*[l2Win]byte)(mem[off:off+l2Win]), f.Flags, f.Len))]
	}
	return rare
}

// srcMACHash is bond_vlan_srcmac_hash of the 18-byte window of a frame of length n >= 14.
func srcMACHash(w *[l2Win]byte, f *frame.Frame) uint32 {
	x := binary.BigEndian.Uint64(w[4:12]) // dst[4:6], then src
	h := uint32(x^x>>24) & 0xffffff       // src[3:6] ^ src[0:3]
	if f.Flags&frame.FlagVLAN != 0 {
		h ^= uint32(f.TCI)
	} else if t := binary.LittleEndian.Uint16(w[12:14]); (t == vlanLE || t == qinqLE) && f.Len >= 18 {
		h ^= uint32(binary.BigEndian.Uint16(w[14:16]))
	}
	return h
}

func xorSrcMAC(mem []byte, fr []frame.Frame, out []uint8, u *[256]uint8, mp, ds uint64) (rare uint64) {
	out = out[:len(fr)]
	_ = u[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < frame.EtherLen || off+l2Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		out[i] = pick(u, mp, ds, srcMACHash((*[l2Win]byte)(mem[off:off+l2Win]), f))
	}
	return rare
}

func xorSrcMACTable(mem []byte, fr []frame.Frame, out []uint8, t *[Buckets]uint8) (rare uint64) {
	out = out[:len(fr)]
	_ = t[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < frame.EtherLen || off+l2Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		out[i] = t[Bucket(srcMACHash((*[l2Win]byte)(mem[off:off+l2Win]), f))]
	}
	return rare
}

// xorL34 is layer3+4 and encap3+4 on the straight path: fold(ports ^ src ^ dst) >> 1.
func xorL34(mem []byte, fr []frame.Frame, out []uint8, u *[256]uint8, mp, ds uint64) (rare uint64) {
	out = out[:len(fr)]
	_ = u[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < l3MinLen || off+l3Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		w := (*[l3Win]byte)(mem[off : off+l3Win])
		var h uint32
		if binary.LittleEndian.Uint32(w[12:16])&0xffffff == 0x45<<16|v4LE {
			x := binary.LittleEndian.Uint32(w[20:24]) & 0xff00ff3f
			if x != protoTCP<<24 && x != protoUDP<<24 {
				rare |= 1 << (i & 63)
				continue
			}
			h = v4Addrs((*[24]byte)(w[14:38])) ^ binary.LittleEndian.Uint32(w[34:38])
		} else {
			t := binary.LittleEndian.Uint16(w[12:14])
			ip := (*[48]byte)(w[14:62])
			nh := uint16(14)
			if (t == vlanLE || t == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				t = binary.LittleEndian.Uint16(w[16:18])
				ip = (*[48]byte)(w[18:66])
				nh = 18
			}
			if t == v4LE && nh+24 <= f.Len && v4OK((*[24]byte)(ip[:24])) {
				h = v4Addrs((*[24]byte)(ip[:24])) ^ binary.LittleEndian.Uint32(ip[20:24])
			} else if t == v6LE && nh+44 <= f.Len && (ip[6] == protoTCP || ip[6] == protoUDP) {
				a := binary.LittleEndian.Uint64(ip[8:16]) ^ binary.LittleEndian.Uint64(ip[16:24]) ^
					binary.LittleEndian.Uint64(ip[24:32]) ^ binary.LittleEndian.Uint64(ip[32:40])
				h = uint32(a) ^ uint32(a>>32) ^ binary.LittleEndian.Uint32(ip[40:44])
			} else {
				rare |= 1 << (i & 63)
				continue
			}
		}
		out[i] = pick(u, mp, ds, ipFold(h)>>1)
	}
	return rare
}

func xorL34Table(mem []byte, fr []frame.Frame, out []uint8, t *[Buckets]uint8) (rare uint64) {
	out = out[:len(fr)]
	_ = t[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < l3MinLen || off+l3Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		w := (*[l3Win]byte)(mem[off : off+l3Win])
		if !v4Straight(w) {
			rare |= 1 << (i & 63)
			continue
		}
		h := v4Addrs((*[24]byte)(w[14:38])) ^ binary.LittleEndian.Uint32(w[34:38])
		out[i] = t[Bucket(ipFold(h)>>1)]
	}
	return rare
}

// xorL23 is layer2+3 and encap2+3 on the straight path: fold(layer2 ^ src ^ dst), layer2 being
// dst[5] ^ src[5] ^ 0x0800.
func xorL23(mem []byte, fr []frame.Frame, out []uint8, u *[256]uint8, mp, ds uint64) (rare uint64) {
	out = out[:len(fr)]
	_ = u[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < l3MinLen || off+l3Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		w := (*[l3Win]byte)(mem[off : off+l3Win])
		if !v4Straight(w) {
			rare |= 1 << (i & 63)
			continue
		}
		h := v4Addrs((*[24]byte)(w[14:38])) ^ uint32(w[5]) ^ uint32(w[11]) ^ ethIPv4
		out[i] = pick(u, mp, ds, ipFold(h))
	}
	return rare
}

func xorL23Table(mem []byte, fr []frame.Frame, out []uint8, t *[Buckets]uint8) (rare uint64) {
	out = out[:len(fr)]
	_ = t[0]
	for i := range fr {
		f := &fr[i]
		off := uint64(f.Off)
		if f.Len < l3MinLen || off+l3Win > uint64(len(mem)) {
			rare |= 1 << (i & 63)
			continue
		}
		w := (*[l3Win]byte)(mem[off : off+l3Win])
		if !v4Straight(w) {
			rare |= 1 << (i & 63)
			continue
		}
		h := v4Addrs((*[24]byte)(w[14:38])) ^ uint32(w[5]) ^ uint32(w[11]) ^ ethIPv4
		out[i] = t[Bucket(ipFold(h))]
	}
	return rare
}

// rareChoice chooses the member of a frame the batch loop marked: l3Rare for the L3 policies when
// it can, else the general path.
func rareChoice(st *snapshot, pol Policy, mem []byte, f *frame.Frame) uint8 {
	var h uint32
	ok := false
	if off := uint64(f.Off); pol != Layer2 && pol != VLANSrcMAC && f.Len >= l3MinLen && off+l3Win <= uint64(len(mem)) {
		ports := pol == Layer34 || pol == Encap34
		if h, ok = l3Rare((*[l3Win]byte)(mem[off:off+l3Win]), f, ports); ok {
			h = ipFold(h)
			if ports {
				h >>= 1
			}
		}
	}
	if !ok {
		h = hashFrame(pol, mem, f)
	}
	if st.table != nil {
		return st.table[Bucket(h)]
	}
	return pick(&st.members, st.mp, st.ds, h)
}
