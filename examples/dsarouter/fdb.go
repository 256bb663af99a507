package main

// fdb is the LAN bridge's forwarding database: MAC address -> switch port, learnt from the source
// address of every frame that arrives on a LAN port (a host that moves to another port is
// re-learnt from its next frame). It is a fixed-size open-addressing table of plain integers:
// no map, no pointer, no allocation after newFDB, a few ns per lookup. Entries do not age; when
// every slot of a key's probe window is taken the address is not learnt (and its frames are
// dropped as fdb-miss until a slot frees, which in this example never happens: 16 hosts, 256
// slots).
//
// An fdb belongs to one goroutine (the data plane's); it is not safe for concurrent use.
type fdb struct {
	keys  []uint64 // MAC in the low 48 bits, bit 48 set: slot used
	ports []uint16
	mask  uint64
	n     int
}

const (
	fdbUsed  = 1 << 48
	fdbProbe = 8
)

// newFDB returns a table of at least capacity slots (a power of two, at least fdbProbe).
func newFDB(capacity int) fdb {
	n := fdbProbe
	for n < capacity {
		n <<= 1
	}
	return fdb{keys: make([]uint64, n), ports: make([]uint16, n), mask: uint64(n - 1)}
}

func macKey(m []byte) uint64 {
	_ = m[5]
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5]) | fdbUsed
}

func (t *fdb) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> 32 & t.mask }

// learn records that the frame with source address m[0:6] came in on port. Group addresses
// (a multicast bit in the source: invalid) are not learnt.
func (t *fdb) learn(m []byte, port uint16) {
	if m[0]&1 != 0 {
		return
	}
	k := macKey(m)
	s := t.slot(k)
	for i := 0; i < fdbProbe; i++ {
		j := (s + uint64(i)) & t.mask
		switch t.keys[j] {
		case k:
			t.ports[j] = port
			return
		case 0:
			t.keys[j], t.ports[j] = k, port
			t.n++
			return
		}
	}
}

// lookup returns the port learnt for destination m[0:6].
func (t *fdb) lookup(m []byte) (uint16, bool) {
	k := macKey(m)
	s := t.slot(k)
	for i := 0; i < fdbProbe; i++ {
		j := (s + uint64(i)) & t.mask
		switch t.keys[j] {
		case k:
			return t.ports[j], true
		case 0:
			return 0, false
		}
	}
	return 0, false
}
