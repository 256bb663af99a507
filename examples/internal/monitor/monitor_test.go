package monitor

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
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
	m := New("test", []Row{{Name: "eth0", Rx: func() uint64 { return rx }, Tx: func() uint64 { return tx }}})
	rx, tx = 1000, 500
	var buf bytes.Buffer
	m.Print(&buf)
	out := buf.String()
	if !strings.Contains(out, "eth0") || !strings.Contains(out, "total") || !strings.Contains(out, "Rx pkt/s") {
		t.Fatalf("table:\n%s", out)
	}
}

func TestDetailRowsNotTotalled(t *testing.T) {
	var n uint64
	f := func() uint64 { return n }
	m := New("test", []Row{{Name: "eth0", Rx: f, Tx: f}, {Name: "eth0.5", Rx: f, Tx: f, Detail: true}})
	n = 1_000_000
	var buf bytes.Buffer
	m.Print(&buf)
	lines := strings.Split(buf.String(), "\n")
	var total, detail string
	for _, l := range lines {
		if strings.Contains(l, "total") {
			total = l
		}
		if strings.Contains(l, "eth0.5") {
			detail = l
		}
	}
	if !strings.Contains(detail, "   eth0.5") {
		t.Errorf("detail row not indented: %q", detail)
	}
	// One second or so passed at most, so eth0 alone is well above 1/10 of the doubled sum: check
	// that the total equals eth0's rate by comparing the formatted figures.
	var eth0 string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "eth0 ") {
			eth0 = l
		}
	}
	if f1, f2 := strings.Fields(eth0), strings.Fields(total); len(f1) != 4 || len(f2) != 4 || f1[1] != f2[1] || f1[3] != f2[3] {
		t.Errorf("total %q is not eth0's %q", total, eth0)
	}
}

func TestPrintEveryStopsWithContext(t *testing.T) {
	var n uint64
	m := New("t", []Row{{Name: "x", Rx: func() uint64 { n++; return n }, Tx: func() uint64 { return 0 }}})
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Millisecond)
	defer cancel()
	m.PrintEvery(ctx, &buf, 10*time.Millisecond)
	if c := strings.Count(buf.String(), "total"); c < 1 {
		t.Fatalf("printed %d tables", c)
	}
}

// TestPrintEveryNonPositive: an interval of zero or less prints no table and returns when ctx ends,
// never a panic.
func TestPrintEveryNonPositive(t *testing.T) {
	m := New("t", []Row{{Name: "x", Rx: func() uint64 { return 0 }, Tx: func() uint64 { return 0 }}})
	for _, d := range []time.Duration{0, -time.Second} {
		var buf bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		m.PrintEvery(ctx, &buf, d)
		cancel()
		if buf.Len() != 0 {
			t.Errorf("interval %v printed:\n%s", d, buf.String())
		}
	}
}
