package frame

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestCompleteL4Checksum: frames gopacket builds with correct checksums, their checksum field then
// set to the pseudo-header's sum as a sender leaving it to the hardware writes it, are completed
// to exactly gopacket's checksum: TCP and UDP, IPv4 and IPv6, untagged and 802.1Q-tagged; other
// frames are left alone.
func TestCompleteL4Checksum(t *testing.T) {
	src4, dst4 := net.IP{10, 0, 0, 1}, net.IP{10, 0, 0, 2}
	src6, dst6 := net.ParseIP("2001:db8::1"), net.ParseIP("2001:db8::2")
	build := func(v6, tcp, tagged bool, payload int) (b []byte, l4, off int) {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ls := []gopacket.SerializableLayer{eth}
		l3 := 14
		if tagged {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4})
			l3 = 18
		}
		var netl gopacket.NetworkLayer
		proto := layers.IPProtocolUDP
		if tcp {
			proto = layers.IPProtocolTCP
		}
		if v6 {
			if tagged {
				ls[1].(*layers.Dot1Q).Type = layers.EthernetTypeIPv6
			} else {
				eth.EthernetType = layers.EthernetTypeIPv6
			}
			ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src6, DstIP: dst6}
			ls, netl, l4 = append(ls, ip), ip, l3+40
		} else {
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src4, DstIP: dst4}
			ls, netl, l4 = append(ls, ip), ip, l3+20
		}
		if tcp {
			s := &layers.TCP{SrcPort: 1, DstPort: 2, Seq: 9, Window: 100, ACK: true}
			s.SetNetworkLayerForChecksum(netl)
			ls, off = append(ls, s), 16
		} else {
			u := &layers.UDP{SrcPort: 1, DstPort: 2}
			u.SetNetworkLayerForChecksum(netl)
			ls, off = append(ls, u), 6
		}
		p := make([]byte, payload)
		for i := range p {
			p[i] = byte(i*13 + 5)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, append(ls, gopacket.Payload(p))...); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), buf.Bytes()...), l4, off
	}
	for _, v6 := range []bool{false, true} {
		for _, tcp := range []bool{false, true} {
			for _, tagged := range []bool{false, true} {
				for _, payload := range []int{0, 1, 7, 100} {
					b, l4, off := build(v6, tcp, tagged, payload)
					want := binary.BigEndian.Uint16(b[l4+off:])
					// The field as a sender with checksum offload leaves it: the pseudo-header's sum.
					l3 := l4 - 20
					var pseudo uint64
					if v6 {
						l3 = l4 - 40
						pseudo = sum(0, b[l3+8:l3+40])
					} else {
						pseudo = sum(0, b[l3+12:l3+20])
					}
					proto := uint64(ProtoUDP)
					if tcp {
						proto = ProtoTCP
					}
					end := len(b)
					if !v6 && binary.BigEndian.Uint16(b[l3+2:])+uint16(l3) < uint16(len(b)) {
						end = l3 + int(binary.BigEndian.Uint16(b[l3+2:]))
					}
					pseudo += proto + uint64(end-l4)
					binary.BigEndian.PutUint16(b[l4+off:], fold(pseudo))
					if !CompleteL4Checksum(b) {
						t.Fatalf("v6 %v tcp %v tagged %v: refused", v6, tcp, tagged)
					}
					if got := binary.BigEndian.Uint16(b[l4+off:]); got != want {
						t.Errorf("v6 %v tcp %v tagged %v payload %d: %#04x, gopacket %#04x", v6, tcp, tagged, payload, got, want)
					}
				}
			}
		}
	}
	icmp := buildUDP(t, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 3)
	icmp[14+9] = ProtoICMP
	for _, b := range [][]byte{icmp, icmp[:20], {}} {
		c := append([]byte(nil), b...)
		if CompleteL4Checksum(c) || string(c) != string(b) {
			t.Errorf("% x: completed", b)
		}
	}
}
