package lag

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The XOR mode's batch pass: one loop per policy group and member choice (usable[hash % count] or
// the bucket table), chosen once per batch, that hashes and chooses in one pass, with no per-frame
// switch and no per-frame call. Each loop has a straight path for the bulk of real traffic and a
// second, inline, path for the next most common frames:
//
//	loops                   straight path                           inline second path
//	layer2                  untagged Ethernet                       one in-band tag
//	vlan+srcmac             untagged, no out-of-band tag            a tag out of band or in band
//	layer3+4, encap3+4      untagged IPv4, 20-byte header, not a    IPv4 as on the straight path
//	                        fragment, TCP or UDP                    behind one in-band tag; IPv6
//	encap2+3                as layer3+4, fragments too              (untagged or behind one tag)
//	layer2+3                untagged IPv4, TCP or UDP (any          whose next header is TCP or UDP
//	                        version, IHL, fragment state)
//
// For the frames the L3 loops take, the encap policies equal layer2+3 and layer3+4 (the flow
// dissector finds nothing more inside TCP or UDP). Every other frame (QinQ, IP options and
// fragments where the policy's hash depends on them, ICMP, tunnels, short frames, frames whose
// header window runs past the arena) is left in a bit set and hashed after the loop by the general
// path (hashFrame): keeping the call out of the loop keeps the loop's state in registers.
//
// How the loops are written, each point chosen by instructions per frame (bench/notes/lag.md):
//   - They are written in internal/unroll's form (for i := range fr, the frame as &fr[i], the
//     member as out[i], the frame's rare bit as 1 << (i & 63)), which its backward walk turns into
//     one pointer from the last frame down (f = &fr[i] by pointer, out[i] by the out base + i):
//     one register fewer than a base and an offset (with one more, the compiler spilled the window
//     limit). The order does not matter. Each returns for an empty batch before the table's nil
//     check (_ = u[0]), as the unrolled copies' own empty-batch check would come after it.
//   - Each frame's header window is checked once against lim = len(mem) - window, and the window
//     sliced with a constant length, so the compiler drops its own bounds checks.
//   - They compare wide little-endian loads with constants and XOR the hashed words from memory.
//   - The straight path is the last branch of an if/else chain (no continue): it falls into the
//     loop test (no jump back) and keeps its registers.
//   - The second paths read the frame length through frameLen, so the straight path's length
//     check compares with memory and keeps no register; each path reads its fields at constant
//     offsets (no pointer to the network header).
//   - The choice is pick, pickHalf or pick8 (remainders without division that absorb the
//     kernel's >> 1 and the byte swap's >> 8), or the table with the bucket fold shortened
//     algebraically.
//
// Select (and xor64, for the chunks of a larger batch) runs every loop in its unrolled form
// (xor_unrolled.go, generated from the loops here by the module's internal/unroll: go generate
// ./lag), called through xorLoops: the last len % 4 frames by the body once, then four copies of
// the body per iteration (a quarter of the loop's decrement, add and test per frame), in one
// function that calls nothing and takes the loop's constants from the snapshot
// (internal/unroll's Lag). The loops here are the source the generator reads
// (TestLoopsEqualUnrolled compares them with their unrolled forms).
//
// TestSelectEqualsGeneral, TestSelectEqualsGeneralAdversarial and FuzzSelect check every loop
// against the general path (which TestHashMatchesOracle and FuzzHash check against the naive
// transcription of the kernel).

//go:generate go run ../internal/unroll/gen lag

// Little-endian views of network-order values, so that a 2- or 4-byte load compares with a constant.
const (
	v4LE   = 0x0008 // EtherType 0x0800
	v6LE   = 0xdd86 // EtherType 0x86dd
	vlanLE = 0x0081 // EtherType 0x8100
	qinqLE = 0xa888 // EtherType 0x88a8

	// Bytes 12-14 of an untagged IPv4 frame with a 20-byte header: EtherType 0x0800, version 4,
	// IHL 5 (the little-endian load of bytes 12-15, masked to three bytes).
	v4Head = 0x45<<16 | v4LE
	// Bytes 6-9 of an IPv4 header (flags and fragment offset, TTL, protocol) masked to the MF
	// flag, the offset and the protocol: equal to one of these for TCP or UDP, not a fragment.
	v4FragProto = 0xff00ff3f
	v4TCP       = protoTCP << 24
	v4UDP       = protoUDP << 24
)

