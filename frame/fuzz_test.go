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
		if want := naiveIPv4Err(b); err != want {
			t.Fatalf("ParseIPv4: %v, RFC 791 by hand says %v (% x)", err, want, b)
		}
		if err != nil {
			return
		}
		if ok, want := ip.ChecksumOK(), naiveChecksumOK(ip); ok != want {
			t.Fatalf("ChecksumOK %v, the sum by hand says %v", ok, want)
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

// naiveIPv4Err is ParseIPv4's verdict written out from RFC 791, check by check.
func naiveIPv4Err(b []byte) error {
	if len(b) < 20 {
		return ErrTruncated
	}
	version, ihl := int(b[0]>>4), int(b[0]&0x0f)
	total := int(b[2])*256 + int(b[3])
	switch {
	case version != 4, ihl < 5, total < ihl*4:
		return ErrBadHeader
	case total > len(b):
		return ErrTruncated
	}
	return nil
}

// naiveChecksumOK sums the header's 16-bit words with end-around carry (RFC 1071).
func naiveChecksumOK(ip []byte) bool {
	n := int(ip[0]&0x0f) * 4
	if n > len(ip) {
		return false
	}
	sum := 0
	for i := 0; i+1 < n; i += 2 {
		sum += int(ip[i])<<8 | int(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return sum == 0xffff
}
