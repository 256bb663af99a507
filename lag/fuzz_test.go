package lag

import "testing"

// FuzzHash: no input panics, and every policy agrees with the naive kernel transcription.
func FuzzHash(f *testing.F) {
	for _, v := range hashVectors {
		f.Add(v.b, v.oob, v.tci)
	}
	f.Fuzz(func(t *testing.T, b []byte, oob bool, tci uint16) {
		for p := Layer2; p <= VLANSrcMAC; p++ {
			if got, want := HashBytes(p, b, oob, tci), oracleHash(p, b, oob, tci); got != want {
				t.Fatalf("policy %v: %#x, oracle %#x", p, got, want)
			}
		}
	})
}