// Header windows, read with one bounds check each. A window may run past the frame's end into other
// memory of the arena (its buffer's tailroom, the next frame, an AF_PACKET ring's next block, which
// the kernel may be writing), but only bytes inside the frame decide anything: the loops check the
// frame's length against what each path reads before they use a byte.
const (
	l3Win    = 66 // Ethernet, one tag, an IPv6 header and the ports word (18 + 40 + 4) rounded up
	l3MinLen = 38 // untagged IPv4: 14 + 20 + the ports word
	l2Win    = 18 // Ethernet and one tag
)

// frameSize is the descriptor's size, the loops' pointer step.
const frameSize = unsafe.Sizeof(frame.Frame{})

// v6Addrs is ipv6_addr_hash(src) ^ ipv6_addr_hash(dst) of the IPv6 header at ip.
func v6Addrs(ip *[48]byte) uint32 {
	a := binary.LittleEndian.Uint64(ip[8:16]) ^ binary.LittleEndian.Uint64(ip[16:24]) ^
		binary.LittleEndian.Uint64(ip[24:32]) ^ binary.LittleEndian.Uint64(ip[32:40])
	return uint32(a) ^ uint32(a>>32)
}

// macLow is dst[5] ^ src[5] (bond_eth_hash without the EtherType): the top bytes of two 4-byte
// loads, one load folded into the XOR.
func macLow(w *[12]byte) uint32 {
	return (binary.LittleEndian.Uint32(w[2:6]) ^ binary.LittleEndian.Uint32(w[8:12])) >> 24
}

// ipFold is bond_ip_hash's fold, after the XOR of the start value with the addresses.
func ipFold(h uint32) uint32 {
	h ^= h >> 16
	return h ^ h>>8
}

// bucket23 is Bucket(ipFold(h)) and bucket34 is Bucket(ipFold(h) >> 1), shortened. Both folds are
// linear over GF(2): with S(x) = x ^ x>>8 ^ x>>16 ^ x>>24 (32-bit x), ipFold(h) = S(h) and
// Bucket(x) = uint8(S(x)); S(S(h)) = h ^ h>>16 (the shifts by 8 and 24 appear twice and cancel),
// and S commutes with >> 1. TestSelectEqualsGeneral checks them through the identity table.
func bucket23(h uint32) uint8 { return uint8(h ^ h>>16) }
func bucket34(h uint32) uint8 { return uint8((h ^ h>>16) >> 1) }

// bucket16 is Bucket(h) for h < 1<<16 (layer2's hash): S(h) = h ^ h>>8.
func bucket16(h uint32) uint8 { return uint8(h ^ h>>8) }

// pick is usable[h % count] without a division: Lemire, Kaser and Kurz's direct remainder
// ("Faster Remainder by Direct Computation", 2019, theorem 1) with a 38-bit fraction, exact for
// every 32-bit h and count <= 64 (F >= N + L with N = 32, 2^L >= count, L = 6): with
// c = ceil(2^38 / count), h % count = ((c * h mod 2^38) * count) >> 38. Keeping the fraction in
// the top 38 bits of a 64-bit word (mp = c << 26) and the count shifted (ds = count << 18) leaves
// the remainder in the top byte: two multiplies and two shifts, no 128-bit product, and an index
// below 256 into u (the usable members, padded) with no bounds check. TestPick checks it.
func pick(u *[256]uint8, mp, ds uint64, h uint32) uint8 {
	return u[rem(mp, ds, h)]
}

// rem is h % count by pick's direct computation, with (mp, ds) = pickConsts(count): below 64.
func rem(mp, ds uint64, h uint32) uint64 { return (mp * uint64(h)) >> 26 * ds >> 56 }

// pickHalf is pick(u, mp, ds, g >> 1) (layer3+4's final shift) without the shift: with d = count,
// floor(g/2) mod d = floor((g mod 2d) / 2), so it is the direct remainder by 2d <= 128 (a 39-bit
// fraction: F = 39 >= 32 + 7; its constant ceil(2^39 / 2d) is pick's c, kept as mh = c << 25 =
// mp >> 1, both 0 for one member, where every uh[k] is u[0]; ds = d << 18 = 2d << 17 stays) looked
// up in uh[k] = u[k >> 1]. TestPick checks it.
func pickHalf(uh *[256]uint8, mh, ds uint64, g uint32) uint8 {
	return uh[(mh*uint64(g))>>25*ds>>56]
}

