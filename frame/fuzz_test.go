package frame

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FuzzParseIPv4 checks that ParseIPv4 never panics, that whatever it accepts gopacket decodes to the
// same fields, and that the accessors and the incremental TTL update stay consistent.
func FuzzParseIPv4(f *testing.F) {
	f.Add(buildUDP(f, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 3)[EtherLen:])
	f.Add([]byte{0x45, 0, 0, 20, 0, 0, 0x20, 0, 1, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, err := ParseIPv4(b)
		if err != nil {
			return
		}
		var g layers.IPv4
		if gerr := g.DecodeFromBytes(b, gopacket.NilDecodeFeedback); gerr != nil {
			// gopacket is stricter about nothing we accept except option syntax; skip those.
			if ip.HeaderLen() == IPv4MinLen {
				t.Fatalf("we accept, gopacket rejects a header without options: %v", gerr)
			}
			return
		}
		if int(g.IHL)*4 != ip.HeaderLen() || int(g.Length) != ip.TotalLen() || g.TTL != ip.TTL() ||
			uint8(g.Protocol) != ip.Protocol() || g.SrcIP.String() != ip.SrcAddr().String() ||
			g.DstIP.String() != ip.DstAddr().String() || g.FragOffset != uint16(ip.FragOff()) {
			t.Fatalf("disagree with gopacket: %+v vs % x", g, []byte(ip))
		}
		ip.Ports()
		ok := ip.ChecksumOK()
		if ip.DecTTL() && ok != ip.ChecksumOK() {
			t.Fatal("DecTTL broke the checksum")
		}
	})
}
