package monitor

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/xmit"
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
	if f1, f2 := strings.Fields(eth0), strings.Fields(total); len(f1) != 6 || len(f2) != 6 || f1[1] != f2[1] || f1[2] != f2[2] {
		t.Errorf("total %q is not eth0's %q", total, eth0)
	}
}

// TestPrintEveryStopsWithContext: PrintEvery returns once ctx ends (here while it prints a table:
// the second reading of the counter cancels it), having printed the tables until then.
func TestPrintEveryStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n uint64
	m := New("t", []Row{{Name: "x", Rx: func() uint64 {
		if n++; n == 2 {
			cancel()
		}
		return n
	}, Tx: func() uint64 { return 0 }}})
	var buf bytes.Buffer
	m.PrintEvery(ctx, &buf, 10*time.Millisecond)
	if ctx.Err() != context.Canceled {
		t.Fatalf("PrintEvery returned with ctx %v", ctx.Err())
	}
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

func TestBits(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 950: "950", 12345: "12.3k", 1250000: "1.25M", 9.87e9: "9.87G"} {
		if got := Bits(v); got != want {
			t.Errorf("Bits(%v) = %q, want %q", v, got, want)
		}
	}
}

// lines returns the table's lines that start with name (after the indent), by name.
func lines(out string) map[string][]string {
	m := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[0] != "iface" && !strings.HasPrefix(f[0], "(") {
			k := len(f) - 5
			m[strings.Join(f[:k], " ")] = append([]string{strings.Join(f[:k], " ")}, f[k:]...)
		}
	}
	return m
}

// TestBitsAndDrops: a port row shows bits per second from its byte counters and drops from its
// drop counters; rows with packet counts only show "-" there.
func TestBitsAndDrops(t *testing.T) {
	var s xmit.Stats
	var n uint64
	m := New("t", []Row{PortRow("eth0", func() xmit.Stats { return s }), {Name: "old", Rx: func() uint64 { return n }, Tx: func() uint64 { return n }}})
	s = xmit.Stats{RxPackets: 1000, RxBytes: 1e9, TxDropped: 3, RxDropped: 2, TxLost: 1, KernelRxDropped: 4}
	n = 10
	var buf bytes.Buffer
	m.Print(&buf)
	l := lines(buf.String())
	eth0, old := l["eth0"], l["old"]
	if eth0 == nil || old == nil || !strings.HasSuffix(eth0[3], "G") || eth0[4] != "0" || eth0[5] == "0" || old[3] != "-" || old[5] != "-" {
		t.Fatalf("table:\n%s", buf.String())
	}
}

// TestCompact: with many interfaces the table shows the ports and the Top busiest interfaces,
// and says how many it left out; Full shows them all; Worker rows only with PerWorker.
func TestCompact(t *testing.T) {
	counts := make([]uint64, 20)
	rows := []Row{PortRow("trunk", func() xmit.Stats { return xmit.Stats{} }), {Name: "worker 0", Worker: true, Counts: func() Counts { return Counts{} }}}
	for i := range counts {
		rows = append(rows, Row{Name: fmt.Sprintf("vlan%d", 101+i), Detail: true, Rx: func() uint64 { return counts[i] }, Tx: func() uint64 { return 0 }})
	}
	auto := New("t", rows)
	full := NewWith("t", rows, Options{View: Full, PerWorker: true})
	top := NewWith("t", rows, Options{View: Compact, Top: 2})
	counts[7], counts[3], counts[12] = 3e6, 2e6, 1e6
	var a, f, c bytes.Buffer
	auto.Print(&a)
	full.Print(&f)
	top.Print(&c)
	la, lf, lc := lines(a.String()), lines(f.String()), lines(c.String())
	if len(la) != 1+DefaultTop+1 || la["vlan108"] == nil || la["vlan104"] == nil || la["vlan113"] == nil || !strings.Contains(a.String(), "15 more interfaces") || la["worker 0"] != nil {
		t.Errorf("auto (compact):\n%s", a.String())
	}
	if len(lf) != 1+1+20+1 || !strings.Contains(f.String(), "     worker 0") || strings.Contains(f.String(), "more interfaces") {
		t.Errorf("full:\n%s", f.String())
	}
	if len(lc) != 1+2+1 || lc["vlan108"] == nil || lc["vlan104"] == nil || !strings.Contains(c.String(), "18 more interfaces") {
		t.Errorf("compact, top 2:\n%s", c.String())
	}
	if _, err := ParseView("wide"); err == nil {
		t.Error("ParseView(wide) succeeded")
	}
}

// TestStageDrops: the total line adds the stage's drops to the ports'.
func TestStageDrops(t *testing.T) {
	var d uint64
	m := NewWith("t", []Row{PortRow("eth0", func() xmit.Stats { return xmit.Stats{} })}, Options{StageDrops: func() uint64 { return d }})
	d = 1e9
	var buf bytes.Buffer
	m.Print(&buf)
	if l := lines(buf.String()); l["total"] == nil || l["total"][5] == "0" || l["eth0"][5] != "0" {
		t.Fatalf("table:\n%s", buf.String())
	}
}
