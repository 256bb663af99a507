package trunkgen

import (
	"encoding/binary"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// SendTraffic sends n frames of the trunk examples' traffic on p, in batches of 50 from pool:
// upstream, 802.1Q frames from the hosts of VLANs 1..20 to 198.18.0.0 + k (frame k: inside
// 198.18.0.0/15 for up to 131,072 frames) addressed to the router's trunk MAC; downstream, untagged
// frames from the gateway to the hosts 10.0.vlan.x addressed to the router's uplink MAC. It is what
// the examples' real-interface tests push through a router, and CheckUpstream and CheckDownstream
// judge what comes out. It returns how many frames p queued.
func SendTraffic(p xmit.Port, pool *frame.Pool, routerMAC frame.MAC, upstream bool, n int) (int, error) {
	b := frame.NewBatch(50)
	queued := 0
	for sent := 0; sent < n; {
		if _, err := pool.Alloc(b, min(50, n-sent)); err != nil || len(b.Frames) == 0 {
			return queued, fmt.Errorf("trunkgen: pool exhausted after %d frames: %v", sent, err)
		}
		for i := range b.Frames {
			k := sent + i
			vl := 1 + k%trafficVLANs
			e := frame.Ether(nil)
			if upstream {
				b.Frames[i].Resize(64)
				d := b.Bytes(i)
				e = frame.Ether(d)
				e.SetSrc(HostMAC(vl, 2))
				binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
				binary.BigEndian.PutUint16(d[14:], VID(vl))
				binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
				UDP(d[18:], 0x0a000002|uint32(vl)<<8, 0xc6120000|uint32(k), 64)
			} else {
				b.Frames[i].Resize(60)
				d := b.Bytes(i)
				e = frame.Ether(d)
				e.SetSrc(GatewayMAC)
				e.SetType(frame.TypeIPv4)
				UDP(d[14:], 0xc6120001, 0x0a000000|uint32(vl)<<8|uint32(2+k%200), 33)
			}
			e.SetDst(routerMAC)
		}
		m := len(b.Frames)
		q, err := p.Send(b) // Send empties b
		queued += q
		sent += m
		if err != nil || q != m {
			return queued, fmt.Errorf("trunkgen: the port queued %d of %d: %v", q, m, err)
		}
	}
	return queued, nil
}

// CheckUpstream reports why d, a frame the router sent on the uplink, is not SendTraffic's upstream
// traffic routed: to the gateway, from the router's uplink MAC upMAC, TTL 63, checksum right.
func CheckUpstream(d []byte, upMAC frame.MAC) error {
	if len(d) < frame.EtherLen+frame.IPv4MinLen {
		return fmt.Errorf("upstream frame too short: %x", d)
	}
	ip := frame.IPv4(d[frame.EtherLen:])
	if frame.Ether(d).Dst() != GatewayMAC || frame.Ether(d).Src() != upMAC || ip.TTL() != 63 || !ip.ChecksumOK() || ip.Dst()>>17 != 0xc612>>1 {
		return fmt.Errorf("upstream frame not rewritten as expected: %x", d)
	}
	return nil
}

// CheckDownstream reports why frame f (bytes d), sent by the router on the trunk, is not
// SendTraffic's downstream traffic routed: tagged with its host's VLAN (in the bytes, or out of band
// as veth may hand it), to the host, from the router's trunk MAC trunkMAC, TTL 32, checksum right.
func CheckDownstream(f *frame.Frame, d []byte, trunkMAC frame.MAC) error {
	tci, l3 := f.TCI, frame.EtherLen
	if f.Flags&frame.FlagVLAN == 0 {
		if len(d) < vlan.EthLen {
			return fmt.Errorf("downstream frame too short: %x", d)
		}
		tci, l3 = binary.BigEndian.Uint16(d[14:]), vlan.EthLen
	}
	if len(d) < l3+frame.IPv4MinLen {
		return fmt.Errorf("downstream frame too short: %x", d)
	}
	ip := frame.IPv4(d[l3:])
	vl := int(ip.Dst()>>8) & 0xff
	if tci&0xfff != VID(vl) || frame.Ether(d).Dst() != HostMAC(vl, 2) || frame.Ether(d).Src() != trunkMAC || ip.TTL() != 32 || !ip.ChecksumOK() {
		return fmt.Errorf("downstream frame not rewritten as expected (tci %#x): %x", tci, d)
	}
	return nil
}

// trafficVLANs is how many VLANs SendTraffic spreads over: the examples' default configuration.
const trafficVLANs = 20
