package main

import "sync/atomic"

// fdb is the LAN bridge's forwarding database: MAC address -> switch port, learnt from the source
// address of every frame that arrives on a LAN port (a host that moves to another port is
// re-learnt from its next frame). It is a fixed-size open-addressing table of words, one per
// slot, shared by every worker: a lookup is one atomic load per probed slot (a plain load on
// amd64 and arm64), and learning writes only when an address is new or has moved, so workers
// that keep seeing the same hosts never write to it. No map, no pointer, no allocation after
// newFDB. Entries do not age and are never removed; when every slot of a key's probe window is
// taken the address is not learnt (and its frames are dropped as fdb-miss; in this example 16
// hosts share 256 slots).
//
// Safe for concurrent use by any number of goroutines.
type fdb struct {
	slots []atomic.Uint64 // 0: free; else MAC<<16 | fdbUsed | port
	mask  uint64
	n     atomic.Int64 // addresses learnt
}

const (
	fdbUsed  = 1 << 8
	fdbProbe = 8
)

// newFDB returns a table of at least capacity slots (a power of two, at least fdbProbe).
func newFDB(capacity int) *fdb {
	n := fdbProbe
	for n < capacity {
		n <<= 1
	}
	return &fdb{slots: make([]atomic.Uint64, n), mask: uint64(n - 1)}
}

// mac48 reads a MAC address as a 48-bit integer.
func mac48(m []byte) uint64 {
	_ = m[5]
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

func (t *fdb) slot(mac uint64) uint64 { return ((mac | 1<<48) * 0x9e3779b97f4a7c15) >> 32 & t.mask }

// learn records that the frame with source address m[0:6] came in on port (0-255). Group
// addresses (a multicast bit in the source: invalid) are not learnt.
func (t *fdb) learn(m []byte, port uint16) {
	if m[0]&1 != 0 {
		return
	}
	mac := mac48(m)
	e := mac<<16 | fdbUsed | uint64(port&0xff)
	s := t.slot(mac)
	for i := uint64(0); i < fdbProbe; i++ {
		sl := &t.slots[(s+i)&t.mask]
		for {
			v := sl.Load()
			if v == 0 {
				if !sl.CompareAndSwap(0, e) {
					continue // another worker took the slot: look at what it wrote
				}
				t.n.Add(1)
				return
			}
			if v>>16 != mac {
				break // another address: the next slot
			}
			if v != e {
				sl.Store(e) // moved
			}
			return
		}
	}
}

// lookup returns the port learnt for destination m[0:6].
func (t *fdb) lookup(m []byte) (uint16, bool) {
	mac := mac48(m)
	s := t.slot(mac)
	for i := uint64(0); i < fdbProbe; i++ {
		v := t.slots[(s+i)&t.mask].Load()
		if v == 0 {
			return 0, false
		}
		if v>>16 == mac {
			return uint16(v & 0xff), true
		}
	}
	return 0, false
}

// len is the number of addresses learnt.
func (t *fdb) len() int { return int(t.n.Load()) }
