package ifstats

import "unsafe"

var _ [numCounters * 8]byte = [unsafe.Sizeof(Counters{})]byte{}

func toPtr(c *Counters) unsafe.Pointer { return unsafe.Pointer(c) }
