// Package monitor prints bwm-ng-style per-interface rates for the wirespeed examples: packets,
// bits and drops per second, in a compact table (the physical ports and the busiest logical
// interfaces) or a full one (every interface), with each worker's share on request.
package monitor

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/xmit"
)

// Counts are a row's cumulative counters.
type Counts struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	Drops                uint64 // frames dropped at this row: refused, lost or dropped by the kernel
}

// Row is one line of the table: a name and either Counts (packets, bytes and drops) or Rx and Tx
// (packets only; the bit and drop columns then show "-").
//
// A Detail row (a logical interface on a port, a member of an aggregate) is shown indented and
// left out of the total, which would otherwise count its packets twice; a compact table shows
// only the busiest. A Worker row (one worker's share of the row above it) is shown only with
// Options.PerWorker, indented under its row, and left out of the total.
type Row struct {
	Name   string
	Counts func() Counts
	Rx, Tx func() uint64
	Detail bool
	Worker bool
	// NoDrops says the row's counters have no drops: the drop column shows "-".
	NoDrops bool
}

func (r *Row) read() (Counts, bool) {
	if r.Counts != nil {
		return r.Counts(), true
	}
	return Counts{RxPackets: r.Rx(), TxPackets: r.Tx()}, false
}

// PortRow is the row of a port whose counters stats reads: packets, bytes, and as drops the
// frames it dropped on receive and transmit, lost after transmission, and the kernel's drops
// below it (xmit.Stats's Kernel fields).
func PortRow(name string, stats func() xmit.Stats) Row {
	return Row{Name: name, Counts: func() Counts {
		s := stats()
		return Counts{RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			Drops: s.RxDropped + s.TxDropped + s.TxLost + s.KernelRxDropped + s.KernelTxDropped}
	}}
}

// WorkerRow is the row of one worker's queue of a port (a Worker row): its own counters, without
// the kernel's, which are the whole interface's.
func WorkerRow(worker int, q xmit.Port) Row {
	return Row{Name: fmt.Sprintf("worker %d", worker), Worker: true, Counts: func() Counts {
		s := q.Stats()
		return Counts{RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			Drops: s.RxDropped + s.TxDropped + s.TxLost}
	}}
}

// View is the shape of the table.
type View string

// Views.
const (
	Auto    View = "auto"    // Compact when there are more than AutoCompact Detail rows, else Full
	Compact View = "compact" // every row but the Detail ones, and the Top busiest Detail rows
	Full    View = "full"    // every row
)

// DefaultTop is how many Detail rows a compact table shows by default.
const DefaultTop = 5

// AutoCompact is the most Detail rows an Auto table shows in full.
const AutoCompact = 8

// ParseView checks a view's name ("" is Auto).
func ParseView(s string) (View, error) {
	switch v := View(s); v {
	case "":
		return Auto, nil
	case Auto, Compact, Full:
		return v, nil
	}
	return "", fmt.Errorf("unknown view %q (auto, compact, full)", s)
}

// Options shape the table.
type Options struct {
	View      View // "": Auto
	Top       int  // Detail rows a compact table shows; 0: DefaultTop
	PerWorker bool // show the Worker rows
	// StageDrops, if set, reads the frames the forwarding stage dropped; the total line adds
	// their rate to the ports' drops.
	StageDrops func() uint64
}

// Monitor remembers the last counts of its rows and prints rates since then.
type Monitor struct {
	rows      []Row
	last      []Counts
	lastStage uint64
	at        time.Time
	title     string
	opt       Options
	compact   bool
}

// New returns a monitor over rows with the default options; title heads every table.
func New(title string, rows []Row) *Monitor { return NewWith(title, rows, Options{}) }

// NewWith returns a monitor over rows shaped by o.
func NewWith(title string, rows []Row, o Options) *Monitor {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	m := &Monitor{rows: rows, last: make([]Counts, len(rows)), at: time.Now(), title: title, opt: o}
	details := 0
	for i := range rows {
		m.last[i], _ = rows[i].read()
		if rows[i].Detail {
			details++
		}
	}
	if o.StageDrops != nil {
		m.lastStage = o.StageDrops()
	}
	switch o.View {
	case Compact:
		m.compact = true
	case Full:
	default:
		m.compact = details > AutoCompact
	}
	return m
}

// rate is one row's rates over the interval.
type rate struct {
	rxp, txp, rxb, txb, drops float64
	bytes                     bool // the row has byte and drop counts
	noDrops                   bool // but no drop counts
}