// pick8 is pick(u, mp, ds, y >> 8) (vlan+srcmac's hash, which arrives as the top 24 bits of a
// byte-swapped word) without the shift: with D = 256*count, floor(y/256) mod count =
// floor((y mod D) / 256), and the direct remainder by D <= 2^14 with a 46-bit fraction
// (F = 46 >= 32 + 14) has the constant ceil(2^46 / D) = ceil(2^38 / count), pick's c: kept as
// m8 = c << 18 (the fraction in the top 46 bits; 0 for one member, where c << 18 wraps and the
// index is 0 as it must be), then floor((y mod D) / 256) =
// (fraction * count) >> 46 = ((m8*y) >> 18) * (count << 10) >> 56 (below 2^62: no overflow).
// TestPick checks it.
func pick8(u *[256]uint8, m8, ds8 uint64, y uint32) uint8 {
	return u[(m8*uint64(y))>>18*ds8>>56]
}

// setPick fills the snapshot's tables and constants for pick, pickHalf and pick8 from usable.
func (st *snapshot) setPick() {
	st.members, st.half = [256]uint8{}, [256]uint8{}
	copy(st.members[:], st.usable)
	for k := 0; k < 2*len(st.usable); k++ {
		st.half[k] = st.usable[k>>1]
	}
	if len(st.usable) > 0 {
		st.mp, st.ds = pickConsts(uint32(len(st.usable)))
	}
}

// pickConsts are pick's constants for count usable members (1 <= count <= 64).
func pickConsts(count uint32) (mp, ds uint64) {
	c := (uint64(1)<<38 + uint64(count) - 1) / uint64(count)
	return c << 26, uint64(count) << 18
}

// xorLoop is the batch loop of a policy and choice (xorLoops), in its unrolled form: it chooses
// the members of the frames fr (at most 64) of the arena mem into ob[:len(fr)] and returns the set
// of the frames it leaves to the general path (xorRare).
type xorLoop func(st *snapshot, mem []byte, fr []frame.Frame, ob *uint8) (rare uint64)

// xorLoops are the batch loops by choice (0: usable[hash % count], 1: the table) and policy
// (&7: no bounds check; a policy without a loop leaves every frame to the general path).
var xorLoops = [2][8]xorLoop{
	{Layer2: xorL2x4, Layer34: xorL34x4, Layer23: xorL23x4, Encap23: xorE23x4, Encap34: xorL34x4, VLANSrcMAC: xorSrcMACx4, 6: xorNone, 7: xorNone},
	{Layer2: xorL2Tablex4, Layer34: xorL34Tablex4, Layer23: xorL23Tablex4, Encap23: xorE23Tablex4, Encap34: xorL34Tablex4, VLANSrcMAC: xorSrcMACTablex4, 6: xorNone, 7: xorNone},
}

// xorNone leaves every frame to the general path.
func xorNone(_ *snapshot, _ []byte, fr []frame.Frame, _ *uint8) uint64 {
	return ^uint64(0) >> (64 - len(fr))
}

// loopFor is the batch loop of policy pol with the choice of st.
func loopFor(st *snapshot, pol Policy) xorLoop {
	t := 0
	if st.table != nil {
		t = 1
	}
	return xorLoops[t][pol&7]
}

// xor64 chooses in XOR mode the members of the frames fr (at most 64) of the arena mem into out
// (len(out) == len(fr)): the batch loop of the policy and the choice, which leaves some frames to
// the general path (xorRare). Select does the same itself for a batch of at most 64 frames.
func xor64(st *snapshot, pol Policy, mem []byte, fr []frame.Frame, out []uint8) {
	if rare := loopFor(st, pol)(st, mem, fr, unsafe.SliceData(out[:len(fr)])); rare != 0 {
		xorRare(st, pol, mem, fr, out, rare)
	}
}

