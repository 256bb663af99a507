package fib

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestGroupApply(t *testing.T) {
	var h NextHops
	if err := h.Apply([]NextHopChange{
		{Index: 1, Entry: NextHop{Ifindex: 1}},
		{Index: 2, Entry: NextHop{Ifindex: 2}},
		{Index: 9, Members: []Member{{1, 1}, {2, 0}}},
	}); err != nil {
		t.Fatal(err)
	}
	v := h.View()
	e, ok := v.Get(9)
	if !ok || e.Flags&NextHopGroup == 0 {
		t.Fatalf("entry 9 = %+v, %v: want a group", e, ok)
	}
	if g := v.Group(9); len(g) != 2 || g[0] != (Member{1, 1}) || g[1] != (Member{2, 1}) {
		t.Fatalf("Group(9) = %v", g)
	}
	if v.Group(1) != nil || v.Pick(1, 0) != NoRoute || v.Pick(100, 0) != NoRoute {
		t.Fatal("a plain entry answers as a group")
	}
	// A plain entry replaces the group; a flag NextHopGroup without members is cleared.
	if err := h.Apply([]NextHopChange{{Index: 9, Entry: NextHop{Ifindex: 3, Flags: NextHopGroup}}}); err != nil {
		t.Fatal(err)
	}
	v2 := h.View()
	if e, _ := v2.Get(9); e.Flags&NextHopGroup != 0 || v2.Group(9) != nil || v2.groups != nil {
		t.Fatalf("entry 9 = %+v after a plain replacement", e)
	}
	if v.Group(9) == nil {
		t.Fatal("the old view changed")
	}
	for _, ms := range [][]Member{make([]Member, MaxMembers+1), {{MaxNextHop + 1, 1}}, {{1, 1 << 31}, {2, 1 << 31}}} {
		var ce *ChangeError
		if err := h.Apply([]NextHopChange{{Index: 3, Members: ms}}); !errors.As(err, &ce) || !errors.Is(err, ErrGroup) {
			t.Fatalf("%d members: %v, want ErrGroup", len(ms), err)
		}
	}
	if err := h.Apply([]NextHopChange{{Index: 9, Members: []Member{{1, 1}}}, {Index: 9, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Get(9); ok || h.View().Group(9) != nil {
		t.Fatal("a deleted group remains")
	}
}

// TestGroupSpread: flows (random hashes) spread over the members by weight within 2 % of all flows,
// and each hash always picks the same member.
func TestGroupSpread(t *testing.T) {
	for _, ws := range [][]uint32{{1, 1}, {1, 3}, {1, 2, 3, 4}, {5, 1, 1}, {256, 1}} {
		var h NextHops
		var ms []Member
		sum := 0
		for k, w := range ws {
			ms = append(ms, Member{uint32(10 + k), w})
			sum += int(w)
		}
		if err := h.Apply([]NextHopChange{{Index: 1, Members: ms}}); err != nil {
			t.Fatal(err)
		}
		v := h.View()
		const flows = 200000
		count := map[uint32]int{}
		r := rand.New(rand.NewPCG(1, uint64(len(ws))))
		for range flows {
			x := r.Uint32()
			m := v.Pick(1, x)
			if v.Pick(1, x) != m {
				t.Fatal("one hash picked two members")
			}
			count[m]++
		}
		for k, w := range ws {
			want := float64(flows) * float64(w) / float64(sum)
			if got := float64(count[uint32(10+k)]); got < want-0.02*flows || got > want+0.02*flows {
				t.Errorf("weights %v: member %d carries %.0f flows, want %.0f", ws, k, got, want)
			}
		}
	}
}

// TestGroupSpreadSequential: hashes of flows that differ only in a low counter (ports counting up,
// as a traffic generator makes them) spread as well.
func TestGroupSpreadSequential(t *testing.T) {
	var h NextHops
	if err := h.Apply([]NextHopChange{{Index: 1, Members: []Member{{2, 1}, {3, 1}}}}); err != nil {
		t.Fatal(err)
	}
	v := h.View()
	n := 0
	for x := range uint32(10000) {
		if v.Pick(1, x) == 2 {
			n++
		}
	}
	if n < 4800 || n > 5200 {
		t.Fatalf("member 2 has %d of 10000 sequential hashes", n)
	}
}

func TestGroupPickAllocs(t *testing.T) {
	var h NextHops
	if err := h.Apply([]NextHopChange{{Index: 4, Members: []Member{{1, 1}, {2, 2}}}}); err != nil {
		t.Fatal(err)
	}
	v := h.View()
	var x uint32
	seen := 0
	if a := testing.AllocsPerRun(1000, func() {
		x += 7919
		if v.Pick(4, x) != NoRoute {
			seen++
		}
	}); a != 0 {
		t.Fatalf("Pick allocates %v", a)
	}
	if seen == 0 {
		t.Fatal("Pick found no member")
	}
}
