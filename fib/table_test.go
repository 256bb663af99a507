package fib

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/wirespeed/wirespeed/internal/race"
)

// checkAgainst compares every lookup path of t with ref on the probes.
func checkAgainst(t *testing.T, tb *Table, ref *refLPM, ps []uint32) {
	t.Helper()
	out := make([]uint32, len(ps))
	tb.LookupBatch(ps, out)
	// In place: out is the input slice itself.
	inPlace := slices.Clone(ps)
	tb.LookupBatch(inPlace, inPlace)
	bad := 0
	if s := tb.cur.Load(); s != nil { // lookup32's Go form, which lookupStages replaces where it can
		for i := 0; i+batchLanes <= len(ps); i += batchLanes {
			var o [batchLanes]uint32
			s.lookup32Go((*[batchLanes]uint32)(ps[i:]), &o)
			for j, got := range o {
				if want, _ := ref.lookup(ps[i+j]); got != want && bad < 10 {
					t.Errorf("lookup32Go(%v) = %d; want %d", u32ToAddr(ps[i+j]), got, want)
					bad++
				}
			}
		}
	}
	for i, a := range ps {
		want, wok := ref.lookup(a)
		got, ok := tb.LookupU32(a)
		if got != want || ok != wok {
			t.Errorf("LookupU32(%v) = %d,%v; want %d,%v", u32ToAddr(a), got, ok, want, wok)
			bad++
		}
		got2, ok2 := tb.Lookup(u32ToAddr(a))
		if got2 != want || ok2 != wok {
			t.Errorf("Lookup(%v) = %d,%v; want %d,%v", u32ToAddr(a), got2, ok2, want, wok)
			bad++
		}
		if out[i] != want {
			t.Errorf("LookupBatch[%d](%v) = %d; want %d", i, u32ToAddr(a), out[i], want)
			bad++
		}
		if inPlace[i] != want {
			t.Errorf("LookupBatch(a, a)[%d](%v) = %d; want %d", i, u32ToAddr(a), inPlace[i], want)
			bad++
		}
		if bad > 10 {
			t.Fatal("too many mismatches")
		}
	}
	if tb.Len() != ref.len() {
		t.Fatalf("Len = %d, reference has %d", tb.Len(), ref.len())
	}
}

func TestSyntheticTableMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nhs := range []uint32{1, 16, MaxNextHop + 1} {
		routes := synthTable(rng, 60000, nhs)
		var tb Table
		if err := tb.Replace(routes); err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, &tb, refFrom(routes), probes(rng, routes, 100000))
	}
}

// TestLookup32Forms: lookup32 and lookupChunks (lookupStages where the CPU has it) and lookup32Go
// give the reference's answers on tables whose walks end in the dp array, at the first level, with
// and without children, and below it, in every lane position.
func TestLookup32Forms(t *testing.T) {
	t.Logf("lookupStages in use: %v", useStagesAsm)
	rng := rand.New(rand.NewPCG(7, 8))
	lv := [4]int{}
	for it := range 12 {
		routes := randomTable(rng, []int{50, 500, 3000}[it%3], uint32(1+rng.IntN(200)), it%2 == 0)
		for range 200 { // long prefixes inside a few /18s: first-level nodes with children, deep walks
			a := 0x0A000000 | uint32(rng.IntN(4))<<14 | rng.Uint32()&0x3FFF
			l := 19 + rng.IntN(14)
			routes = append(routes, Route{netip.PrefixFrom(u32ToAddr(a), l).Masked(), uint32(rng.IntN(100))})
		}
		var tb Table
		if err := tb.Replace(routes); err != nil {
			t.Fatal(err)
		}
		ref := refFrom(routes)
		s := tb.cur.Load()
		ps := probes(rng, routes, 4096)
		for i := range 1024 {
			ps = append(ps, 0x0A000000|uint32(i*61)&0xFFFF)
		}
		ps = ps[:len(ps)/batchLanes*batchLanes]
		for i := 0; i < len(ps); i += batchLanes {
			in := (*[batchLanes]uint32)(ps[i:])
			var asm, gof [batchLanes]uint32
			s.lookup32(in, &asm)
			s.lookup32Go(in, &gof)
			for j := range batchLanes {
				want, _ := ref.lookup(in[j])
				if asm[j] != want || gof[j] != want {
					t.Fatalf("%v: lookup32 %d, lookup32Go %d; want %d", u32ToAddr(in[j]), asm[j], gof[j], want)
				}
				lv[min(s.levels(in[j]), 3)]++
			}
		}
		// All the chunks in one call, out of place and in place: the assembly goes on from chunk
		// to chunk and returns after each one with deep lanes.
		all, inPlace := make([]uint32, len(ps)), slices.Clone(ps)
		s.lookupChunks(ps, all)
		s.lookupChunks(inPlace, inPlace)
		for j, a := range ps {
			if want, _ := ref.lookup(a); all[j] != want || inPlace[j] != want {
				t.Fatalf("%v (address %d of %d): lookupChunks %d, in place %d; want %d", u32ToAddr(a), j, len(ps), all[j], inPlace[j], want)
			}
		}
	}
	t.Logf("walks ending in the dp array, the first level, the second, deeper: %v", lv)
	for i, n := range lv {
		if n == 0 {
			t.Errorf("no walk ends at level %d: %v", i, lv)
		}
	}
}

func TestRandomTablesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rounds := 28
	if race.Enabled { // sequential equivalence: the detector adds time, not coverage
		rounds = 7
	}
	for it := range rounds {
		n := []int{0, 1, 2, 10, 100, 1000, 5000}[it%7]
		routes := randomTable(rng, n, uint32(1+rng.IntN(20)), it%2 == 0)
		ref := refFrom(routes)
		ps := probes(rng, routes, 2000)
		for i := range 2000 { // dense probes in the narrow window
			ps = append(ps, 0x0A000000|uint32(i*131)&0x0003FFFF)
		}
		// Built in bulk.
		var bulk Table
		if err := bulk.Replace(routes); err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, &bulk, ref, ps)
		// Built by single inserts.
		inc := New()
		for _, r := range routes {
			if err := inc.Insert(r.Prefix, r.NextHop); err != nil {
				t.Fatal(err)
			}
		}
		checkAgainst(t, inc, ref, ps)
		if !slices.Equal(bulk.Routes(), inc.Routes()) {
			t.Fatal("Routes differ between bulk and incremental build")
		}
	}
}

func TestChurnMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	routes := synthTable(rng, 30000, 64)
	ref := refFrom(routes)
	tb := New()
	if err := tb.Replace(routes); err != nil {
		t.Fatal(err)
	}
	base := probes(rng, routes, 5000)
	live := slices.Clone(routes)
	s := newSampler(realLenWeights)
	rounds := 60
	if race.Enabled {
		rounds = 15
	}
	for round := range rounds {
		var changes []Change
		var touched []uint32
		for range 1 + rng.IntN(300) {
			if rng.IntN(2) == 0 && len(live) > 0 {
				i := rng.IntN(len(live))
				r := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				a, l, _ := prefixKey(r.Prefix)
				ref.delete(a, l)
				changes = append(changes, Change{Prefix: r.Prefix, Delete: true})
				touched = append(touched, a, a|^maskOf(l), a|rng.Uint32()&^maskOf(l))
				continue
			}
			l := s.draw(rng)
			if rng.IntN(50) == 0 {
				l = rng.IntN(33)
			}
			a := rng.Uint32() & maskOf(l)
			if len(live) > 0 && rng.IntN(2) == 0 { // near an existing route
				b, _, _ := prefixKey(live[rng.IntN(len(live))].Prefix)
				a = (b | rng.Uint32()&0xFF) & maskOf(l)
			}
			nh := rng.Uint32N(64)
			ref.insert(a, l, nh)
			live = append(live, Route{pfx(a, l), nh})
			changes = append(changes, Change{Prefix: pfx(a, l), NextHop: nh})
			touched = append(touched, a, a|^maskOf(l), a|rng.Uint32()&^maskOf(l))
		}
		if round%3 == 0 { // single updates
			for _, c := range changes {
				var err error
				if c.Delete {
					err = tb.Delete(c.Prefix)
				} else {
					err = tb.Insert(c.Prefix, c.NextHop)
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Fatal(err)
				}
			}
		} else if err := tb.Apply(changes); err != nil {
			t.Fatal(err)
		}
		live = live[:0]
		for l, m := range ref.m {
			for a, nh := range m {
				live = append(live, Route{pfx(a, l), nh})
			}
		}
		slices.SortFunc(live, func(x, y Route) int { // deterministic order for the rng
			if c := x.Prefix.Addr().Compare(y.Prefix.Addr()); c != 0 {
				return c
			}
			return x.Prefix.Bits() - y.Prefix.Bits()
		})
		checkAgainst(t, tb, ref, append(touched, base[rng.IntN(len(base)/2):][:len(base)/2]...))
	}
	if !slices.Equal(tb.Routes(), sortedRoutes(live)) {
		t.Fatal("Routes() differs from the reference")
	}
	// A full rebuild gives the same answers.
	var fresh Table
	if err := fresh.Replace(tb.Routes()); err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, &fresh, ref, base)
}

