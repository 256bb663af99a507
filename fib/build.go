package fib

import (
	"math/bits"
	"net/netip"
	"slices"
)

// writer is the control-plane state of a Table: the routes themselves (needed to rebuild a part of the
// poptrie after a delete) and the arrays being appended to. Only the goroutine holding Table.mu touches it.
//
// Routes of length <= dpBits ("short") live in one map per length; for every dp slot, cover holds the
// longest short route covering it. Longer routes live in a sorted list per dp slot, packed as
// addr<<32 | len<<16 | leaf, which sorts by (address, length): the order in which painting the entries of a
// node gives each entry its longest match.
type writer struct {
	short   [dpBits + 1]map[uint32]uint16
	long    map[uint32][]uint64
	hasLong []uint64 // bitmap over slots: long[slot] is non-empty
	cover   []uint32 // per slot: (len+1)<<16 | leaf of the longest short route covering it; 0 = none
	n       int      // routes

	roots       []uint64 // the arrays of the current version; new nodes are appended
	nodes       []node   // (readers of older versions never look past their own lengths)
	leaves      []uint16
	nroots      int // first-level nodes in roots, including dead ones
	nrootLeaves int // leaves stored in roots, including dead ones
	dead        int // bytes of roots, nodes and leaves no longer reachable from the current version

	dirty     []uint64 // bitmap over slots whose dp entry must be recomputed at the next commit
	dirtyList []uint32
}

func newWriter() *writer {
	w := &writer{
		long:    make(map[uint32][]uint64),
		hasLong: make([]uint64, numSlots/64),
		cover:   make([]uint32, numSlots),
		dirty:   make([]uint64, numSlots/64),
		nodes:   []node{dummyNode},
		leaves:  []uint16{leafNone},
	}
	for i := range w.short {
		w.short[i] = make(map[uint32]uint16)
	}
	return w
}

func (w *writer) markDirty(slot uint32) {
	if w.dirty[slot/64]&(1<<(slot%64)) == 0 {
		w.dirty[slot/64] |= 1 << (slot % 64)
		w.dirtyList = append(w.dirtyList, slot)
	}
}

func packRoute(a uint32, l int, leaf uint16) uint64 {
	return uint64(a)<<32 | uint64(l)<<16 | uint64(leaf)
}

// change applies one validated change to the routes and marks the dp slots it affects. It reports whether
// the prefix was present before.
func (w *writer) change(a uint32, l int, leaf uint16, del bool) (existed bool) {
	if l <= dpBits {
		return w.changeShort(a, l, leaf, del)
	}
	slot := a >> slotShift
	list := w.long[slot]
	key := packRoute(a, l, 0) >> 16
	i, found := slices.BinarySearchFunc(list, key, func(r, k uint64) int {
		switch {
		case r>>16 < k:
			return -1
		case r>>16 > k:
			return 1
		}
		return 0
	})
	switch {
	case del && !found:
		return false
	case del:
		list = slices.Delete(list, i, i+1)
		w.n--
	case found:
		if uint16(list[i]) == leaf {
			return true
		}
		list[i] = packRoute(a, l, leaf) // list is writer-only; readers never see it
	default:
		list = slices.Insert(list, i, packRoute(a, l, leaf))
		w.n++
	}
	if len(list) == 0 {
		delete(w.long, slot)
		w.hasLong[slot/64] &^= 1 << (slot % 64)
	} else {
		w.long[slot] = list
		w.hasLong[slot/64] |= 1 << (slot % 64)
	}
	w.markDirty(slot)
	return found
}

func (w *writer) changeShort(a uint32, l int, leaf uint16, del bool) bool {
	m := w.short[l]
	_, ok := m[a]
	lo := a >> slotShift
	cnt := uint32(1) << (dpBits - l)
	tag := uint32(l+1) << 16
	if del {
		if !ok {
			return false
		}
		delete(m, a)
		w.n--
		pc := w.parentCover(a, l)
		for s := lo; s < lo+cnt; s++ {
			if w.cover[s]&^0xFFFF == tag {
				if uint16(w.cover[s]) != uint16(pc) {
					w.markDirty(s)
				}
				w.cover[s] = pc
			}
		}
		return true
	}
	if !ok {
		w.n++
	}
	m[a] = leaf
	c := tag | uint32(leaf)
	for s := lo; s < lo+cnt; s++ {
		if w.cover[s]&^0xFFFF <= tag {
			if uint16(w.cover[s]) != leaf {
				w.markDirty(s)
			}
			w.cover[s] = c
		}
	}
	return ok
}

