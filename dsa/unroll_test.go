package dsa

import (
	"bytes"
	"os"
	"testing"

	"github.com/wirespeed/wirespeed/dsa/internal/unroll"
)

// TestUnrolled: batch_x4.go is what internal/unroll makes of batch.go and the tag_*.go files
// (go generate ./dsa rewrites it).
func TestUnrolled(t *testing.T) {
	srcs, err := unroll.PackageSources(".")
	if err != nil {
		t.Fatal(err)
	}
	want, err := unroll.BatchLoops(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("batch_x4.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("batch_x4.go is stale: run go generate ./dsa")
	}
}
