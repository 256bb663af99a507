package ifstats

import "testing"

// TestAccumulator: counts start at the first reading, and a counter that goes down (reset by its
// driver) counts on from zero rather than going backwards.
func TestAccumulator(t *testing.T) {
	var a accumulator
	a.start(Counters{RxDropped: 100, TxDropped: 7, RxOtherhostDropped: 1})
	a.add(Counters{RxDropped: 130, TxDropped: 7, RxOtherhostDropped: 4})
	if a.sum != (Counters{RxDropped: 30, RxOtherhostDropped: 3}) {
		t.Fatalf("after one reading: %+v", a.sum)
	}
	a.add(Counters{RxDropped: 5, TxDropped: 9, RxOtherhostDropped: 4}) // rx_dropped reset to 0, then 5
	if a.sum != (Counters{RxDropped: 35, TxDropped: 2, RxOtherhostDropped: 3}) {
		t.Fatalf("after a reset: %+v", a.sum)
	}
}
