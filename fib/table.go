package fib

import (
	"errors"
	"math/bits"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"
)

// NoRoute is the next-hop value LookupBatch writes for an address that no prefix covers (and the value
// LookupU32 and Lookup return beside ok == false).
const NoRoute uint32 = 0xFFFFFFFF

// MaxNextHop is the largest next-hop index a Table stores. Next hops are indices (into a NextHops table,
// say), kept in 16 bits in the leaves so that a full Internet table stays within a few MiB.
const MaxNextHop uint32 = 0xFFFE

// Sentinel errors.
var (
	// ErrInvalidPrefix: the zero netip.Prefix or one whose length does not fit its address.
	ErrInvalidPrefix = errors.New("fib: invalid prefix")
	// ErrNotIPv4: an IPv6 prefix (including IPv4-mapped IPv6 prefixes).
	ErrNotIPv4 = errors.New("fib: not an IPv4 prefix")
	// ErrNextHopRange: a next hop above MaxNextHop.
	ErrNextHopRange = errors.New("fib: next hop out of range")
	// ErrNotFound: Delete of a prefix that is not in the table.
	ErrNotFound = errors.New("fib: prefix not found")
)

// Route is one prefix and its next-hop index.
type Route struct {
	Prefix  netip.Prefix
	NextHop uint32
}

// Change is one element of a batch update (Table.Apply): insert or replace Prefix with NextHop, or, when
// Delete is set, remove Prefix (NextHop is then ignored).
type Change struct {
	Prefix  netip.Prefix
	NextHop uint32
	Delete  bool
}

// Layout constants. The direct-pointing array covers the top dpBits bits of the address; below it the
// poptrie nodes have 6-bit strides at bit offsets 18 (the first level, in roots), 24 and 30 (the last one
// padded with 4 zero bits).
const (
	dpBits    = 18
	dirBits   = 8                // the direct-pointing array is split into 1<<dirBits chunks ...
	chunkBits = dpBits - dirBits // ... of 1<<chunkBits entries, copied on write one chunk at a time
	chunkSize = 1 << chunkBits   // entries per chunk
	nodeBit   = uint32(1) << 31  // a dp entry with this bit is a first-level node (kidsBit, rootMask); otherwise a leaf value
	kidsBit   = uint32(1) << 30  // a first-level node's dp entry: the node has children
	rootMask  = kidsBit - 1      // a first-level node's dp entry: its word index in roots
	slotShift = 32 - dpBits      // address >> slotShift = dp slot
	numSlots  = 1 << dpBits      // dp entries
	leafNone  = uint16(0)        // leaf value of "no route"; a next hop nh is stored as nh+1
	rootShift = 36 - dpBits - 6  // shift of the first node level in the 36-bit padded key (uint64(a)<<4)
	nodeBytes = 24               // unsafe.Sizeof(node{})
)

// nodeBytes must stay the size of a node (Stats and the compaction accounting count with it).
var _ [nodeBytes - unsafe.Sizeof(node{})]struct{}
var _ [unsafe.Sizeof(node{}) - nodeBytes]struct{}

// node is one poptrie internal node: 64 entries (one 6-bit stride). Bit v of vec[sideChild] is set when
// entry v is an internal node; those children are stored contiguously from base[sideChild] in the order of
// their bits. The other entries are leaves; bit v of vec[sideLeaf] is set when leaf entry v starts a run of a
// new value (leaf compression), and the run values are stored contiguously from base[sideLeaf]. The two
// sides are indexed (rather than named fields) so that a walk selects one with the entry's child bit,
// without a branch.
type node struct {
	vec  [2]uint64
	base [2]uint32
}

const (
	sideLeaf  = 0 // node.vec[sideLeaf], node.base[sideLeaf]: leaf runs, into leaves
	sideChild = 1 // node.vec[sideChild], node.base[sideChild]: children, into nodes
)

