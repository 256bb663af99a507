package trunkgen

import (
	"strings"
	"testing"
)

func TestResultReport(t *testing.T) {
	r := Result{Generated: 10, RouterRx: 10, Forwarded: 8, RouterTx: 8, Sunk: 8}
	r.Drops.Drops[0] = 2
	var b strings.Builder
	r.Report(&b, "extra line")
	if !r.Balanced() || !strings.Contains(b.String(), "accounting: ok") || !strings.Contains(b.String(), "  extra line\n") {
		t.Fatalf("balanced result reported as:\n%s", b.String())
	}
	r.Leaked = 1
	b.Reset()
	r.Report(&b)
	if r.Balanced() || !strings.Contains(b.String(), "MISMATCH") {
		t.Fatalf("a leaked buffer not reported:\n%s", b.String())
	}
}
