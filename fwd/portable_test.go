package fwd

import (
	"testing"

	"github.com/wirespeed/wirespeed/internal/gocmd"
)

// TestPortable runs this package's tests again built with -tags fwd_portable, where the straight
// lines read their words through endian_be.go's forms (right on any machine) instead of the
// little-endian constants, so the forms big-endian machines run are tested here.
func TestPortable(t *testing.T) {
	t.Logf("%s", gocmd.Run(t, nil, "test", "-short", "-count=1", "-tags", "fwd_portable", "."))
}