// A first-level node (the one a dp entry points to) lives in roots, a flat []uint64, with its leaves right
// behind it, so that the load of its vector usually brings in the leaf a lookup reads next (most lookups of
// addresses covered by a prefix end at the first level). At word p, roots[p] is its leaf vector (a node's
// vec[sideLeaf]). A node without children (the dp entry without kidsBit) is that word and its leaf runs, as
// 16-bit halves (rootHalves, the same memory) from 4*p+rootLeafOff. A node with children (kidsBit) has its
// child vector in roots[p+1], the index in nodes of its first child in halves 4*p+rootBaseOff and the next
// one (low half first), and its leaf runs from 4*p+kidsLeafOff. rootWords(n, kids) words hold a first-level
// node with n leaf runs. A node of at most lineWords words starts on the next cache line rather than
// straddle two.
const (
	rootBaseOff  = 8  // 16-bit offset of the first child's index from 4*p (a node with children)
	rootLeafOff  = 4  // 16-bit offset of the first leaf from 4*p, a node without children ...
	kidsLeafOff  = 10 // ... and with children
	kidsLeafSkip = kidsLeafOff - rootLeafOff
)

// rootWords returns the length in words of a first-level node with n leaf runs, with or without children.
func rootWords(n int, kids bool) int {
	off := rootLeafOff
	if kids {
		off = kidsLeafOff
	}
	return (off + n + 3) / 4
}

// halves returns the 16-bit view of the memory of w.
func halves(w []uint64) []uint16 {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&w[0])), 4*len(w))
}

// rootChildBase returns the index in nodes of the first child of the first-level node at word p.
func rootChildBase(h []uint16, p uint32) uint32 {
	return uint32(h[4*p+rootBaseOff]) | uint32(h[4*p+rootBaseOff+1])<<16
}

type dpChunk [chunkSize]uint32

// emptyChunk is shared by every snapshot for the parts of the address space with no route at all. It is
// never written (chunks are always copied before they are changed).
var emptyChunk dpChunk

// snapshot is one immutable version of the lookup structure. Nothing reachable from a published snapshot is
// ever written again: updates append to roots, nodes and leaves beyond this snapshot's lengths and copy the
// dp chunks they change.
//
// nodes[0] is a dummy node (no children) and leaves[0] a dummy leaf (no route).
type snapshot struct {
	dir         [1 << dirBits]*dpChunk
	roots       []uint64 // first-level nodes with their leaves
	rootHalves  []uint16 // roots as 16-bit halves
	nodes       []node   // nodes below the first level
	leaves      []uint16 // the leaves of nodes
	routes      int      // number of prefixes
	nroots      int      // first-level nodes in roots, including dead ones
	nrootLeaves int      // leaves in roots, including dead ones
}

func newEmptySnapshot() *snapshot {
	s := &snapshot{nodes: []node{dummyNode}, leaves: []uint16{leafNone}}
	for i := range s.dir {
		s.dir[i] = &emptyChunk
	}
	return s
}

// Table is an IPv4 longest-prefix-match table mapping prefixes to next-hop indices (0..MaxNextHop), after
// Asai and Ohara's Poptrie (SIGCOMM 2015): a direct-pointing array for the top 18 bits, then 6-bit-stride
// nodes whose 64-bit vectors are popcount-indexed into compressed child and leaf arrays, with leaf
// compression. All lookup data are flat, pointer-free arrays.
//
// The zero value is an empty table ready to use. A Table must not be copied after first use.
//
// Concurrency contract (RCU style):
//   - Lookup, LookupU32 and LookupBatch may be called from any number of goroutines at any time, also while
//     an update runs. They never lock and never write shared memory; each makes one atomic pointer load of
//     the current immutable version (LookupBatch: one per call) and then reads only that version.
//   - Insert, Delete, Apply, Replace and Load are serialized by a writer mutex. An update builds the
//     changed parts of a new version beside the current one (copy-on-write: new nodes are appended beyond
//     the current version's arrays, changed direct-pointing chunks are copied) and publishes it with one
//     atomic store. A lookup therefore sees the table either before or after an update (for Apply and
//     Replace: before or after the whole batch), never a mix. Old versions are reclaimed by the garbage
//     collector once no reader holds them; space left dead in the shared arrays is reclaimed by an
//     occasional full rebuild.
//   - Get, Len, Routes and Stats are control-plane calls: Len and Stats read the current version, Get and
//     Routes take the writer mutex.
type Table struct {
	_   [0]sync.Mutex
	cur atomic.Pointer[snapshot]

	mu sync.Mutex // serializes writers; guards w
	w  *writer
}

