package lacp

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// FuzzDecodeFrame: no input panics; DecodeFrame accepts exactly what the kernel-struct oracle
// accepts, reads the same fields, and what it decodes writes back to a frame that decodes the same
// (version 0 written as 1).
func FuzzDecodeFrame(f *testing.F) {
	for _, v := range readVectors(f, "testdata/ovs-lacpdu.txt") {
		f.Add(v)
	}
	m := make([]byte, FrameLen)
	PutMarkerFrame(m, frame.MAC{2, 0, 0, 0, 0, 9}, &Marker{RequesterPort: 2, RequesterSystem: frame.MAC{2, 0, 0, 0, 0, 8}, TransactionID: 0x01020304})
	f.Add(m)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 256 {
			b = b[:256]
		}
		var p PDU
		err := DecodeFrame(b, &p)
		if acc := oracleAccepts(b); (err == nil) != acc {
			t.Fatalf("DecodeFrame: %v, oracle accepts: %v", err, acc)
		}
		if err != nil {
			return
		}
		checkOracle(t, b, &p)
		out := make([]byte, FrameLen)
		var q PDU
		if p.Subtype == SubtypeLACP {
			PutLACPFrame(out, p.Src, &p.LACP)
		} else {
			PutMarkerFrame(out, p.Src, &p.Marker)
		}
		if p.Subtype == SubtypeLACP && p.LACP.Version == 0 {
			p.LACP.Version = Version // written as 1
		}
		if p.Subtype == SubtypeMarker && p.Marker.Version == 0 {
			p.Marker.Version = Version
		}
		if err := DecodeFrame(out, &q); err != nil || q != p {
			t.Fatalf("re-encoded: %v, %+v, want %+v", err, q, p)
		}
	})
}