// Print writes one table of rates since the previous call (or since New).
func (m *Monitor) Print(w io.Writer) {
	now := time.Now()
	sec := now.Sub(m.at).Seconds()
	if sec <= 0 {
		sec = 1e-9
	}
	m.at = now
	rates := make([]rate, len(m.rows))
	for i := range m.rows {
		c, full := m.rows[i].read()
		l := m.last[i]
		rates[i] = rate{rxp: float64(c.RxPackets-l.RxPackets) / sec, txp: float64(c.TxPackets-l.TxPackets) / sec,
			rxb: float64(c.RxBytes-l.RxBytes) * 8 / sec, txb: float64(c.TxBytes-l.TxBytes) * 8 / sec,
			drops: float64(c.Drops-l.Drops) / sec, bytes: full, noDrops: m.rows[i].NoDrops}
		m.last[i] = c
	}
	show := m.shown(rates)
	width := 10
	for i, r := range m.rows {
		if show[i] {
			width = max(width, len(indent(r))+len(r.Name))
		}
	}
	var sb strings.Builder
	shape := "full"
	if m.compact {
		shape = "compact"
	}
	fmt.Fprintf(&sb, "%s  (%.2f s, %s)\n", m.title, sec, shape)
	line := func(name string, r rate) {
		fmt.Fprintf(&sb, "  %-*s %13s %13s %10s %10s %10s\n", width, name, Group(r.rxp), Group(r.txp), bitsOr(r.rxb, r.bytes), bitsOr(r.txb, r.bytes), dropsOr(r.drops, r.bytes && !r.noDrops))
	}
	fmt.Fprintf(&sb, "  %-*s %13s %13s %10s %10s %10s\n", width, "iface", "Rx pkt/s", "Tx pkt/s", "Rx bit/s", "Tx bit/s", "drop/s")
	var total rate
	total.bytes = true
	hidden := 0
	for i, r := range m.rows {
		if !r.Detail && !r.Worker {
			x := rates[i]
			total.rxp += x.rxp
			total.txp += x.txp
			total.rxb += x.rxb
			total.txb += x.txb
			total.drops += x.drops
			total.bytes = total.bytes && x.bytes
		}
		if !show[i] {
			if r.Detail {
				hidden++
			}
			continue
		}
		line(indent(r)+r.Name, rates[i])
	}
	if hidden > 0 {
		fmt.Fprintf(&sb, "  (%d more interfaces, less busy: -view full lists them)\n", hidden)
	}
	fmt.Fprintf(&sb, "  %s\n", strings.Repeat("-", width+63))
	if m.opt.StageDrops != nil {
		d := m.opt.StageDrops()
		total.drops += float64(d-m.lastStage) / sec
		m.lastStage = d
	}
	line("total", total)
	sb.WriteString("\n")
	io.WriteString(w, sb.String())
}

// indent is the indent of r's name: a Detail row's one space, a Worker row's four.
func indent(r Row) string {
	switch {
	case r.Worker:
		return "    "
	case r.Detail:
		return " "
	}
	return ""
}

// shown says which rows the table shows: in full every row (Worker rows with PerWorker); compact,
// every row but the Detail ones, and the Top busiest Detail rows of the interval.
func (m *Monitor) shown(rates []rate) []bool {
	show := make([]bool, len(m.rows))
	var details []int
	for i, r := range m.rows {
		switch {
		case r.Worker:
			show[i] = m.opt.PerWorker
		case r.Detail:
			show[i] = !m.compact
			details = append(details, i)
		default:
			show[i] = true
		}
	}
	if m.compact {
		slices.SortStableFunc(details, func(a, b int) int {
			ra, rb := rates[a].rxp+rates[a].txp, rates[b].rxp+rates[b].txp
			switch {
			case ra > rb:
				return -1
			case ra < rb:
				return 1
			}
			return 0
		})
		for _, i := range details[:min(m.opt.Top, len(details))] {
			show[i] = true
		}
	}
	return show
}

func bitsOr(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return Bits(v)
}

func dropsOr(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return Group(v)
}

// Bits formats a rate in bits per second with an SI prefix: 950, 12.3k, 1.25M, 9.87G.
func Bits(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Group formats v as an integer with thousands separators.
func Group(v float64) string {
	n := uint64(v + 0.5)
	s := fmt.Sprint(n)
	var b []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// PrintEvery prints a table every interval until ctx ends (it blocks until then). An interval of
// zero or less prints nothing: PrintEvery only waits for ctx.
func (m *Monitor) PrintEvery(ctx context.Context, w io.Writer, interval time.Duration) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.Print(w)
		}
	}
}
