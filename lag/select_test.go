package lag

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/race"
	"github.com/wirespeed/wirespeed/xmit"
)

// memMembers returns n in-memory links: the aggregate's ends and the far ends.
func memMembers(t testing.TB, pool *frame.Pool, n int) (near []xmit.Port, far []*xmit.MemPort) {
	for i := 0; i < n; i++ {
		a, b := xmit.Pipe(pool, &xmit.PipeConfig{Depth: 1 << 16})
		near = append(near, a)
		far = append(far, b)
	}
	return near, far
}

// fillBatch loads frames into a fresh batch from pool.
func fillBatch(t testing.TB, pool *frame.Pool, frames []synthFrame) *frame.Batch {
	b := frame.NewBatch(len(frames))
	n, err := pool.Alloc(b, len(frames))
	if err != nil || n != len(frames) {
		t.Fatalf("Alloc: %d, %v", n, err)
	}
	for i, f := range frames {
		b.Frames[i].Resize(len(f.b))
		copy(b.Bytes(i), f.b)
		if f.oob {
			b.Frames[i].Flags |= frame.FlagVLAN
			b.Frames[i].TPID, b.Frames[i].TCI = 0x8100, f.tci
		}
	}
	return b
}

// TestDistributionMatchesKernel: over 100k synthetic flows, for 2, 3 and 4 members and every
// policy, the member Select chooses is usable[oracle hash % count], the oracle being the naive
// transcription of the kernel.
func TestDistributionMatchesKernel(t *testing.T) {
	const flows = 100000
	r := rand.New(rand.NewPCG(7, 8))
	all := make([]synthFrame, flows)
	for i := range all {
		all[i] = genFrame(r)
	}
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	out := make([]uint8, 64)
	for _, nm := range []int{2, 3, 4} {
		for p := Layer2; p <= VLANSrcMAC; p++ {
			near, _ := memMembers(t, pool, nm)
			a, err := New(near, &Config{Mode: XOR, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			sel := a.NewSelector()
			spread := make([]int, nm)
			for start := 0; start < flows; start += 64 {
				chunk := all[start:min(start+64, flows)]
				b := fillBatch(t, pool, chunk)
				sel.Select(b, out)
				for i, f := range chunk {
					want := uint8(oracleHash(p, f.b, f.oob, f.tci) % uint32(nm))
					if out[i] != want {
						t.Fatalf("%d members, %v, flow %d: member %d, kernel %d", nm, p, start+i, out[i], want)
					}
					spread[out[i]]++
				}
				b.Free()
			}
			t.Logf("%d members %-11v spread %v", nm, p, spread)
			a.Close()
		}
	}
}

func TestRoundRobin(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, _ := memMembers(t, pool, 3)
	for _, tc := range []struct {
		pps  int
		down int // member taken down, -1 none
		want []uint8
	}{
		{1, -1, []uint8{0, 1, 2, 0, 1, 2, 0, 1}},
		{2, -1, []uint8{0, 0, 1, 1, 2, 2, 0, 0}},
		{3, -1, []uint8{0, 0, 0, 1, 1, 1, 2, 2}},
		// bond_get_slave_by_id: a down member's turn goes to the next usable member.
		{1, 1, []uint8{0, 2, 2, 0, 2, 2, 0, 2}},
		{1, 2, []uint8{0, 1, 0, 0, 1, 0, 0, 1}},
	} {
		a, err := New(near, &Config{Mode: RoundRobin, PacketsPerMember: tc.pps})
		if err != nil {
			t.Fatal(err)
		}
		if tc.down >= 0 {
			a.SetMemberUp(tc.down, false)
		}
		s := a.NewSelector()
		b := frame.NewBatch(8)
		b.Frames = b.Frames[:8]
		out := make([]uint8, 8)
		s.Select(b, out)
		for i := range out {
			if out[i] != tc.want[i] {
				t.Errorf("pps %d down %d: %v, want %v", tc.pps, tc.down, out, tc.want)
				break
			}
		}
		// The turn carries over between batches.
		b.Frames = b.Frames[:1]
		s.Select(b, out)
		if tc.down < 0 && tc.pps == 1 && out[0] != 8%3 {
			t.Errorf("pps 1: the ninth frame went to %d, want %d", out[0], 8%3)
		}
	}
	// Random choice: every member gets some, only usable ones.
	a, _ := New(near, &Config{Mode: RoundRobin, PacketsPerMember: -1})
	a.SetMemberUp(0, false)
	s := a.NewSelector()
	b := frame.NewBatch(64)
	b.Frames = b.Frames[:64]
	out := make([]uint8, 64)
	seen := map[uint8]int{}
	for k := 0; k < 100; k++ {
		s.Select(b, out)
		for _, m := range out {
			seen[m]++
		}
	}
	if seen[0] != 0 || seen[1] == 0 || seen[2] == 0 || len(seen) != 2 {
		t.Errorf("random round-robin with member 0 down: %v", seen)
	}
}

func TestActiveBackup(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, _ := memMembers(t, pool, 3)
	a, err := New(near, &Config{Mode: ActiveBackup})
	if err != nil {
		t.Fatal(err)
	}
	check := func(want int) {
		t.Helper()
		if got := a.Active(); got != want {
			t.Fatalf("active %d, want %d", got, want)
		}
		b := frame.NewBatch(4)
		b.Frames = b.Frames[:4]
		out := make([]uint8, 4)
		a.NewSelector().Select(b, out)
		w := uint8(want)
		if want < 0 {
			w = NoMember
		}
		for _, m := range out {
			if m != w {
				t.Fatalf("Select %v, want all %d", out, w)
			}
		}
	}
	check(0)
	a.SetMemberUp(0, false)
	check(1)
	a.SetMemberUp(0, true) // no primary: the active member stays
	check(1)
	a.SetMemberUp(1, false)
	a.SetMemberUp(0, false)
	check(2)
	a.SetMemberUp(2, false)
	check(-1)
	// With a primary, it takes over again whenever usable.
	p, err := New(near, &Config{Mode: ActiveBackup, Primary: near[2].Name()})
	if err != nil {
		t.Fatal(err)
	}
	a = p
	check(2)
	a.SetMemberUp(2, false)
	check(0)
	a.SetMemberUp(2, true)
	check(2)
}

// TestTableKeepsOtherFlows: with the bucket table a failure moves exactly the failed member's
// buckets (spread over the others) and nothing else; recovery restores the table. Without the table
// (bonding) most flows move.
func TestTableKeepsOtherFlows(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, _ := memMembers(t, pool, 4)
	a, err := New(near, &Config{Mode: XOR, Policy: Layer34, Table: true})
	if err != nil {
		t.Fatal(err)
	}
	before := a.Table()
	a.SetMemberUp(1, false)
	after := a.Table()
	moved := map[uint8]int{}
	for b := range before {
		if before[b] != 1 && after[b] != before[b] {
			t.Fatalf("bucket %d of a healthy member moved %d → %d", b, before[b], after[b])
		}
		if before[b] == 1 {
			if after[b] == 1 {
				t.Fatalf("bucket %d still on the failed member", b)
			}
			moved[after[b]]++
		}
	}
	if len(moved) != 3 || moved[0] < 21 || moved[2] < 21 || moved[3] < 21 {
		t.Errorf("failed member's 64 buckets spread unevenly: %v", moved)
	}
	a.SetMemberUp(1, true)
	if a.Table() != before {
		t.Error("recovery did not restore the table")
	}
	// A rebalanced table from the control loop.
	var nt [Buckets]uint8
	for b := range nt {
		nt[b] = uint8(3 - b%4)
	}
	if err := a.SetTable(&nt); err != nil {
		t.Fatal(err)
	}
	if a.Table() != nt {
		t.Error("SetTable not published")
	}
	nt[0] = 9
	if a.SetTable(&nt) == nil {
		t.Error("SetTable accepted member 9 of 4")
	}
	// Frames follow the table: Select = table[Bucket(hash)].
	r := rand.New(rand.NewPCG(9, 10))
	frames := make([]synthFrame, 64)
	for i := range frames {
		frames[i] = genFrame(r)
	}
	b := fillBatch(t, pool, frames)
	out := make([]uint8, 64)
	a.NewSelector().Select(b, out)
	tab := a.Table()
	for i, f := range frames {
		if want := tab[Bucket(oracleHash(Layer34, f.b, f.oob, f.tci))]; out[i] != want {
			t.Fatalf("frame %d: member %d, table says %d", i, out[i], want)
		}
	}
	b.Free()
}

func TestBondingModeRemodulo(t *testing.T) {
	// Documented behaviour of the bonding-compatible mode: with 4 → 3 usable members a flow stays
	// only if hash%4 and hash%3 name the same survivor; most flows move.
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	near, _ := memMembers(t, pool, 4)
	a, _ := New(near, &Config{Mode: XOR, Policy: Layer34})
	r := rand.New(rand.NewPCG(11, 12))
	frames := make([]synthFrame, 64)
	for i := range frames {
		frames[i] = genFrame(r)
	}
	b := fillBatch(t, pool, frames)
	out := make([]uint8, 64)
	s := a.NewSelector()
	s.Select(b, out)
	before := append([]uint8(nil), out...)
	a.SetMemberUp(3, false)
	s.Select(b, out)
	for i, f := range frames {
		h := oracleHash(Layer34, f.b, f.oob, f.tci)
		if out[i] != uint8(h%3) || before[i] != uint8(h%4) {
			t.Fatalf("frame %d: %d→%d, want %d→%d", i, before[i], out[i], h%4, h%3)
		}
	}
	b.Free()
}

func TestDebounce(t *testing.T) {
	const ms = 1_000_000
	d := debounce{up: true}
	steps := []struct {
		obs     bool
		now     int64
		changed bool
		up      bool
	}{
		{true, 0, false, true},
		{false, 10 * ms, false, true},  // down seen, downdelay 30ms running
		{true, 20 * ms, false, true},   // flap back: forgotten
		{false, 30 * ms, false, true},  // down again, timer restarts at 30
		{false, 50 * ms, false, true},  // 20ms < 30ms
		{false, 60 * ms, true, false},  // 30ms: down
		{true, 70 * ms, false, false},  // updelay 50ms running
		{true, 119 * ms, false, false}, // 49ms
		{true, 120 * ms, true, true},   // 50ms: up
	}
	for i, s := range steps {
		ch := d.step(s.obs, durationOf(s.now), durationOf(50*ms), durationOf(30*ms))
		if ch != s.changed || d.up != s.up {
			t.Fatalf("step %d: changed %v up %v, want %v %v", i, ch, d.up, s.changed, s.up)
		}
	}
	// Zero delays: immediate.
	d = debounce{up: true}
	if !d.step(false, 0, 0, 0) || d.up {
		t.Fatal("zero downdelay did not take the member down at once")
	}
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }

// crtCounts are member counts whose least common multiple exceeds 2^32: a hash h < 2^32 is
// determined by its remainders modulo them (Chinese remainder theorem), so a batch loop that
// chooses usable[h % count] like the general path for every one of these counts computed the same
// h. The identity table (bucket b -> member b) shows Bucket(h) for the table loops.
var crtCounts = []int{64, 63, 61, 59, 53, 47, 3}

// testSnapshot is a published state with members 0..cnt-1 usable (the identity table with tbl).
func testSnapshot(cnt int, tbl bool) *snapshot {
	st := &snapshot{n: cnt, cnt: uint32(cnt)}
	st.mpAll, st.dsAll = pickConsts(uint32(cnt))
	for i := 0; i < cnt; i++ {
		st.usable = append(st.usable, uint8(i))
	}
	st.setPick()
	if tbl {
		st.table = new([Buckets]uint8)
		for b := range st.table {
			st.table[b] = uint8(b)
		}
	}
	return st
}

// checkSelectEqualsGeneral runs Select in XOR mode on b for every policy, with every count of
// crtCounts and with the identity table, and compares each choice with the general per-frame path
// (hashFrame, itself checked against the kernel transcription).
func checkSelectEqualsGeneral(t *testing.T, b *frame.Batch) {
	t.Helper()
	out := make([]uint8, len(b.Frames))
	for p := Layer2; p <= VLANSrcMAC; p++ {
		a := &Aggregate{cfg: Config{Mode: XOR, Policy: p}}
		s := &Selector{a: a}
		for k := 0; k <= len(crtCounts); k++ {
			tbl := k == len(crtCounts)
			cnt := 256
			if !tbl {
				cnt = crtCounts[k]
			}
			a.state.Store(testSnapshot(min(cnt, MaxMembers), tbl))
			for i := range out {
				out[i] = 0xee // no member: a frame the loops skip shows
			}
			s.Select(b, out)
			for i := range b.Frames {
				f := &b.Frames[i]
				h := hashFrame(p, b.Mem, f)
				want := uint8(h % uint32(cnt))
				if tbl {
					want = Bucket(h)
				}
				if out[i] != want {
					t.Fatalf("policy %v count %d table %v frame % x (len %d oob %v tci %#x): batch %d, general %d (hash %#x)",
						p, cnt, tbl, f.Data(b.Mem), f.Len, f.Flags&frame.FlagVLAN != 0, f.TCI, out[i], want, h)
				}
			}
		}
	}
}

// TestSelectEqualsGeneral: the XOR batch loops (their straight paths and the frames they leave) choose what
// the general per-frame path does, for every policy, member count and the table: on the random mix
// of genFrame and on plain IPv4/IPv6 TCP/UDP frames with and without a tag, in band or out of
// band, with random bytes everywhere else, truncated at random lengths (the header window then
// reads bytes past the frame's end, which are random too), and frames near the end of the arena.
func TestSelectEqualsGeneral(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const slot = 2048
	b := &frame.Batch{Mem: make([]byte, 64*slot), Frames: make([]frame.Frame, 64)}
	plain := func() synthFrame {
		var sf synthFrame
		d := make([]byte, 12, 128)
		for i := range d {
			d[i] = byte(r.IntN(256))
		}
		switch r.IntN(4) {
		case 0:
			sf.oob, sf.tci = true, uint16(r.IntN(65536))
		case 1:
			d = append(d, 0x81, 0, byte(r.IntN(256)), byte(r.IntN(256)))
		case 2:
			d = append(d, 0x88, 0xa8, byte(r.IntN(256)), byte(r.IntN(256)))
		}
		if r.IntN(8) == 0 { // a second tag
			d = append(d, 0x81, 0, byte(r.IntN(256)), byte(r.IntN(256)))
		}
		proto := []byte{protoTCP, protoUDP, protoTCP, protoUDP, 1, 47, 58, 132}[r.IntN(8)]
		if r.IntN(2) == 0 {
			d = append(d, 0x08, 0)
			d = append(d, ipv4(rnd(r, 4), rnd(r, 4), proto, 0)...)
			switch r.IntN(8) {
			case 0:
				d[len(d)-20+6] |= byte(r.IntN(2)) << 5 // more fragments
			case 1:
				d[len(d)-20+7] = byte(r.IntN(256)) // fragment offset
			case 2:
				d[len(d)-20] = byte(r.IntN(256)) // version and IHL
			}
		} else {
			d = append(d, 0x86, 0xdd)
			d = append(d, ipv6(rnd(r, 16), rnd(r, 16), proto)...)
		}
		d = append(d, rnd(r, r.IntN(40))...)
		if r.IntN(4) == 0 {
			d = d[:r.IntN(len(d)+1)]
		}
		sf.b = d
		return sf
	}
	rounds := 1500
	if race.Enabled { // a single goroutine: the detector adds time, not coverage
		rounds = 300
	}
	for round := 0; round < rounds; round++ {
		for i := range b.Frames {
			var sf synthFrame
			if r.IntN(2) == 0 {
				sf = genFrame(r)
			} else {
				sf = plain()
			}
			if len(sf.b) > slot-64 {
				sf.b = sf.b[:slot-64]
			}
			off := i*slot + 64
			if i == len(b.Frames)-1 {
				off = len(b.Mem) - len(sf.b) - r.IntN(min(80, slot-64-len(sf.b)+1))
			}
			copy(b.Mem[off:], sf.b)
			// The bytes after the frame are random: the window may read them, the hash must not.
			for j := off + len(sf.b); j < min(off+len(sf.b)+80, len(b.Mem)); j++ {
				b.Mem[j] = byte(r.IntN(256))
			}
			b.Frames[i] = frame.Frame{Off: uint32(off), Len: uint16(len(sf.b)), TCI: sf.tci}
			if sf.oob {
				b.Frames[i].Flags |= frame.FlagVLAN
			}
		}
		checkSelectEqualsGeneral(t, b)
	}
}

func rnd(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// TestSelectEqualsGeneralShapes: checkSelectEqualsGeneral on the batch shapes the other tests do
// not make: more than 64 frames (Select's chunked path), arenas shorter than the loops' header
// windows (their early return), and an empty batch over a non-empty arena.
func TestSelectEqualsGeneralShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const slot = 256
	big := &frame.Batch{Mem: make([]byte, 150*slot), Frames: make([]frame.Frame, 150)}
	for i := range big.Frames {
		sf := genFrame(r)
		off := i*slot + 64
		copy(big.Mem[off:], sf.b)
		big.Frames[i] = frame.Frame{Off: uint32(off), Len: uint16(len(sf.b)), TCI: sf.tci}
		if sf.oob {
			big.Frames[i].Flags |= frame.FlagVLAN
		}
	}
	checkSelectEqualsGeneral(t, big)
	// Batch lengths that leave 1-3 frames to the unrolled loops' remainder, whose results are
	// shifted by the unrolled frames' count (33-63 frames: a wrong shift shows only there).
	for _, n := range []int{5, 37, 61, 62, 63, 65, 67} {
		checkSelectEqualsGeneral(t, &frame.Batch{Mem: big.Mem, Frames: slices.Clone(big.Frames[:n])})
	}

	for size := 0; size <= 80; size++ {
		for trial := 0; trial < 8; trial++ {
			sf := genFrame(r)
			b := &frame.Batch{Mem: make([]byte, size)}
			copy(b.Mem, sf.b)
			for k := r.IntN(10); k > 0 && size > 0; k-- { // up to 9: the unrolled loops' 4 and the rest
				off := r.IntN(size)
				b.Frames = append(b.Frames, frame.Frame{Off: uint32(off), Len: uint16(r.IntN(size - off + 1))})
			}
			checkSelectEqualsGeneral(t, b)
		}
	}
	checkSelectEqualsGeneral(t, &frame.Batch{Mem: make([]byte, 4096)})
}

// TestSelectBroadcast: in Broadcast mode Select marks every frame AllUsable while a member is
// usable, and NoMember when none is.
func TestSelectBroadcast(t *testing.T) {
	a := &Aggregate{cfg: Config{Mode: Broadcast}}
	s := &Selector{a: a}
	b := &frame.Batch{Mem: make([]byte, 256), Frames: make([]frame.Frame, 3)}
	out := make([]uint8, 3)
	for _, cnt := range []int{0, 1, 3} {
		st := &snapshot{} // none usable
		if cnt > 0 {
			st = testSnapshot(cnt, false)
		}
		a.state.Store(st)
		for i := range out {
			out[i] = 0xee
		}
		s.Select(b, out)
		want := AllUsable
		if cnt == 0 {
			want = NoMember
		}
		for i, m := range out {
			if m != want {
				t.Fatalf("%d usable: frame %d got %d, want %d", cnt, i, m, want)
			}
		}
	}
}
