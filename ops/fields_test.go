package ops

import (
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

// The counters that no series exports on its own because they are sums of series that are
// exported: neigh.Counters documents ARPIn as the sum of the ARP outcomes
// (wirespeed_neigh_arp_received_total by result) and HoldIn as the sum of the hold outcomes
// (wirespeed_neigh_hold_total by result).
var derived = map[string]bool{"neigh.Counters.ARPIn": true, "neigh.Counters.HoldIn": true}

// fill sets every uint64 of the struct *p (arrays of uint64 included) to a distinct power of
// two, from 2^first on, and returns the path of each value set.
func fill(t *testing.T, p any, first int) map[float64]string {
	t.Helper()
	v := reflect.ValueOf(p).Elem()
	typ := v.Type()
	name := typ.String()
	set := map[float64]string{}
	bit := first
	put := func(f reflect.Value, path string) {
		if bit > 52 {
			t.Fatalf("%s has too many fields for distinct float64 powers of two", name)
		}
		f.SetUint(1 << bit)
		set[float64(uint64(1)<<bit)] = path
		bit++
	}
	for i := range typ.NumField() {
		f, sf := v.Field(i), typ.Field(i)
		path := name + "." + sf.Name
		switch {
		case f.Kind() == reflect.Uint64:
			put(f, path)
		case f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Uint64:
			for j := range f.Len() {
				put(f.Index(j), path)
			}
		default:
			t.Fatalf("%s is a %v: the test knows uint64 fields and arrays of them", path, f.Type())
		}
	}
	return set
}

// collected runs collect and returns the value of every series it sends, with the series' name
// and labels.
func collected(t *testing.T, collect func(chan<- prometheus.Metric)) map[float64][]string {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() { collect(ch); close(ch) }()
	got := map[float64][]string{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		v := pb.GetCounter().GetValue() + pb.GetGauge().GetValue()
		series := m.Desc().String()
		for _, l := range pb.GetLabel() {
			series += " " + l.GetName() + "=" + l.GetValue()
		}
		got[v] = append(got[v], series)
	}
	return got
}

// check reports each field of set that no series carries, and each series that carries more
// than one field.
func check(t *testing.T, set map[float64]string, got map[float64][]string) {
	t.Helper()
	for v, path := range set {
		series := got[v]
		switch {
		case derived[path]:
			if len(series) != 0 {
				t.Errorf("%s, listed as derived, is exported: %v", path, series)
			}
		case len(series) == 0:
			t.Errorf("%s is in no series", path)
		case len(series) > 1:
			t.Errorf("%s is in %d series: %v", path, len(series), series)
		}
	}
}

// TestEveryCounterExported: every counter of xmit.Stats, fwd.Counters (each drop reason) and
// neigh.Counters is the value of exactly one series, so a field added to one of them without a
// series fails here. Each field is set to its own power of two; a series that adds fields up
// (wirespeed_fwd_frames_total{verdict="dropped"}) matches none of them.
func TestEveryCounterExported(t *testing.T) {
	for name := range derived {
		typ, field, _ := strings.Cut(strings.TrimPrefix(name, "neigh."), ".")
		if typ != "Counters" {
			t.Fatalf("derived %s: not a neigh.Counters field", name)
		}
		if _, ok := reflect.TypeFor[neigh.Counters]().FieldByName(field); !ok {
			t.Errorf("derived %s: neigh.Counters has no such field", name)
		}
	}

	var s xmit.Stats
	set := fill(t, &s, 0)
	c := NewCollector(&Source{Ports: []Port{{Name: "p", Stats: func() xmit.Stats { return s }}}})
	check(t, set, collected(t, c.Collect))

	var k fwd.Counters
	set = fill(t, &k, 0)
	check(t, set, collected(t, func(ch chan<- prometheus.Metric) { collectFwdCounters(ch, k) }))

	var n neigh.Counters
	set = fill(t, &n, 0)
	check(t, set, collected(t, func(ch chan<- prometheus.Metric) { collectNeighCounters(ch, n) }))
}