func sortedRoutes(rs []Route) []Route {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y Route) int {
		if c := x.Prefix.Addr().Compare(y.Prefix.Addr()); c != 0 {
			return c
		}
		return x.Prefix.Bits() - y.Prefix.Bits()
	})
	return rs
}

// TestCompaction drives enough churn that dead space is reclaimed by a rebuild, and checks that the
// arrays then shrink while answers stay right.
func TestCompaction(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	routes := synthTable(rng, 20000, 8)
	ref := refFrom(routes)
	tb := New()
	if err := tb.Replace(routes); err != nil {
		t.Fatal(err)
	}
	start := tb.Stats()
	maxNodes := 0
	for i := range 80000 {
		r := routes[rng.IntN(len(routes))]
		nh := uint32(i % 8)
		if err := tb.Insert(r.Prefix, nh); err != nil {
			t.Fatal(err)
		}
		a, l, _ := prefixKey(r.Prefix)
		ref.insert(a, l, nh)
		maxNodes = max(maxNodes, tb.Stats().Nodes)
		if i%4000 == 0 {
			checkDeadBytes(t, tb)
		}
	}
	end := tb.Stats()
	if maxNodes < 2*start.Nodes || end.Nodes >= maxNodes {
		t.Fatalf("no compaction seen: nodes start %d, max %d, end %d", start.Nodes, maxNodes, end.Nodes)
	}
	checkAgainst(t, tb, ref, probes(rng, routes, 20000))
}

// checkDeadBytes checks the writer's count of dead bytes: the arrays' lengths less it are the bytes
// reachable from the direct-pointing array (and the dummy node and leaf).
func checkDeadBytes(t *testing.T, tb *Table) {
	t.Helper()
	w, s := tb.w, tb.cur.Load()
	live := nodeBytes + 2
	for _, c := range s.dir {
		for _, e := range c {
			if e&nodeBit != 0 {
				live += w.rootSubtreeBytes(e)
			}
		}
	}
	if total := 8*len(w.roots) + nodeBytes*len(w.nodes) + 2*len(w.leaves); total-w.dead != live {
		t.Fatalf("arrays %d bytes, dead %d, reachable %d", total, w.dead, live)
	}
}

