package lag

import (
	"bytes"
	"os"
	"testing"

	"github.com/wirespeed/wirespeed/lag/internal/unroll"
)

// TestUnrolled: xor_unrolled.go is what internal/unroll makes of xor.go (go generate ./lag rewrites
// it).
func TestUnrolled(t *testing.T) {
	src, err := os.ReadFile("xor.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := unroll.Unrolled(src, unroll.Loops, unroll.Factor)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("xor_unrolled.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("xor_unrolled.go is stale: run go generate ./lag")
	}
}