// parentCover returns the cover value of the longest route shorter than l containing a, or 0.
func (w *writer) parentCover(a uint32, l int) uint32 {
	for pl := l - 1; pl >= 0; pl-- {
		pa := a & ^(uint32(0xFFFFFFFF) >> pl)
		if pl == 0 {
			pa = 0
		}
		if leaf, ok := w.short[pl][pa]; ok {
			return uint32(pl+1)<<16 | uint32(leaf)
		}
	}
	return 0
}

// get returns the leaf of the exact prefix.
func (w *writer) get(a uint32, l int) (uint16, bool) {
	if l <= dpBits {
		leaf, ok := w.short[l][a]
		return leaf, ok
	}
	key := packRoute(a, l, 0) >> 16
	for _, r := range w.long[a>>slotShift] {
		if r>>16 == key {
			return uint16(r), true
		}
	}
	return 0, false
}

// paint computes the entries of the node at key shift sh (rootShift, then 6 and 0 lower) whose entries
// default to def and are refined by rs: routes sorted by (address, length), all inside this node's range and
// longer than the parent's stride. It fills vals with each leaf entry's value and lo, hi with each child
// entry's range of rs, and returns the child vector.
func paint(sh uint, def uint16, rs []uint64, vals *[64]uint16, lo, hi *[64]int32) (vec uint64) {
	for i := range vals {
		vals[i] = def
	}
	top := 36 - sh // prefix length at which one entry of this node is exactly covered
	for j, r := range rs {
		l := uint(r>>16) & 0xFF
		v := uint(uint64(uint32(r>>32))<<4>>sh) & 63
		if l <= top {
			leaf := uint16(r)
			span := uint(1) << (top - l)
			for k := v; k < v+span && k < 64; k++ {
				vals[k] = leaf
			}
			continue
		}
		b := uint64(1) << v
		if vec&b == 0 {
			vec |= b
			lo[v] = int32(j)
		}
		hi[v] = int32(j + 1)
	}
	return vec
}

// runs run-length compresses the leaf entries (those not in vec) of vals into out and returns the leaf
// vector (a bit per run start) and the number of runs.
func runs(vec uint64, vals *[64]uint16, out *[64]uint16) (leafvec uint64, n int) {
	first := true
	var prev uint16
	for v := range 64 {
		if vec&(1<<v) != 0 {
			continue
		}
		if first || vals[v] != prev {
			leafvec |= 1 << v
			out[n] = vals[v]
			n++
			prev, first = vals[v], false
		}
	}
	return leafvec, n
}

// build fills nodes[idx] with the node at key shift sh below the first level (see paint) and builds its
// children recursively.
func (w *writer) build(idx uint32, sh uint, def uint16, rs []uint64) {
	var vals, run [64]uint16
	var lo, hi [64]int32
	vec := paint(sh, def, rs, &vals, &lo, &hi)
	base1 := uint32(len(w.nodes))
	for range bits.OnesCount64(vec) {
		w.nodes = append(w.nodes, node{})
	}
	base0 := uint32(len(w.leaves))
	leafvec, n := runs(vec, &vals, &run)
	w.leaves = append(w.leaves, run[:n]...)
	w.nodes[idx] = node{vec: [2]uint64{sideLeaf: leafvec, sideChild: vec}, base: [2]uint32{sideLeaf: base0, sideChild: base1}}
	w.buildChildren(base1, sh, vec, &vals, rs, &lo, &hi)
}

func (w *writer) buildChildren(c uint32, sh uint, vec uint64, vals *[64]uint16, rs []uint64, lo, hi *[64]int32) {
	for m := vec; m != 0; m &= m - 1 {
		v := bits.TrailingZeros64(m)
		w.build(c, sh-6, vals[v], rs[lo[v]:hi[v]])
		c++
	}
}

const lineWords = 8 // words of a 64-byte cache line

