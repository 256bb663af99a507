package dsa

import (
	"testing"

	"github.com/wirespeed/wirespeed/internal/gocmd"
)

// TestNoPTPBuild runs this package's tests and dsarouter's again built with -tags dsa_noptp, where
// the PTP classifier is compiled out and EnableTimestamps returns ErrUnsupported.
func TestNoPTPBuild(t *testing.T) {
	out := gocmd.Run(t, nil, "test", "-short", "-count=1", "-tags", "dsa_noptp", ".", "../examples/dsarouter")
	t.Logf("%s", out)
}
