package xmit

import (
	"reflect"
	"testing"
)

// TestStatsAdd: Add sums every field (a field added to Stats and forgotten in Add fails here).
func TestStatsAdd(t *testing.T) {
	var a, b, want Stats
	va, vb, vw := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem(), reflect.ValueOf(&want).Elem()
	for i := range va.NumField() {
		x, y := uint64(1+i), uint64(1000*(1+i))
		va.Field(i).SetUint(x)
		vb.Field(i).SetUint(y)
		vw.Field(i).SetUint(x + y)
	}
	if got := a.Add(b); got != want {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
}

// TestCountersStats: every Counters method shows in its own Stats field.
func TestCountersStats(t *testing.T) {
	var c Counters
	c.Rx(1, 2)
	c.RxDrop(3)
	c.Tx(4, 5)
	c.TxDrop(6)
	c.TxCopy(7)
	c.Error()
	c.TxLose(9)
	want := Stats{RxPackets: 1, RxBytes: 2, RxDropped: 3, TxPackets: 4, TxBytes: 5, TxDropped: 6, TxCopied: 7, Errors: 1, TxLost: 9}
	if got := c.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}
