package gen_test

import (
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
)

// Four flows over two VLANs and two prefixes: what each frame carries.
func ExampleFrames() {
	frames, err := gen.Frames(&gen.Config{
		Flows: 4,
		VLAN:  101, VLANs: 2,
		Dst: []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24"), netip.MustParsePrefix("10.0.2.0/24")},
	})
	if err != nil {
		panic(err)
	}
	for _, b := range frames {
		p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
		q := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		fmt.Println(len(b), q.VLANIdentifier, ip.SrcIP, "→", ip.DstIP, uint16(udp.SrcPort))
	}
	// Output:
	// 60 101 198.18.0.1 → 10.0.1.1 10000
	// 60 102 198.18.0.1 → 10.0.2.1 10001
	// 60 101 198.18.0.1 → 10.0.1.2 10002
	// 60 102 198.18.0.1 → 10.0.2.2 10003
}