// buildRoot appends the first-level node of a dp slot (entries default to def, refined by rs as in paint)
// to roots, with its leaves, builds its children into nodes, and returns its dp entry.
func (w *writer) buildRoot(def uint16, rs []uint64) uint32 {
	var vals, run [64]uint16
	var lo, hi [64]int32
	vec := paint(rootShift, def, rs, &vals, &lo, &hi)
	leafvec, n := runs(vec, &vals, &run)
	kids := vec != 0
	// A node that fits in a cache line does not straddle two: it starts on the next line instead (the
	// padding words count as dead space). roots is 64-byte aligned whenever it is large enough to matter
	// (the Go heap page-aligns large allocations).
	if size, off := rootWords(n, kids), len(w.roots)%lineWords; size <= lineWords && off+size > lineWords {
		for range lineWords - off {
			w.roots = append(w.roots, 0)
		}
		w.dead += 8 * (lineWords - off)
	}
	p := uint32(len(w.roots))
	w.roots = append(w.roots, leafvec)
	if kids {
		w.roots = append(w.roots, vec)
	}
	for range rootWords(n, kids) - len(w.roots) + int(p) {
		w.roots = append(w.roots, 0)
	}
	h := halves(w.roots)
	w.nroots++
	w.nrootLeaves += n
	if !kids {
		copy(h[4*p+rootLeafOff:], run[:n])
		return nodeBit | p
	}
	copy(h[4*p+kidsLeafOff:], run[:n])
	base1 := uint32(len(w.nodes))
	h[4*p+rootBaseOff], h[4*p+rootBaseOff+1] = uint16(base1), uint16(base1>>16)
	for range bits.OnesCount64(vec) {
		w.nodes = append(w.nodes, node{})
	}
	w.buildChildren(base1, rootShift, vec, &vals, rs, &lo, &hi)
	return nodeBit | kidsBit | p
}

// buildSlot builds the subtree of one dp slot and returns its dp entry.
func (w *writer) buildSlot(slot uint32) uint32 {
	rs := w.long[slot]
	def := uint16(w.cover[slot])
	if len(rs) == 0 {
		return uint32(def)
	}
	return w.buildRoot(def, rs)
}

// subtreeBytes returns the bytes of nodes and leaves reachable from node idx.
func subtreeBytes(nodes []node, idx uint32) int {
	n := &nodes[idx]
	b := nodeBytes + 2*bits.OnesCount64(n.vec[sideLeaf])
	for k := range uint32(bits.OnesCount64(n.vec[sideChild])) {
		b += subtreeBytes(nodes, n.base[sideChild]+k)
	}
	return b
}

// rootSubtreeBytes returns the bytes of the first-level node of dp entry e and of the nodes and leaves
// below it.
func (w *writer) rootSubtreeBytes(e uint32) int {
	p := e & rootMask
	kids := e&kidsBit != 0
	b := 8 * rootWords(bits.OnesCount64(w.roots[p]), kids)
	if kids {
		base := rootChildBase(halves(w.roots), p)
		for k := range uint32(bits.OnesCount64(w.roots[p+1])) {
			b += subtreeBytes(w.nodes, base+k)
		}
	}
	return b
}

// commit builds a new version from old (nil: empty) and the dirty slots, and returns it.
func (w *writer) commit(old *snapshot) *snapshot {
	if old == nil {
		old = newEmptySnapshot()
	}
	if len(w.dirtyList) == 0 && old.routes == w.n {
		return old // nothing a reader could see changed
	}
	ns := &snapshot{}
	*ns = *old
	var copied [(1 << dirBits) / 64]uint64
	for _, slot := range w.dirtyList {
		w.dirty[slot/64] &^= 1 << (slot % 64)
		ci := slot >> chunkBits
		if copied[ci/64]&(1<<(ci%64)) == 0 {
			copied[ci/64] |= 1 << (ci % 64)
			c := new(dpChunk)
			*c = *ns.dir[ci]
			ns.dir[ci] = c
		}
		e := &ns.dir[ci][slot&(chunkSize-1)]
		if *e&nodeBit != 0 {
			w.dead += w.rootSubtreeBytes(*e)
		}
		*e = w.buildSlot(slot)
	}
	w.dirtyList = w.dirtyList[:0]
	ns.roots, ns.rootHalves, ns.nodes, ns.leaves, ns.routes = w.roots, halves(w.roots), w.nodes, w.leaves, w.n
	ns.nroots, ns.nrootLeaves = w.nroots, w.nrootLeaves
	live := 8*len(w.roots) + len(w.nodes)*nodeBytes + 2*len(w.leaves) - w.dead
	if w.dead > live/2+1<<20 {
		return w.rebuild()
	}
	return ns
}