// New returns an empty table.
func New() *Table { return &Table{} }

// Lookup returns the next hop of the longest prefix containing addr. It returns (NoRoute, false) when no
// prefix contains addr or when addr is not an IPv4 address (IPv4-mapped IPv6 addresses are unmapped).
func (t *Table) Lookup(addr netip.Addr) (nh uint32, ok bool) {
	if !addr.Is4() {
		if !addr.Is4In6() {
			return NoRoute, false
		}
		addr = addr.Unmap()
	}
	b := addr.As4()
	s := t.cur.Load()
	if s == nil {
		return NoRoute, false
	}
	nh = s.lookup(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
	return nh, nh != NoRoute
}

// LookupU32 is Lookup for an IPv4 address held in a uint32 (most significant byte first: 10.0.0.1 is
// 0x0A000001).
func (t *Table) LookupU32(a uint32) (nh uint32, ok bool) {
	s := t.cur.Load()
	if s == nil {
		return NoRoute, false
	}
	nh = s.lookup(a)
	return nh, nh != NoRoute
}

func (s *snapshot) lookup(a uint32) uint32 {
	e := s.dir[a>>(32-dirBits)][(a>>slotShift)&(chunkSize-1)]
	if e&nodeBit == 0 {
		return e - 1 // leaf value nh+1; 0 (no route) wraps to NoRoute
	}
	p := e & rootMask
	bit := uint64(1) << ((a >> (32 - dpBits - 6)) & 63)
	mask := bit<<1 - 1
	off := 4*p + rootLeafOff - 1
	if e&kidsBit != 0 {
		if cv := s.roots[p+1]; cv&bit != 0 {
			return s.lookupBelow(a, rootChildBase(s.rootHalves, p)+uint32(bits.OnesCount64(cv&mask))-1)
		}
		off += kidsLeafSkip
	}
	return uint32(s.rootHalves[off+uint32(bits.OnesCount64(s.roots[p]&mask))]) - 1
}

// lookupBelow returns the next hop of a from the nodes below the first level, starting at the second-level
// node idx.
func (s *snapshot) lookupBelow(a uint32, idx uint32) uint32 {
	n := &s.nodes[idx]
	k := uint64(a) << 4
	sh := uint(rootShift - 6)
	for {
		bit := uint64(1) << ((k >> (sh & 63)) & 63)
		mask := bit<<1 - 1
		if n.vec[sideChild]&bit == 0 {
			return uint32(s.leaves[n.base[sideLeaf]+uint32(bits.OnesCount64(n.vec[sideLeaf]&mask))-1]) - 1
		}
		n = &s.nodes[n.base[sideChild]+uint32(bits.OnesCount64(n.vec[sideChild]&mask))-1]
		sh -= 6
	}
}

// LookupBatch looks up addrs[i] (IPv4 addresses as in LookupU32) and writes the next hop, or NoRoute, to
// out[i], for i < min(len(addrs), len(out)); it returns that count. out may be addrs itself (the lookup
// is then done in place); other overlaps of the two slices give undefined results. It interleaves 32
// independent walks level by level so that their memory loads overlap, which makes it several times
// faster per address than LookupU32 on traffic that misses the caches. It makes one atomic load for the
// whole call.
func (t *Table) LookupBatch(addrs, out []uint32) int {
	n := min(len(addrs), len(out))
	s := t.cur.Load()
	if s == nil {
		for i := range out[:n] {
			out[i] = NoRoute
		}
		return n
	}
	i := n / batchLanes * batchLanes
	if i > 0 {
		s.lookupChunks(addrs[:i], out[:i])
	}
	for ; i < n; i++ {
		out[i] = s.lookup(addrs[i])
	}
	return n
}

const batchLanes = 32

// lookup32 walks 32 addresses at once, stage by stage over the lanes, so that the loads of different lanes
// are independent and overlap: first all direct-pointing entries, then the first node level of the lanes
// that have one (one popcount per lane, and the leaf from the node's own words, usually in the cache line
// just loaded), then the rare deeper walks. o may be a: lane i reads a[i] before it writes o[i], and the
// later stages read the address from a copy (the assembly writes o only after its last read of a). On
// amd64 CPUs with POPCNT the first two stages are lookupStages (lookup_amd64.s) unless the build has the
// purego tag; both forms give the same results (TestLookup32Forms).
func (s *snapshot) lookup32(a *[batchLanes]uint32, o *[batchLanes]uint32) {
	s.lookupChunks(a[:], o[:])
}

// lookupChunks is lookup32 over each chunk of 32 addresses in a (len(a) a multiple of 32, at
// most len(o)); the assembly stages run from one chunk to the next without returning until a
// chunk has lanes that continue below the first level.
func (s *snapshot) lookupChunks(a, o []uint32) {
	if !useStagesAsm {
		for i := 0; i+batchLanes <= len(a); i += batchLanes {
			s.lookup32Go((*[batchLanes]uint32)(a[i:]), (*[batchLanes]uint32)(o[i:]))
		}
		return
	}
	var st lanes
	roots := unsafe.SliceData(s.roots)
	for len(a) >= batchLanes {
		k, deep := lookupStages(&s.dir, roots, &a[0], &o[0], len(a)/batchLanes, &st)
		c := k * batchLanes
		for m := deep; m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m) & (batchLanes - 1)
			o[c-batchLanes+i] = s.lookupBelow(st.xs[i], st.ent[i])
		}
		a, o = a[c:], o[c:]
	}
}

