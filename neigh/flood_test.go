package neigh

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

func randomSender(rng *rand.Rand) (frame.MAC, netip.Addr) {
	var m frame.MAC
	for i := range m {
		m[i] = byte(rng.Uint32())
	}
	m[0] = m[0]&^1 | 2 // unicast, locally administered
	// 10.0.0.0/16, neither the network nor the broadcast address nor ours.
	a := netip.AddrFrom4([4]byte{10, 0, byte(rng.IntN(256)), byte(2 + rng.IntN(252))})
	return m, a
}

// TestFlood: 10,000 requests for our address from random senders keep the table within MaxEntries;
// the senders it has no room for are refused and counted, every request is answered, and the
// table still makes room for a next hop.
func TestFlood(t *testing.T) {
	const maxEntries = 256
	r := newRig(t, func(c *Config) {
		c.MaxEntries = maxEntries
		c.Ifaces[0].Addrs = []netip.Prefix{netip.MustParsePrefix("10.0.0.1/16")}
	})
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[netip.Addr]bool{}
	const total = 10000
	for sent := 0; sent < total; {
		var frames [][]byte
		for ; len(frames) < 64 && sent < total; sent++ {
			m, a := randomSender(rng)
			seen[a] = true
			frames = append(frames, arpBytes(t, 1, macBC, m, a, frame.MAC{}, own0))
		}
		r.input(0, frames...)
		if n := len(r.tab.Entries()); n > maxEntries {
			t.Fatalf("%d entries after %d requests", n, sent)
		}
		r.out.Free()
	}
	c := r.tab.Counters()
	if c.Requests != total || c.RepliesSent != total || c.Learned != maxEntries || c.Refused == 0 {
		t.Fatalf("counters %+v", c)
	}
	// Every request from a sender not in the table was either learned or refused.
	if c.Learned+c.Refused > total || c.Learned+c.Refused < uint64(len(seen)) {
		t.Fatalf("learned %d + refused %d for %d distinct senders", c.Learned, c.Refused, len(seen))
	}
	if r.rx.InUse() != 0 || r.pool.InUse() != 0 {
		t.Fatalf("buffers in use: %d input, %d table", r.rx.InUse(), r.pool.InUse())
	}

	// Unsolicited replies and gratuitous ARP from unknown senders create nothing.
	before := len(r.tab.Entries())
	for range 500 {
		m, a := randomSender(rng)
		if r.entry(0, a).State != StateNone {
			continue
		}
		r.input(0, arpBytes(t, 2, mac0, m, a, mac0, own0), arpBytes(t, 1, macBC, m, a, frame.MAC{}, a))
	}
	if n := len(r.tab.Entries()); n != before {
		t.Fatalf("%d entries after unsolicited ARP, %d before", n, before)
	}

	// A next hop evicts a learned entry.
	gw := netip.MustParseAddr("10.0.255.1")
	if err := r.tab.AddNextHop(1, 0, gw); err != nil {
		t.Fatal(err)
	}
	if e := r.entry(0, gw); e.State != StateIncomplete || len(r.tab.Entries()) != maxEntries {
		t.Fatalf("gateway %+v, %d entries", e, len(r.tab.Entries()))
	}
	if c := r.tab.Counters(); c.Evicted != 1 {
		t.Fatalf("counters %+v", c)
	}

	// GCStale later, the learned entries are gone; the next hop's stays.
	r.at(61 * time.Second)
	r.poll()
	r.out.Free()
	r.failed.Free()
	if e := r.tab.Entries(); len(e) != 1 || e[0].Addr != gw {
		t.Fatalf("%d entries after GCStale", len(e))
	}
}

// TestTableFull: when every entry is used by a next hop or static, AddNextHop and AddStatic fail
// with ErrTableFull and senders are refused.
func TestTableFull(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxEntries = 4 })
	for i := range 3 {
		if err := r.tab.AddNextHop(uint32(i), 0, netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.tab.AddStatic(0, hostN, macA); err != nil {
		t.Fatal(err)
	}
	if err := r.tab.AddNextHop(9, 0, hostM); !errors.Is(err, ErrTableFull) {
		t.Fatalf("AddNextHop on a full table: %v", err)
	}
	if err := r.tab.AddStatic(0, hostM, macA); !errors.Is(err, ErrTableFull) {
		t.Fatalf("AddStatic on a full table: %v", err)
	}
	r.requestFrom(0, macB, hostM, own0)
	if c := r.tab.Counters(); c.Refused != 1 || c.RepliesSent != 1 {
		t.Fatalf("counters %+v", c)
	}
	// A next hop on a neighbour already in the table needs no room.
	if err := r.tab.AddNextHop(9, 0, hostN); err != nil {
		t.Fatal(err)
	}
	r.drainOut()
}
