package ops

import (
	"encoding/hex"
	"net/netip"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FuzzDecodeTraced: the trace's decoder reads any bytes without a panic, and agrees with gopacket
// (the oracle) on the VLAN tags and the IPv4 addresses, protocol and TTL of what both decode.
func FuzzDecodeTraced(f *testing.F) {
	for _, s := range []string{
		// untagged IPv4/UDP
		"02686f7374010277737274010800" + "4500002e3cc100003f1127fb0a0001020a000202" + "9c400009001a0000",
		// one 802.1Q tag (VID 101), IPv4
		"02686f73740102777372740181000065" + "0800" + "4500002e3cc100003f1127fb0a0001020a000202",
		// QinQ: 802.1ad 7, 802.1Q 101, IPv4
		"02686f737401027773727401" + "88a80007" + "81000065" + "0800" + "4500002e3cc100003f1127fb0a0001020a000202",
		// ARP
		"ffffffffffff0277737274010806" + "0001080006040001027773727401" + "0a000101000000000000" + "0a000102",
		// truncated inside a tag, inside the IPv4 header
		"02686f7374010277737274018100",
		"02686f73740102777372740108004500",
		"",
	} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		got := decodeTraced(d)
		if got.Data != hex.EncodeToString(d) {
			t.Fatal("data is not the frame's bytes")
		}
		p := gopacket.NewPacket(d, layers.LayerTypeEthernet, gopacket.Default)
		if p.Layer(layers.LayerTypeEthernet) == nil {
			return
		}
		var vids []uint16
		for _, l := range p.Layers() {
			if q, ok := l.(*layers.Dot1Q); ok {
				vids = append(vids, q.VLANIdentifier)
			}
		}
		if !slices.Equal(vids, got.VLANs) && len(vids) > 0 {
			t.Fatalf("VLANs %v, gopacket %v", got.VLANs, vids)
		}
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil || ip.SrcIP == nil || ip.IHL < 5 || !got.Src.IsValid() || len(vids) != len(got.VLANs) {
			return
		}
		src, _ := netip.AddrFromSlice(ip.SrcIP.To4())
		dst, _ := netip.AddrFromSlice(ip.DstIP.To4())
		if got.Src != src || got.Dst != dst || got.TTL != int(ip.TTL) || got.Protocol != int(ip.Protocol) {
			t.Fatalf("%+v, gopacket %v > %v ttl %d proto %d", got, src, dst, ip.TTL, ip.Protocol)
		}
	})
}
