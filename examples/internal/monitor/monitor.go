// Package monitor prints bwm-ng-style per-interface packet rates for the wirespeed examples.
package monitor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Row is one interface: a name and functions returning its cumulative received and transmitted
// packet counts. A Detail row (a logical interface on a port, a member of an aggregate) is shown
// indented and left out of the total, which would otherwise count its packets twice.
type Row struct {
	Name   string
	Rx, Tx func() uint64
	Detail bool
}

// Monitor remembers the last counts of its rows and prints rates since then.
type Monitor struct {
	rows  []Row
	last  [][2]uint64
	at    time.Time
	title string
}

// New returns a monitor over rows; title heads every table.
func New(title string, rows []Row) *Monitor {
	m := &Monitor{rows: rows, last: make([][2]uint64, len(rows)), at: time.Now(), title: title}
	for i, r := range rows {
		m.last[i] = [2]uint64{r.Rx(), r.Tx()}
	}
	return m
}

// Print writes one table of rates since the previous call (or since New).
func (m *Monitor) Print(w io.Writer) {
	now := time.Now()
	sec := now.Sub(m.at).Seconds()
	if sec <= 0 {
		sec = 1e-9
	}
	m.at = now
	width := 10
	for _, r := range m.rows {
		width = max(width, len(r.Name)+1)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s  (%.2f s)\n", m.title, sec)
	fmt.Fprintf(&sb, "  %-*s %14s %14s %14s\n", width, "iface", "Rx pkt/s", "Tx pkt/s", "Total pkt/s")
	var trx, ttx float64
	for i, r := range m.rows {
		rx, tx := r.Rx(), r.Tx()
		drx, dtx := float64(rx-m.last[i][0])/sec, float64(tx-m.last[i][1])/sec
		m.last[i] = [2]uint64{rx, tx}
		name := r.Name
		if r.Detail {
			name = " " + name
		} else {
			trx += drx
			ttx += dtx
		}
		fmt.Fprintf(&sb, "  %-*s %14s %14s %14s\n", width, name, Group(drx), Group(dtx), Group(drx+dtx))
	}
	fmt.Fprintf(&sb, "  %s\n", strings.Repeat("-", width+45))
	fmt.Fprintf(&sb, "  %-*s %14s %14s %14s\n\n", width, "total", Group(trx), Group(ttx), Group(trx+ttx))
	io.WriteString(w, sb.String())
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