// xorRare chooses by the general path the member of every frame i of fr whose bit i is set in rare.
func xorRare(st *snapshot, pol Policy, mem []byte, fr []frame.Frame, out []uint8, rare uint64) {
	for ; rare != 0; rare &= rare - 1 {
		i := bits.TrailingZeros64(rare) & 63
		out[i] = generalChoice(st, pol, mem, &fr[i])
	}
}

// generalChoice chooses the member of a frame the batch loop left, by the general hash path.
func generalChoice(st *snapshot, pol Policy, mem []byte, f *frame.Frame) uint8 {
	h := hashFrame(pol, mem, f)
	if st.table != nil {
		return st.table[Bucket(h)]
	}
	return pick(&st.members, st.mp, st.ds, h)
}

// l2Tagged is layer2's hash of a frame whose EtherType at 12 is a tag's (et, as loaded
// little-endian): dst[5] ^ src[5] ^ the EtherType bond_eth_hash sees, the tag's, or the one
// behind it when the tag is the accelerated one (no tag out of band) and the frame holds it.
func l2Tagged(w *[l2Win]byte, f *frame.Frame, et uint16) uint32 {
	t := bits.ReverseBytes16(et)
	if f.Flags&frame.FlagVLAN == 0 && frameLen(f) >= 18 {
		t = binary.BigEndian.Uint16(w[16:18])
	}
	return uint32(w[5]) ^ uint32(w[11]) ^ uint32(t)
}

// frameLen is f.Len, read as an int16 so that the compiler does not share the load with the
// straight path's check of f.Len (a value of another type), which then compares with memory and
// keeps no register.
func frameLen(f *frame.Frame) uint16 {
	return uint16(*(*int16)(unsafe.Pointer(&f.Len)))
}

// l2Plain is layer2's hash of an untagged frame: dst[5] ^ src[5] ^ the EtherType, from the
// 2-byte load at 11 (src[5] | byte 12 << 8) and bytes 5 and 13.
func l2Plain(w *[l2Win]byte) uint32 {
	return uint32(binary.LittleEndian.Uint16(w[11:13])) ^ uint32(w[5]) ^ uint32(w[13])
}

// xorL2 is layer2: dst[5] ^ src[5] ^ EtherType.
func xorL2(mp, ds uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l2Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = u[0]
	lim := int64(len(mem)) - l2Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < frame.EtherLen || o > lim {
			rare |= 1 << (i & 63)
		} else {
			w := (*[l2Win]byte)(mem[o : o+l2Win])
			if et := binary.LittleEndian.Uint16(w[12:14]); et == vlanLE || et == qinqLE {
				out[i] = pick(u, mp, ds, l2Tagged(w, f, et))
			} else {
				out[i] = pick(u, mp, ds, l2Plain(w))
			}
		}
	}
	return rare
}

func xorL2Table(t *[Buckets]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l2Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = t[0]
	lim := int64(len(mem)) - l2Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < frame.EtherLen || o > lim {
			rare |= 1 << (i & 63)
		} else {
			w := (*[l2Win]byte)(mem[o : o+l2Win])
			if et := binary.LittleEndian.Uint16(w[12:14]); et == vlanLE || et == qinqLE {
				out[i] = t[bucket16(l2Tagged(w, f, et))]
			} else {
				out[i] = t[bucket16(l2Plain(w))]
			}
		}
	}
	return rare
}

// srcMACSwapped is bond_vlan_srcmac_hash without the TCI (src[0:3] ^ src[3:6] as 24-bit
// big-endian numbers) in the top 24 bits: the byte swap of the XOR of the little-endian words at 6
// and 9 (a byte swap is linear over XOR); its low byte (src[3] ^ byte 12) is junk that pick8
// shifts out.
func srcMACSwapped(w *[l2Win]byte) uint32 {
	return bits.ReverseBytes32(binary.LittleEndian.Uint32(w[6:10]) ^ binary.LittleEndian.Uint32(w[9:13]))
}

// srcMACBucket is Bucket of bond_vlan_srcmac_hash without the TCI: the XOR of the six source
// bytes (Bucket XORs the bytes of the hash, whose bytes are src[k] ^ src[k+3]), from the low two
// bytes of the XOR of the words at 6, 8 and 10 (src[0]^src[2]^src[4], src[1]^src[3]^src[5]).
func srcMACBucket(w *[l2Win]byte) uint32 {
	return binary.LittleEndian.Uint32(w[6:10]) ^ binary.LittleEndian.Uint32(w[8:12]) ^ binary.LittleEndian.Uint32(w[10:14])
}