// lanes is the per-lane state of lookup32's stages: the direct-pointing entry (for a lane that
// continues below the first level, the index of its second-level node) and the address.
type lanes struct {
	ent, xs [batchLanes]uint32
}

// lookup32Go is lookup32 in Go.
func (s *snapshot) lookup32Go(a *[batchLanes]uint32, o *[batchLanes]uint32) {
	const K = batchLanes
	var ent, xs [K]uint32
	var pend, deep uint32
	for i := K - 1; i >= 0; i-- {
		x := a[i]
		e := s.dir[x>>(32-dirBits)][(x>>slotShift)&(chunkSize-1)]
		ent[i] = e
		xs[i] = x
		o[i] = e - 1
		pend = pend<<1 | e>>31
	}
	roots, h := s.roots, s.rootHalves
	for m := pend; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m) & (K - 1)
		e := ent[i]
		p := e & rootMask
		sh := ^(xs[i] >> (32 - dpBits - 6)) & 63 // 63 - the entry v: shifting left keeps bits 0..v, bit v on top
		lv := roots[p] << sh
		off := 4*p + rootLeafOff - 1
		if e&kidsBit != 0 {
			if cv := roots[p+1] << sh; int64(cv) < 0 { // entry v is a child
				ent[i] = rootChildBase(h, p) + uint32(bits.OnesCount64(cv)) - 1
				deep |= 1 << i
				continue
			}
			off += kidsLeafSkip
		}
		o[i] = uint32(h[off+uint32(bits.OnesCount64(lv))]) - 1 // usually in the cache line of roots[p]
	}
	for m := deep; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m) & (K - 1)
		o[i] = s.lookupBelow(xs[i], ent[i])
	}
}

// Len returns the number of prefixes in the table.
func (t *Table) Len() int {
	s := t.cur.Load()
	if s == nil {
		return 0
	}
	return s.routes
}

// Stats describes the size of the current lookup structure.
type Stats struct {
	Routes int // prefixes
	Nodes  int // poptrie nodes, including dead ones awaiting compaction (24 bytes each below the first level)
	Leaves int // compressed leaves (2 bytes each; a first-level node is its vectors and its leaves), including dead ones
	Chunks int // distinct direct-pointing chunks (4 KiB each) not shared with the empty chunk
	// LookupBytes is what readers can touch: dp chunks + nodes and leaves (array capacity, not length).
	LookupBytes int
}