func TestErrors(t *testing.T) {
	var tb Table
	v6 := netip.MustParsePrefix("2001:db8::/32")
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"insert zero prefix", tb.Insert(netip.Prefix{}, 1), ErrInvalidPrefix},
		{"insert v6", tb.Insert(v6, 1), ErrNotIPv4},
		{"insert 4in6", tb.Insert(netip.MustParsePrefix("::ffff:10.0.0.0/104"), 1), ErrNotIPv4},
		{"insert nh range", tb.Insert(netip.MustParsePrefix("10.0.0.0/8"), MaxNextHop+1), ErrNextHopRange},
		{"delete absent", tb.Delete(netip.MustParsePrefix("10.0.0.0/8")), ErrNotFound},
		{"delete v6", tb.Delete(v6), ErrNotIPv4},
		{"apply v6", tb.Apply([]Change{{Prefix: netip.MustParsePrefix("1.0.0.0/8")}, {Prefix: v6}}), ErrNotIPv4},
		{"replace nh range", tb.Replace([]Route{{netip.MustParsePrefix("1.0.0.0/8"), 1 << 20}}), ErrNextHopRange},
		{"replace invalid", tb.Replace([]Route{{}}), ErrInvalidPrefix},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	var ce *ChangeError
	if err := tb.Apply([]Change{{Prefix: netip.MustParsePrefix("1.0.0.0/8")}, {Prefix: v6}}); !errors.As(err, &ce) || ce.Index != 1 {
		t.Errorf("Apply error %v does not name change 1", err)
	}
	if tb.Len() != 0 {
		t.Errorf("failed updates left %d routes", tb.Len())
	}
}