// srcMACTCI is the TCI vlan+srcmac folds in for frame f with window w: the out-of-band tag's, an
// in-band outermost tag's (if the frame holds it), or 0.
func srcMACTCI(w *[l2Win]byte, f *frame.Frame) uint32 {
	if uint8(f.Flags)&uint8(frame.FlagVLAN) != 0 { // a byte load: not shared with the straight path's
		return uint32(f.TCI)
	}
	if t := binary.LittleEndian.Uint16(w[12:14]); (t == vlanLE || t == qinqLE) && frameLen(f) >= 18 {
		return uint32(binary.BigEndian.Uint16(w[14:16]))
	}
	return 0
}

// xorSrcMAC is vlan+srcmac: TCI ^ src[0:3] ^ src[3:6], chosen by pick8 on the swapped word (the
// TCI XORed in above its junk byte).
func xorSrcMAC(m8, ds8 uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l2Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = u[0]
	lim := int64(len(mem)) - l2Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < frame.EtherLen || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l2Win]byte)(mem[o : o+l2Win]); f.Flags&frame.FlagVLAN != 0 || binary.LittleEndian.Uint16(w[12:14]) == vlanLE || binary.LittleEndian.Uint16(w[12:14]) == qinqLE {
			out[i] = pick8(u, m8, ds8, srcMACSwapped(w)^srcMACTCI(w, f)<<8)
		} else {
			out[i] = pick8(u, m8, ds8, srcMACSwapped(w))
		}
	}
	return rare
}

func xorSrcMACTable(t *[Buckets]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l2Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = t[0]
	lim := int64(len(mem)) - l2Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < frame.EtherLen || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l2Win]byte)(mem[o : o+l2Win]); f.Flags&frame.FlagVLAN != 0 || binary.LittleEndian.Uint16(w[12:14]) == vlanLE || binary.LittleEndian.Uint16(w[12:14]) == qinqLE {
			out[i] = t[bucket16((srcMACBucket(w)^srcMACTCI(w, f))&0xffff)]
		} else {
			out[i] = t[bucket16(srcMACBucket(w)&0xffff)]
		}
	}
	return rare
}

// The L3 loops spell out every path in each loop (a call, or a shared helper too large to inline,
// would make the compiler spill the loop's registers on the straight path too). The second path
// tells the IPv6 and tagged frames apart by their own checks, each reading its fields at constant
// offsets. xorL34 and xorL23 differ only in their hash and choice expressions.