// Stats returns the size of the current version.
func (t *Table) Stats() Stats {
	s := t.cur.Load()
	if s == nil {
		return Stats{}
	}
	st := Stats{Routes: s.routes, Nodes: s.nroots + len(s.nodes), Leaves: s.nrootLeaves + len(s.leaves)}
	for _, c := range s.dir {
		if c != &emptyChunk {
			st.Chunks++
		}
	}
	st.LookupBytes = st.Chunks*chunkSize*4 + cap(s.roots)*8 + cap(s.nodes)*nodeBytes + cap(s.leaves)*2 + len(s.dir)*8
	return st
}

// prefixKey validates p and returns its masked address as a uint32 and its length.
func prefixKey(p netip.Prefix) (uint32, int, error) {
	if !p.IsValid() {
		return 0, 0, ErrInvalidPrefix
	}
	if !p.Addr().Is4() {
		return 0, 0, ErrNotIPv4
	}
	l := p.Bits()
	b := p.Masked().Addr().As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), l, nil
}

func u32ToAddr(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// ErrTooManyRoutes: a bulk load of 1<<26 routes or more.
var ErrTooManyRoutes = errors.New("fib: too many routes")

func (t *Table) writerLocked() *writer {
	if t.w == nil {
		t.w = newWriter()
	}
	return t.w
}

// Insert adds the prefix p (its host bits are ignored) with next hop nh, or replaces its next hop, and
// publishes the new version.
func (t *Table) Insert(p netip.Prefix, nh uint32) error {
	a, l, err := prefixKey(p)
	if err != nil {
		return err
	}
	if nh > MaxNextHop {
		return ErrNextHopRange
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.writerLocked()
	w.change(a, l, uint16(nh+1), false)
	t.cur.Store(w.commit(t.cur.Load()))
	return nil
}

// Delete removes the prefix p (its host bits are ignored) and publishes the new version. It returns
// ErrNotFound when p is not in the table.
func (t *Table) Delete(p netip.Prefix) error {
	a, l, err := prefixKey(p)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.writerLocked()
	if !w.change(a, l, 0, true) {
		return ErrNotFound
	}
	t.cur.Store(w.commit(t.cur.Load()))
	return nil
}

// Apply applies a batch of changes in order and publishes the result once: readers see the table before
// or after the whole batch. Every change is validated first; if one is invalid, nothing is applied and
// the error names its index. Deleting a prefix that is absent (at that point of the batch) is not an error.
func (t *Table) Apply(changes []Change) error {
	for i, c := range changes {
		_, _, err := prefixKey(c.Prefix)
		if err == nil && !c.Delete && c.NextHop > MaxNextHop {
			err = ErrNextHopRange
		}
		if err != nil {
			return &ChangeError{Index: i, Err: err}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.writerLocked()
	for _, c := range changes {
		a, l, _ := prefixKey(c.Prefix)
		w.change(a, l, uint16(c.NextHop+1), c.Delete)
	}
	t.cur.Store(w.commit(t.cur.Load()))
	return nil
}

// ChangeError reports which change of a batch was invalid.
type ChangeError struct {
	Index int
	Err   error
}

func (e *ChangeError) Error() string { return "fib: change " + itoa(e.Index) + ": " + e.Err.Error() }
func (e *ChangeError) Unwrap() error { return e.Err }

// Replace replaces the whole content of the table with routes (bulk build: much faster than inserting
// them one by one) and publishes it at once. If a prefix appears more than once, the last one wins. If a
// route is invalid, the table is left unchanged.
func (t *Table) Replace(routes []Route) error {
	w, s, err := buildAll(routes)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w = w
	t.cur.Store(s)
	return nil
}

// Get returns the next hop of exactly the prefix p (not a longest match). It takes the writer mutex.
func (t *Table) Get(p netip.Prefix) (nh uint32, ok bool) {
	a, l, err := prefixKey(p)
	if err != nil {
		return NoRoute, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return NoRoute, false
	}
	leaf, ok := t.w.get(a, l)
	if !ok {
		return NoRoute, false
	}
	return uint32(leaf) - 1, true
}

// Routes returns all routes sorted by address, then length. It takes the writer mutex.
func (t *Table) Routes() []Route {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil
	}
	return t.w.routes()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

// dummyNode is nodes[0]: no children, one leaf (leaves[0], no route) for every entry.
var dummyNode = node{vec: [2]uint64{sideLeaf: 1}}