func TestBasicsAndZeroValue(t *testing.T) {
	var tb Table
	if nh, ok := tb.Lookup(netip.MustParseAddr("10.1.2.3")); ok || nh != NoRoute {
		t.Fatalf("empty table lookup = %d,%v", nh, ok)
	}
	out := []uint32{7, 7, 7}
	if n := tb.LookupBatch([]uint32{1, 2, 3}, out); n != 3 || out[0] != NoRoute || out[2] != NoRoute {
		t.Fatalf("empty batch = %d %v", n, out)
	}
	mustInsert := func(p string, nh uint32) {
		if err := tb.Insert(netip.MustParsePrefix(p), nh); err != nil {
			t.Fatal(err)
		}
	}
	mustInsert("10.0.0.0/8", 1)
	mustInsert("10.1.0.0/16", 2)
	mustInsert("10.1.2.0/24", 3)
	mustInsert("10.1.2.3/32", 4)
	mustInsert("10.1.2.128/25", 5)
	mustInsert("10.1.2.99/24", 6) // host bits ignored: replaces 10.1.2.0/24
	tests := []struct {
		addr string
		nh   uint32
		ok   bool
	}{
		{"10.1.2.3", 4, true},
		{"10.1.2.4", 6, true},
		{"10.1.2.200", 5, true},
		{"10.1.3.1", 2, true},
		{"10.2.0.0", 1, true},
		{"::ffff:10.2.0.0", 1, true},
		{"11.0.0.0", NoRoute, false},
		{"2001:db8::1", NoRoute, false},
	}
	for _, tt := range tests {
		nh, ok := tb.Lookup(netip.MustParseAddr(tt.addr))
		if nh != tt.nh || ok != tt.ok {
			t.Errorf("Lookup(%s) = %d,%v; want %d,%v", tt.addr, nh, ok, tt.nh, tt.ok)
		}
	}
	if tb.Len() != 5 {
		t.Errorf("Len = %d, want 5", tb.Len())
	}
	if nh, ok := tb.Get(netip.MustParsePrefix("10.1.2.0/24")); !ok || nh != 6 {
		t.Errorf("Get = %d,%v", nh, ok)
	}
	if _, ok := tb.Get(netip.MustParsePrefix("10.1.2.0/23")); ok {
		t.Error("Get of an absent prefix succeeded")
	}
	if err := tb.Delete(netip.MustParsePrefix("10.1.2.0/24")); err != nil {
		t.Fatal(err)
	}
	if nh, _ := tb.Lookup(netip.MustParseAddr("10.1.2.4")); nh != 2 {
		t.Errorf("after delete: %d, want 2", nh)
	}
	if err := tb.Delete(netip.MustParsePrefix("10.0.0.0/8")); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Lookup(netip.MustParseAddr("10.2.0.0")); ok {
		t.Error("deleted /8 still matches")
	}
	if st := tb.Stats(); st.Routes != 3 || st.Nodes == 0 || st.LookupBytes == 0 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestLookupBatchInPlace: LookupBatch(a, a) gives the answers of LookupU32 and of the naive reference,
// also for lanes whose walk goes below the first node level (routes longer than /24), in full batches of
// 32 and in the tail, at every alignment of the batch in the slice.
func TestLookupBatchInPlace(t *testing.T) {
	var tb Table
	for _, r := range []Route{{mp("10.1.2.0/24"), 2}, {mp("10.1.2.128/25"), 3}} {
		if err := tb.Insert(r.Prefix, r.NextHop); err != nil {
			t.Fatal(err)
		}
	}
	a := make([]uint32, 32)
	for i := range a {
		a[i] = 0x0A0102B8 // 10.1.2.184
	}
	tb.LookupBatch(a, a)
	for i, nh := range a {
		if nh != 3 {
			t.Fatalf("LookupBatch(a, a)[%d] = %d; want 3 (LookupU32 gives 3)", i, nh)
		}
	}

	rng := rand.New(rand.NewPCG(11, 12))
	for it := range 20 {
		// Deep routes: lengths 19..32 in a narrow window, over a few short ones.
		routes := randomTable(rng, 20+rng.IntN(2000), uint32(1+rng.IntN(50)), true)
		for i := range routes {
			if rng.IntN(4) != 0 {
				a, _, _ := prefixKey(routes[i].Prefix)
				routes[i].Prefix = pfx(a|rng.Uint32()&0xFF, 19+rng.IntN(14))
			}
		}
		var tb Table
		if err := tb.Replace(routes); err != nil {
			t.Fatal(err)
		}
		ref := refFrom(routes)
		ps := probes(rng, routes, 500)
		off := it % 7
		buf := slices.Clone(ps)
		n := tb.LookupBatch(buf[off:], buf[off:])
		if n != len(ps)-off {
			t.Fatalf("LookupBatch returned %d, want %d", n, len(ps)-off)
		}
		for i, a := range ps[off:] {
			want, _ := ref.lookup(a)
			if got, _ := tb.LookupU32(a); got != want {
				t.Fatalf("LookupU32(%v) = %d; want %d", u32ToAddr(a), got, want)
			}
			if buf[off+i] != want {
				t.Fatalf("table %d: LookupBatch(a, a)[%d](%v) = %d; want %d", it, i, u32ToAddr(a), buf[off+i], want)
			}
		}
	}
}

func TestReplaceDuplicatesLastWins(t *testing.T) {
	var tb Table
	p := netip.MustParsePrefix("192.0.2.0/24")
	if err := tb.Replace([]Route{{p, 1}, {netip.MustParsePrefix("192.0.2.7/24"), 2}, {p, 3}, {netip.MustParsePrefix("10.0.0.0/30"), 9}}); err != nil {
		t.Fatal(err)
	}
	if nh, _ := tb.Lookup(netip.MustParseAddr("192.0.2.1")); nh != 3 || tb.Len() != 2 {
		t.Fatalf("got %d (len %d), want 3 (len 2)", nh, tb.Len())
	}
}

func TestZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	routes := synthTable(rng, 20000, 16)
	var tb Table
	if err := tb.Replace(routes); err != nil {
		t.Fatal(err)
	}
	ps := probes(rng, routes, 1000)
	out := make([]uint32, len(ps))
	addr := netip.MustParseAddr("10.1.2.3")
	var sink uint32
	for name, f := range map[string]func(){
		"Lookup":      func() { nh, _ := tb.Lookup(addr); sink += nh },
		"LookupU32":   func() { nh, _ := tb.LookupU32(ps[7]); sink += nh },
		"LookupBatch": func() { tb.LookupBatch(ps, out) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %.1f times per run", name, n)
		}
	}
	_ = sink
}