// xorL34 is layer3+4 and encap3+4: fold(ports ^ src ^ dst) >> 1.
func xorL34(mh, ds uint64, uh *[256]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = uh[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < l3MinLen || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint32(w[12:16])&0xffffff != v4Head {
			if et := binary.LittleEndian.Uint16(w[12:14]); et == v6LE {
				if frameLen(f) >= 14+44 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = pickHalf(uh, mh, ds, ipFold(v6Addrs((*[48]byte)(w[14:62]))^binary.LittleEndian.Uint32(w[54:58])))
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint32(w[16:20])&0xffffff == v4Head {
					if x := binary.LittleEndian.Uint32(w[24:28]) & v4FragProto; (x == v4TCP || x == v4UDP) && frameLen(f) >= 18+24 {
						out[i] = pickHalf(uh, mh, ds, ipFold(binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^binary.LittleEndian.Uint32(w[38:42])))
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+44 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = pickHalf(uh, mh, ds, ipFold(v6Addrs((*[48]byte)(w[18:66]))^binary.LittleEndian.Uint32(w[58:62])))
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if x := binary.LittleEndian.Uint32(w[20:24]) & v4FragProto; x != v4TCP && x != v4UDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = pickHalf(uh, mh, ds, ipFold(binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])))
		}
	}
	return rare
}

func xorL34Table(t *[Buckets]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = t[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < l3MinLen || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint32(w[12:16])&0xffffff != v4Head {
			if et := binary.LittleEndian.Uint16(w[12:14]); et == v6LE {
				if frameLen(f) >= 14+44 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = t[bucket34(v6Addrs((*[48]byte)(w[14:62]))^binary.LittleEndian.Uint32(w[54:58]))]
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint32(w[16:20])&0xffffff == v4Head {
					if x := binary.LittleEndian.Uint32(w[24:28]) & v4FragProto; (x == v4TCP || x == v4UDP) && frameLen(f) >= 18+24 {
						out[i] = t[bucket34(binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^binary.LittleEndian.Uint32(w[38:42]))]
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+44 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = t[bucket34(v6Addrs((*[48]byte)(w[18:66]))^binary.LittleEndian.Uint32(w[58:62]))]
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if x := binary.LittleEndian.Uint32(w[20:24]) & v4FragProto; x != v4TCP && x != v4UDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = t[bucket34(binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38]))]
		}
	}
	return rare
}

// xorL23 is layer2+3: fold(layer2 ^ src ^ dst), layer2 being dst[5] ^ src[5] ^ the EtherType
// behind the tag. Its checks are bond_flow_ip's (hashL3, flowDissect): an IPv4 header (20 bytes in
// the frame) hashes its addresses whatever its version, IHL and fragment state, unless it is not a
// fragment and its protocol is ICMP or ICMPv6 (an ICMP error hashes the embedded header's; a
// fragmented ICMP packet its own, but the loop leaves those to the general path), and so does an IPv6 header (40
// bytes) unless its next header is; so the loop takes the frames whose (IPv4 or IPv6) protocol is
// TCP or UDP, with no version, IHL or fragment check: the straight path checks the EtherType and
// the protocol byte (6 instructions for TCP, where the port policies' checks take 8). Its 2-byte
// load at 11 is src[5] | 0x08<<8, that is src[5] ^ the EtherType 0x0800 (bytes 12-13 are 0x0800
// there), XORed last so that both address loads fold into XORs (src[5] first: 5 instructions for
// the four terms, not 6). The second path reads the EtherType again by a 4-byte load (sharing the
// straight path's 2-byte one costs registers) and folds it apart (the
// fold is linear), a constant the compiler computes.
func xorL23(mp, ds uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = u[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < 14+20 || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint16(w[12:14]) != v4LE {
			if et := uint16(binary.LittleEndian.Uint32(w[12:16])); et == v6LE {
				if frameLen(f) >= 14+40 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = pick(u, mp, ds, ipFold(v6Addrs((*[48]byte)(w[14:62]))^macLow((*[12]byte)(w[:12])))^ipFold(ethIPv6))
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint16(w[16:18]) == v4LE {
					if p := w[27]; (p == protoTCP || p == protoUDP) && frameLen(f) >= 18+20 {
						out[i] = pick(u, mp, ds, ipFold(uint32(w[5])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^uint32(w[11]))^ipFold(ethIPv4))
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+40 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = pick(u, mp, ds, ipFold(v6Addrs((*[48]byte)(w[18:66]))^macLow((*[12]byte)(w[:12])))^ipFold(ethIPv6))
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if p := w[23]; p != protoTCP && p != protoUDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = pick(u, mp, ds, ipFold(uint32(w[5])^binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^uint32(binary.LittleEndian.Uint16(w[11:13]))))
		}
	}
	return rare
}

func xorL23Table(t *[Buckets]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = t[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < 14+20 || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint16(w[12:14]) != v4LE {
			if et := uint16(binary.LittleEndian.Uint32(w[12:16])); et == v6LE {
				if frameLen(f) >= 14+40 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = t[bucket23(v6Addrs((*[48]byte)(w[14:62]))^macLow((*[12]byte)(w[:12])))^bucket23(ethIPv6)]
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint16(w[16:18]) == v4LE {
					if p := w[27]; (p == protoTCP || p == protoUDP) && frameLen(f) >= 18+20 {
						out[i] = t[bucket23(uint32(w[5])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^uint32(w[11]))^bucket23(ethIPv4)]
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+40 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = t[bucket23(v6Addrs((*[48]byte)(w[18:66]))^macLow((*[12]byte)(w[:12])))^bucket23(ethIPv6)]
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if p := w[23]; p != protoTCP && p != protoUDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = t[bucket23(uint32(w[5])^binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^uint32(binary.LittleEndian.Uint16(w[11:13])))]
		}
	}
	return rare
}

// xorE23 is encap2+3: xorL23's hash, on the frames whose headers the flow dissector (dissect) takes
// as xorL23's loop does: IPv4 with a 20-byte header (the dissector checks IHL >= 5) whose protocol
// is TCP or UDP, fragment or not (a fragment ends the dissection with the addresses; TCP and UDP
// are not tunnels, and encap2+3 does not hash ports), and IPv6 whose next header is TCP or UDP;
// each needs its addresses in the frame only.
func xorE23(mp, ds uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = u[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < 14+20 || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint32(w[12:16])&0xffffff != v4Head {
			if et := binary.LittleEndian.Uint16(w[12:14]); et == v6LE {
				if frameLen(f) >= 14+40 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = pick(u, mp, ds, ipFold(v6Addrs((*[48]byte)(w[14:62]))^macLow((*[12]byte)(w[:12])))^ipFold(ethIPv6))
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint32(w[16:20])&0xffffff == v4Head {
					if p := w[27]; (p == protoTCP || p == protoUDP) && frameLen(f) >= 18+20 {
						out[i] = pick(u, mp, ds, ipFold(uint32(w[5])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^uint32(w[11]))^ipFold(ethIPv4))
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+40 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = pick(u, mp, ds, ipFold(v6Addrs((*[48]byte)(w[18:66]))^macLow((*[12]byte)(w[:12])))^ipFold(ethIPv6))
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if p := w[23]; p != protoTCP && p != protoUDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = pick(u, mp, ds, ipFold(uint32(w[5])^binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^uint32(binary.LittleEndian.Uint16(w[11:13]))))
		}
	}
	return rare
}

func xorE23Table(t *[Buckets]uint8, mem []byte, fr []frame.Frame, out []uint8) (rare uint64) {
	if len(mem) < l3Win {
		return ^uint64(0) >> (64 - len(fr))
	}
	if len(fr) == 0 {
		return 0
	}
	_ = t[0]
	lim := int64(len(mem)) - l3Win
	for i := range fr {
		f := &fr[i]
		o := int64(f.Off)
		if f.Len < 14+20 || o > lim {
			rare |= 1 << (i & 63)
		} else if w := (*[l3Win]byte)(mem[o : o+l3Win]); binary.LittleEndian.Uint32(w[12:16])&0xffffff != v4Head {
			if et := binary.LittleEndian.Uint16(w[12:14]); et == v6LE {
				if frameLen(f) >= 14+40 && (w[20] == protoTCP || w[20] == protoUDP) {
					out[i] = t[bucket23(v6Addrs((*[48]byte)(w[14:62]))^macLow((*[12]byte)(w[:12])))^bucket23(ethIPv6)]
				} else {
					rare |= 1 << (i & 63)
				}
			} else if (et == vlanLE || et == qinqLE) && f.Flags&frame.FlagVLAN == 0 {
				if binary.LittleEndian.Uint32(w[16:20])&0xffffff == v4Head {
					if p := w[27]; (p == protoTCP || p == protoUDP) && frameLen(f) >= 18+20 {
						out[i] = t[bucket23(uint32(w[5])^binary.LittleEndian.Uint32(w[30:34])^binary.LittleEndian.Uint32(w[34:38])^uint32(w[11]))^bucket23(ethIPv4)]
					} else {
						rare |= 1 << (i & 63)
					}
				} else if binary.LittleEndian.Uint16(w[16:18]) == v6LE && frameLen(f) >= 18+40 && (w[24] == protoTCP || w[24] == protoUDP) {
					out[i] = t[bucket23(v6Addrs((*[48]byte)(w[18:66]))^macLow((*[12]byte)(w[:12])))^bucket23(ethIPv6)]
				} else {
					rare |= 1 << (i & 63)
				}
			} else {
				rare |= 1 << (i & 63)
			}
		} else if p := w[23]; p != protoTCP && p != protoUDP {
			rare |= 1 << (i & 63)
		} else {
			out[i] = t[bucket23(uint32(w[5])^binary.LittleEndian.Uint32(w[26:30])^binary.LittleEndian.Uint32(w[30:34])^uint32(binary.LittleEndian.Uint16(w[11:13])))]
		}
	}
	return rare
}
