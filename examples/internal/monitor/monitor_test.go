package monitor

import (
	"bytes"
	"strings"
	"testing"
)

func TestGroup(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", 12345678901: "12,345,678,901"} {
		if got := Group(v); got != want {
			t.Errorf("Group(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestPrint(t *testing.T) {
	var rx, tx uint64
	m := New("test", []Row{{"eth0", func() uint64 { return rx }, func() uint64 { return tx }}})
	rx, tx = 1000, 500
	var buf bytes.Buffer
	m.Print(&buf)
	out := buf.String()
	if !strings.Contains(out, "eth0") || !strings.Contains(out, "total") || !strings.Contains(out, "Rx pkt/s") {
		t.Fatalf("table:\n%s", out)
	}
}
