package lacp

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// unhex reads hex digits, ignoring spaces, newlines and "|" comments to the end of a line.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var digits strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '|'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// layoutLACPDU is an LACPDU frame written by hand from 802.1AX-2008's figure 43-7 (LACPDU
// structure), one field a line: no encoder produced it.
const layoutLACPDU = `
01 80 c2 00 00 02   | destination: Slow_Protocols_Multicast
02 11 22 33 44 55   | source
88 09               | Slow_Protocols_Type
01                  | subtype: LACP
01                  | version 1
01 14               | TLV_type Actor_Information, Actor_Information_Length 20
80 00               | Actor_System_Priority 32768
00 1b 21 aa bb cc   | Actor_System
01 23               | Actor_Key 0x0123
00 ff               | Actor_Port_Priority 255
00 07               | Actor_Port 7
3d                  | Actor_State: activity, aggregation, synchronization, collecting, distributing
00 00 00            | reserved
02 14               | TLV_type Partner_Information, Partner_Information_Length 20
ff ff               | Partner_System_Priority 65535
00 00 5e 00 53 01   | Partner_System
45 67               | Partner_Key 0x4567
12 34               | Partner_Port_Priority 0x1234
ab cd               | Partner_Port 0xabcd
c2                  | Partner_State: timeout, defaulted, expired
00 00 00            | reserved
03 10               | TLV_type Collector_Information, Collector_Information_Length 16
00 05               | CollectorMaxDelay 5 (tens of microseconds)
00 00 00 00 00 00 00 00 00 00 00 00              | reserved (12)
00 00               | TLV_type Terminator, Terminator_Length 0
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  | reserved (50)
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
`

// layoutMarker is a Marker Information PDU frame written by hand from 802.3's figure 57-8
// (Marker PDU and Marker Response PDU structure).
const layoutMarker = `
01 80 c2 00 00 02   | destination
02 99 88 77 66 55   | source
88 09               | Slow_Protocols_Type
02                  | subtype: Marker
01                  | version 1
01 10               | TLV_type Marker_Information, Marker_Information_Length 16
00 2a               | Requester_Port 42
00 1b 21 aa bb cc   | Requester_System
fe dc ba 98         | Requester_Transaction_ID
00 00               | pad
00 00               | TLV_type Terminator, Terminator_Length 0
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  | reserved (90)
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
`

// TestLayoutVectors decodes frames laid out by hand from the standard's figures, field by field,
// and writes the decoded PDUs back byte for byte.
func TestLayoutVectors(t *testing.T) {
	t.Run("lacpdu", func(t *testing.T) {
		f := unhex(t, layoutLACPDU)
		if len(f) != FrameLen {
			t.Fatalf("vector is %d bytes, want %d", len(f), FrameLen)
		}
		var p PDU
		if err := DecodeFrame(f, &p); err != nil {
			t.Fatal(err)
		}
		want := PDU{Src: frame.MAC{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}, Subtype: SubtypeLACP, LACP: LACPDU{
			Version: 1,
			Actor: Info{SystemPriority: 0x8000, System: frame.MAC{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc}, Key: 0x0123,
				PortPriority: 0xff, Port: 7,
				State: StateActivity | StateAggregation | StateSync | StateCollecting | StateDistributing},
			Partner: Info{SystemPriority: 0xffff, System: frame.MAC{0x00, 0x00, 0x5e, 0x00, 0x53, 0x01}, Key: 0x4567,
				PortPriority: 0x1234, Port: 0xabcd, State: StateTimeout | StateDefaulted | StateExpired},
			CollectorMaxDelay: 5,
		}}
		if p != want {
			t.Fatalf("decoded\n%+v\nwant\n%+v", p, want)
		}
		out := make([]byte, FrameLen)
		if err := PutLACPFrame(out, p.Src, &p.LACP); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, f) {
			t.Fatalf("encoded\n%x\nwant\n%x", out, f)
		}
	})
	t.Run("marker", func(t *testing.T) {
		f := unhex(t, layoutMarker)
		if len(f) != FrameLen {
			t.Fatalf("vector is %d bytes, want %d", len(f), FrameLen)
		}
		var p PDU
		if err := DecodeFrame(f, &p); err != nil {
			t.Fatal(err)
		}
		want := PDU{Src: frame.MAC{0x02, 0x99, 0x88, 0x77, 0x66, 0x55}, Subtype: SubtypeMarker, Marker: Marker{
			Version: 1, RequesterPort: 42, RequesterSystem: frame.MAC{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc},
			TransactionID: 0xfedcba98,
		}}
		if p != want {
			t.Fatalf("decoded\n%+v\nwant\n%+v", p, want)
		}
		out := make([]byte, FrameLen)
		if err := PutMarkerFrame(out, p.Src, &p.Marker); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, f) {
			t.Fatalf("encoded\n%x\nwant\n%x", out, f)
		}
		// The response is the same PDU with TLV_type Marker_Response (2).
		p.Marker.Response = true
		PutMarkerFrame(out, p.Src, &p.Marker)
		f[frame.EtherLen+2] = 2
		if !bytes.Equal(out, f) {
			t.Fatalf("response encoded\n%x\nwant\n%x", out, f)
		}
	})
}