// rebuild builds a fresh version of the whole table from the routes, into new exactly-sized arrays.
func (w *writer) rebuild() *snapshot {
	nr, nn, nl := len(w.roots), len(w.nodes), len(w.leaves)
	if w.dead > 0 { // estimate the live sizes
		nr, nn, nl = nr/2+16, nn/2+16, nl/2+16
	}
	w.roots = make([]uint64, 0, nr)
	w.nodes = append(make([]node, 0, nn), dummyNode)
	w.leaves = append(make([]uint16, 0, nl), leafNone)
	w.dead, w.nroots, w.nrootLeaves = 0, 0, 0
	dp := make([]uint32, numSlots)
	for s := range uint32(numSlots) {
		if w.hasLong[s/64]&(1<<(s%64)) != 0 {
			dp[s] = w.buildSlot(s)
		} else {
			dp[s] = uint32(uint16(w.cover[s]))
		}
	}
	return w.finish(dp)
}

// finish trims the arrays and wraps dp into a new version.
func (w *writer) finish(dp []uint32) *snapshot {
	// Leave a little room so that the first updates after a bulk build append in place.
	w.nodes = append(make([]node, 0, len(w.nodes)+len(w.nodes)/32+64), w.nodes...)
	w.leaves = append(make([]uint16, 0, len(w.leaves)+len(w.leaves)/32+256), w.leaves...)
	w.roots = append(make([]uint64, 0, len(w.roots)+len(w.roots)/32+64), w.roots...)
	ns := &snapshot{roots: w.roots, rootHalves: halves(w.roots), nodes: w.nodes, leaves: w.leaves, routes: w.n, nroots: w.nroots, nrootLeaves: w.nrootLeaves}
	for ci := range ns.dir {
		c := (*dpChunk)(dp[ci*chunkSize:])
		if *c == emptyChunk {
			c = &emptyChunk
		}
		ns.dir[ci] = c
	}
	return ns
}

// buildAll makes a writer and a first version from a list of routes. Duplicate prefixes: the last wins.
func buildAll(routes []Route) (*writer, *snapshot, error) {
	n := len(routes)
	const idxBits = 26
	if n >= 1<<idxBits {
		return nil, nil, ErrTooManyRoutes
	}
	keys := make([]uint64, n)
	for i, r := range routes {
		a, l, err := prefixKey(r.Prefix)
		if err != nil {
			return nil, nil, err
		}
		if r.NextHop > MaxNextHop {
			return nil, nil, ErrNextHopRange
		}
		keys[i] = uint64(a)<<32 | uint64(l)<<idxBits | uint64(i)
	}
	slices.Sort(keys)
	// Dedupe (the last of equal prefixes has the highest index, so sorts last) and pack in place.
	packed := keys[:0]
	for j, k := range keys {
		if j+1 < n && keys[j+1]>>idxBits == k>>idxBits {
			continue
		}
		i := k & (1<<idxBits - 1)
		packed = append(packed, k>>32<<32|(k>>idxBits&63)<<16|uint64(routes[i].NextHop+1))
	}
	w := newWriter()
	w.n = len(packed)
	dp := make([]uint32, numSlots)
	w.roots = make([]uint64, 0, len(packed)/2+64)
	w.nodes = append(make([]node, 0, len(packed)/64+64), dummyNode)
	w.leaves = append(make([]uint16, 0, len(packed)/64+64), leafNone)
	for j := 0; j < len(packed); {
		r := packed[j]
		a, l, leaf := uint32(r>>32), int(r>>16&0xFF), uint16(r)
		if l <= dpBits {
			w.short[l][a] = leaf
			lo := a >> slotShift
			c := uint32(l+1)<<16 | uint32(leaf)
			for s := lo; s < lo+uint32(1)<<(dpBits-l); s++ {
				w.cover[s] = c // sorted order paints shorter routes first
			}
			j++
			continue
		}
		slot := a >> slotShift
		e := j + 1
		for e < len(packed) && uint32(packed[e]>>32)>>slotShift == slot {
			e++
		}
		w.long[slot] = packed[j:e:e]
		w.hasLong[slot/64] |= 1 << (slot % 64)
		dp[slot] = w.buildSlot(slot)
		j = e
	}
	for s, e := range dp {
		if e&nodeBit == 0 {
			dp[s] = uint32(uint16(w.cover[s]))
		}
	}
	return w, w.finish(dp), nil
}

// routes lists all routes sorted by (address, length).
func (w *writer) routes() []Route {
	all := make([]uint64, 0, w.n)
	for l, m := range w.short {
		for a, leaf := range m {
			all = append(all, packRoute(a, l, leaf))
		}
	}
	for _, list := range w.long {
		all = append(all, list...)
	}
	slices.Sort(all)
	out := make([]Route, len(all))
	for i, r := range all {
		out[i] = Route{netip.PrefixFrom(u32ToAddr(uint32(r>>32)), int(r>>16&0xFF)), uint32(uint16(r)) - 1}
	}
	return out
}
