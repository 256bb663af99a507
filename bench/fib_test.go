package bench

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gaissmai/bart"
	"github.com/wirespeed/wirespeed/fib"
)

// The real table: 901,899 IPv4 prefixes (and IPv6 lines, skipped) of a full Internet table, shipped in
// bart's module zip. bart is a dependency of this module, so building these tests puts the file in the
// module cache; it is located there at run time and never copied into this repository. A test or
// benchmark that needs it fails (it does not skip) when the file cannot be read.
const realTableRel = "internal/tests/testdata/prefixes.txt.gz"

type route struct {
	p  netip.Prefix
	nh uint32
}

// numNextHops models the next hops of the real table (it has none): each prefix gets one of 16 next hops
// chosen by a hash of the prefix, i.e. uncorrelated with its neighbours. Real tables correlate (adjacent
// prefixes often share a peer), which helps poptrie's leaf compression; this is the pessimistic case.
const numNextHops = 16

var realTable struct {
	once   sync.Once
	routes []route
	err    error
}

// bartDir returns bart's directory in the module cache: from go list, else from go mod download (which
// fetches the module if the cache lost it), else from the version this binary was built with.
func bartDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gaissmai/bart").Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" {
		return dir, nil
	}
	var dl struct{ Dir, Error string }
	if out, derr := exec.Command("go", "mod", "download", "-json", "github.com/gaissmai/bart").Output(); derr == nil &&
		json.Unmarshal(out, &dl) == nil && dl.Dir != "" {
		return dl.Dir, nil
	} else if err == nil {
		err = fmt.Errorf("go mod download: %v %s", derr, dl.Error)
	}
	// Without the go command: the module cache and the version this binary was built with.
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		if gp := os.Getenv("GOPATH"); gp != "" {
			cache = filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod")
		} else if home, herr := os.UserHomeDir(); herr == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok && cache != "" {
		for _, d := range bi.Deps {
			if d.Path == "github.com/gaissmai/bart" {
				return filepath.Join(cache, "github.com", "gaissmai", "bart@"+d.Version), nil
			}
		}
	}
	return "", fmt.Errorf("go list: %v", err)
}

func loadRealTable() ([]route, error) {
	realTable.once.Do(func() {
		realTable.routes, realTable.err = readRealTable()
	})
	return realTable.routes, realTable.err
}

func readRealTable() ([]route, error) {
	dir, err := bartDir()
	if err != nil {
		return nil, fmt.Errorf("cannot locate module github.com/gaissmai/bart: %w", err)
	}
	f, err := os.Open(filepath.Join(dir, realTableRel))
	if err != nil {
		return nil, fmt.Errorf("real table missing from bart's module: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var routes []route
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		p, err := netip.ParsePrefix(strings.TrimSpace(sc.Text()))
		if err != nil || !p.Addr().Is4() {
			continue
		}
		p = p.Masked()
		h := uint64(u32(p.Addr()))<<8 | uint64(p.Bits())
		h *= 0x9E3779B97F4A7C15
		routes = append(routes, route{p, uint32(h>>40) % numNextHops})
	}
	return routes, sc.Err()
}

func realRoutes(tb testing.TB) []route {
	tb.Helper()
	return realRoutesFrom(tb, loadRealTable)
}

// realRoutesFrom returns the routes load gives, or fails tb.
func realRoutesFrom(tb testing.TB, load func() ([]route, error)) []route {
	tb.Helper()
	rs, err := load()
	if err != nil {
		tb.Fatalf("the real table (bart's module, %s) is not available: %v; `go -C bench mod download` puts it in the module cache", realTableRel, err)
	}
	if len(rs) < 100000 {
		tb.Fatalf("the real table (bart's module, %s) has only %d IPv4 prefixes", realTableRel, len(rs))
	}
	return rs
}

const numProbes = 1 << 20 // 1,048,576 pre-generated probes per key kind

// makeProbes returns uniformly random addresses (random) or random hosts inside random table prefixes
// (intable).
func makeProbes(routes []route, kind string) []uint32 {
	rng := rand.New(rand.NewPCG(42, uint64(len(kind))))
	ps := make([]uint32, numProbes)
	for i := range ps {
		if kind == "random" {
			ps[i] = rng.Uint32()
			continue
		}
		r := routes[rng.IntN(len(routes))]
		host := rng.Uint32()
		if r.p.Bits() > 0 {
			host &= ^uint32(0) >> r.p.Bits()
		}
		ps[i] = u32(r.p.Addr()) | host
	}
	return ps
}

func toAddrs(ps []uint32) []netip.Addr {
	out := make([]netip.Addr, len(ps))
	for i, a := range ps {
		out[i] = netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
	}
	return out
}

// measure builds a structure, returning it with its build time and the heap bytes it retains.
func measure[T any](build func() T) (T, time.Duration, uint64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	x := build()
	d := time.Since(t0)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(x)
	runtime.KeepAlive(build) // the input it captured was live before, too
	return x, d, m1.HeapAlloc - min(m1.HeapAlloc, m0.HeapAlloc)
}

func buildWirespeed(routes []route) func() *fib.Table {
	in := make([]fib.Route, len(routes))
	for i, r := range routes {
		in[i] = fib.Route{Prefix: r.p, NextHop: r.nh}
	}
	return func() *fib.Table {
		t := fib.New()
		if err := t.Replace(in); err != nil {
			panic(err)
		}
		return t
	}
}

func buildBartFast(routes []route) func() *bart.Fast[uint32] {
	return func() *bart.Fast[uint32] {
		t := new(bart.Fast[uint32])
		for _, r := range routes {
			t.Insert(r.p, r.nh)
		}
		return t
	}
}

func buildBartTable(routes []route) func() *bart.Table[uint32] {
	return func() *bart.Table[uint32] {
		t := new(bart.Table[uint32])
		for _, r := range routes {
			t.Insert(r.p, r.nh)
		}
		return t
	}
}

type built struct {
	dur   time.Duration
	bytes uint64
}

func (bl built) report(b *testing.B, n int) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	b.ReportMetric(float64(bl.bytes)/float64(n), "B/prefix")
	b.ReportMetric(float64(bl.dur.Microseconds())/1000, "build-ms")
}

var sink uint32

// BenchmarkFIBLookup compares longest-prefix-match lookups over the real full table: wirespeed's fib
// (single lookups from a netip.Addr and from a uint32, and 64-address batches), bart.Fast and bart.Table
// v0.30.0 (netip.Addr), and a plain DIR-24-8 (uint32). ns/op is per lookup. B/prefix is the heap the built
// structure retains divided by the number of prefixes; for wirespeed, lookup-B/prefix counts only what
// lookups read (the poptrie), B/prefix also its writer-side route store. build-ms is the time to build
// the structure from a list of routes.
func BenchmarkFIBLookup(b *testing.B) {
	routes := realRoutes(b)
	n := len(routes)
	keys := map[string][]uint32{"random": makeProbes(routes, "random"), "intable": makeProbes(routes, "intable")}
	addrs := map[string][]netip.Addr{"random": toAddrs(keys["random"]), "intable": toAddrs(keys["intable"])}
	kinds := []string{"random", "intable"}

	// Each structure is built by the first sub-benchmark that uses it, so that a run of one
	// sub-benchmark (-bench 'FIBLookup/impl=dir248/', under callgrind, say) builds only that one.
	var ws *fib.Table
	var wsBuilt built
	var lookupBytes int
	wsOnce := sync.OnceFunc(func() {
		var d time.Duration
		var by uint64
		ws, d, by = measure(buildWirespeed(routes))
		wsBuilt = built{d, by}
		lookupBytes = ws.Stats().LookupBytes
	})
	wsRun := func(name string, k string, body func(b *testing.B)) {
		b.Run("impl="+name+"/keys="+k, func(b *testing.B) {
			wsOnce()
			b.ResetTimer()
			b.ReportAllocs()
			body(b)
			wsBuilt.report(b, n)
			b.ReportMetric(float64(lookupBytes)/float64(n), "lookup-B/prefix")
		})
	}
	for _, k := range kinds {
		wsRun("wirespeed", k, func(b *testing.B) {
			ps := addrs[k]
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := ws.Lookup(ps[i&(numProbes-1)])
				s += nh
			}
			sink += s
		})
		wsRun("wirespeed-u32", k, func(b *testing.B) {
			ps := keys[k]
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := ws.LookupU32(ps[i&(numProbes-1)])
				s += nh
			}
			sink += s
		})
		wsRun("wirespeed-batch", k, func(b *testing.B) {
			ps := keys[k]
			const chunk = 64
			var out [chunk]uint32
			var s uint32
			for i := 0; i < b.N; i += chunk {
				j := i & (numProbes - 1)
				m := min(chunk, b.N-i)
				ws.LookupBatch(ps[j:j+m], out[:m])
				s += out[0]
			}
			sink += s
		})
	}

	var bf *bart.Fast[uint32]
	var bfBuilt built
	bfOnce := sync.OnceFunc(func() {
		var d time.Duration
		var by uint64
		bf, d, by = measure(buildBartFast(routes))
		bfBuilt = built{d, by}
	})
	for _, k := range kinds {
		b.Run("impl=bart/keys="+k, func(b *testing.B) {
			bfOnce()
			b.ResetTimer()
			ps := addrs[k]
			b.ReportAllocs()
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := bf.Lookup(ps[i&(numProbes-1)])
				s += nh
			}
			sink += s
			bfBuilt.report(b, n)
		})
	}
	bf = nil

	var bt *bart.Table[uint32]
	var btBuilt built
	btOnce := sync.OnceFunc(func() {
		var d time.Duration
		var by uint64
		bt, d, by = measure(buildBartTable(routes))
		btBuilt = built{d, by}
	})
	for _, k := range kinds {
		b.Run("impl=bart-table/keys="+k, func(b *testing.B) {
			btOnce()
			b.ResetTimer()
			ps := addrs[k]
			b.ReportAllocs()
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := bt.Lookup(ps[i&(numProbes-1)])
				s += nh
			}
			sink += s
			btBuilt.report(b, n)
		})
	}
	bt = nil

	var d *dir248
	var dBuilt built
	dOnce := sync.OnceFunc(func() {
		var dur time.Duration
		var by uint64
		d, dur, by = measure(func() *dir248 { return newDIR248(routes) })
		dBuilt = built{dur, by}
	})
	for _, k := range kinds {
		b.Run("impl=dir248/keys="+k, func(b *testing.B) {
			dOnce()
			b.ResetTimer()
			ps := keys[k]
			b.ReportAllocs()
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := d.lookup(ps[i&(numProbes-1)])
				s += nh
			}
			sink += s
			dBuilt.report(b, n)
		})
	}
}

// recordingTB is a testing.TB that records Skip and Fatal calls (each ends the calling goroutine, as
// the real ones do).
type recordingTB struct {
	testing.TB
	skipped, failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Skip(...any)           { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) SkipNow()              { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recordingTB) Fatal(...any)          { r.failed = true; runtime.Goexit() }
func (r *recordingTB) FailNow()              { r.failed = true; runtime.Goexit() }
func (r *recordingTB) Errorf(string, ...any) { r.failed = true }

// TestRealTableMissingFails: when the real table cannot be read (or is too small), the FIB tests fail
// rather than skip, so that CI cannot pass without them; and the table is there.
func TestRealTableMissingFails(t *testing.T) {
	for _, load := range []func() ([]route, error){
		func() ([]route, error) { return nil, os.ErrNotExist },
		func() ([]route, error) { return make([]route, 10), nil },
	} {
		rec := &recordingTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			realRoutesFrom(rec, load)
		}()
		<-done
		if !rec.failed || rec.skipped {
			t.Errorf("a missing real table: failed %v, skipped %v; want a failure", rec.failed, rec.skipped)
		}
	}
	if rs, err := loadRealTable(); err != nil || len(rs) < 900000 {
		t.Fatalf("the real table: %d routes, %v", len(rs), err)
	}
}

// TestFIBRealTableAgrees checks wirespeed's fib against bart.Fast and the DIR-24-8 reference on the real
// table: every one of 2M probes (random and in-table) gets the same answer from all three, and a sample
// also matches a naive longest-first search.
func TestFIBRealTableAgrees(t *testing.T) {
	routes := realRoutes(t)
	ws := buildWirespeed(routes)()
	bf := buildBartFast(routes)()
	d := newDIR248(routes)
	naive := make([]map[uint32]uint32, 33)
	for i := range naive {
		naive[i] = map[uint32]uint32{}
	}
	for _, r := range routes {
		naive[r.p.Bits()][u32(r.p.Addr())] = r.nh
	}
	if ws.Len() != len(routes) {
		t.Fatalf("wirespeed has %d prefixes, the file %d", ws.Len(), len(routes))
	}
	for _, kind := range []string{"random", "intable"} {
		ps := makeProbes(routes, kind)
		out := make([]uint32, len(ps))
		ws.LookupBatch(ps, out)
		for i, a := range ps {
			got, ok := ws.LookupU32(a)
			addr := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
			want, wok := bf.Lookup(addr)
			if !wok {
				want = fib.NoRoute
			}
			dv, dok := d.lookup(a)
			if !dok {
				dv = fib.NoRoute
			}
			if got != want || ok != wok || dv != want || out[i] != want {
				t.Fatalf("%s %v: wirespeed %d/%v batch %d, bart %d/%v, dir248 %d", kind, addr, got, ok, out[i], want, wok, dv)
			}
			if i%16 == 0 {
				nv := fib.NoRoute
				for l := 32; l >= 0; l-- {
					m := uint32(0)
					if l > 0 {
						m = ^uint32(0) << (32 - l)
					}
					if v, ok := naive[l][a&m]; ok {
						nv = v
						break
					}
				}
				if nv != got {
					t.Fatalf("%s %v: wirespeed %d, naive %d", kind, addr, got, nv)
				}
			}
		}
	}
}

// BenchmarkFIBBuild: one op (ns/op) is a full build of the real table from a list of routes (wirespeed: bulk
// Replace; bart: Insert per prefix, it has no bulk load; dir248: paint by length). B/prefix is the heap the
// last built structure retains, per prefix.
func BenchmarkFIBBuild(b *testing.B) {
	routes := realRoutes(b)
	n := len(routes)
	bench := func(name string, build func() any) {
		b.Run("impl="+name, func(b *testing.B) {
			b.ReportAllocs()
			var x any
			for i := 0; i < b.N; i++ {
				x = nil
				x = build()
			}
			b.StopTimer()
			x = nil
			_, _, bytes := measure(build)
			b.ReportMetric(float64(bytes)/float64(n), "B/prefix")
			runtime.KeepAlive(x)
		})
	}
	ws := buildWirespeed(routes)
	bench("wirespeed", func() any { return ws() })
	bf := buildBartFast(routes)
	bench("bart", func() any { return bf() })
	bt := buildBartTable(routes)
	bench("bart-table", func() any { return bt() })
	bench("dir248", func() any { return newDIR248(routes) })
}

// TestFIBLookupInterleaved is a measurement aid for noisy shared machines, skipped unless
// WIRESPEED_FIB_INTERLEAVED=1: it times 2^20 lookups per implementation in turn, repeats the round, and
// prints per implementation the minimum and median ns per lookup and the median over rounds of the ratio
// to bart in the same round (so slow drifts of the machine's load cancel out). It asserts nothing.
//
//	WIRESPEED_FIB_INTERLEAVED=1 go test -run FIBLookupInterleaved -v
func TestFIBLookupInterleaved(t *testing.T) {
	if os.Getenv("WIRESPEED_FIB_INTERLEAVED") != "1" {
		t.Skip("set WIRESPEED_FIB_INTERLEAVED=1 to run this measurement")
	}
	routes := realRoutes(t)
	ws := buildWirespeed(routes)()
	bf := buildBartFast(routes)()
	bt := buildBartTable(routes)()
	d := newDIR248(routes)
	rounds := 31
	if s := os.Getenv("WIRESPEED_FIB_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, kind := range []string{"random", "intable"} {
		ps := makeProbes(routes, kind)
		as := toAddrs(ps)
		var out [64]uint32
		impls := []struct {
			name string
			run  func() uint32
		}{
			{"wirespeed", func() (s uint32) {
				for _, a := range as {
					nh, _ := ws.Lookup(a)
					s += nh
				}
				return
			}},
			{"wirespeed-u32", func() (s uint32) {
				for _, a := range ps {
					nh, _ := ws.LookupU32(a)
					s += nh
				}
				return
			}},
			{"wirespeed-batch", func() (s uint32) {
				for j := 0; j < len(ps); j += len(out) {
					ws.LookupBatch(ps[j:j+len(out)], out[:])
					s += out[0]
				}
				return
			}},
			{"bart", func() (s uint32) {
				for _, a := range as {
					nh, _ := bf.Lookup(a)
					s += nh
				}
				return
			}},
			{"bart-table", func() (s uint32) {
				for _, a := range as {
					nh, _ := bt.Lookup(a)
					s += nh
				}
				return
			}},
			{"dir248", func() (s uint32) {
				for _, a := range ps {
					nh, _ := d.lookup(a)
					s += nh
				}
				return
			}},
		}
		ns := make([][]float64, len(impls))
		ratio := make([][]float64, len(impls))
		for range rounds {
			cur := make([]float64, len(impls))
			for i, im := range impls {
				t0 := time.Now()
				sink += im.run()
				cur[i] = float64(time.Since(t0).Nanoseconds()) / float64(len(ps))
				ns[i] = append(ns[i], cur[i])
			}
			for i := range impls {
				ratio[i] = append(ratio[i], cur[i]/cur[3])
			}
		}
		for i, im := range impls {
			slices.Sort(ns[i])
			slices.Sort(ratio[i])
			t.Logf("keys=%-7s impl=%-15s min %7.2f ns  median %7.2f ns  median ratio to bart %.3f",
				kind, im.name, ns[i][0], ns[i][len(ns[i])/2], ratio[i][len(ratio[i])/2])
		}
	}
}

// TestFIBBatchPasses is a measurement aid, skipped unless WIRESPEED_FIB_PASSES=1: it times
// fib.LookupBatch (64-address calls) and the Go DIR-24-8 the way TestDPDKFIB times wirespeed, per key
// set: a freshly built table, one pass over the 2^20 keys (first pass), then passes-1 more (warm,
// averaged). It repeats this WIRESPEED_FIB_ROUNDS times (default 5) and prints the medians and the
// median per-round ratio of the batch to the DIR-24-8. It asserts nothing.
//
//	WIRESPEED_FIB_PASSES=1 go test -run FIBBatchPasses -v
func TestFIBBatchPasses(t *testing.T) {
	if os.Getenv("WIRESPEED_FIB_PASSES") != "1" {
		t.Skip("set WIRESPEED_FIB_PASSES=1 to run this measurement")
	}
	rounds := 5
	if s := os.Getenv("WIRESPEED_FIB_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	const passes = 4
	routes := realRoutes(t)
	med := func(xs []float64) float64 {
		ys := slices.Clone(xs)
		slices.Sort(ys)
		return ys[len(ys)/2]
	}
	for _, kind := range []string{"random", "intable"} {
		ps := makeProbes(routes, kind)
		n := float64(len(ps))
		var wsF, wsW, dF, dW, rF, rW []float64
		var out [64]uint32
		for range rounds {
			ws := buildWirespeed(routes)()
			pass := func() float64 {
				t0 := time.Now()
				for j := 0; j+len(out) <= len(ps); j += len(out) {
					ws.LookupBatch(ps[j:j+len(out)], out[:])
					sink += out[0]
				}
				return float64(time.Since(t0).Nanoseconds()) / n
			}
			f, w := pass(), 0.0
			for range passes - 1 {
				w += pass() / (passes - 1)
			}
			ws = nil
			d := newDIR248(routes)
			dpass := func() float64 {
				t0 := time.Now()
				var s uint32
				for _, a := range ps {
					nh, _ := d.lookup(a)
					s += nh
				}
				sink += s
				return float64(time.Since(t0).Nanoseconds()) / n
			}
			df, dw := dpass(), 0.0
			for range passes - 1 {
				dw += dpass() / (passes - 1)
			}
			d = nil
			wsF, wsW, dF, dW = append(wsF, f), append(wsW, w), append(dF, df), append(dW, dw)
			rF, rW = append(rF, f/df), append(rW, w/dw)
		}
		t.Logf("keys=%-7s batch first %6.2f warm %6.2f ns/lookup  dir248 first %6.2f warm %6.2f  batch/dir248 first %.2fx warm %.2fx",
			kind, med(wsF), med(wsW), med(dF), med(dW), med(rF), med(rW))
	}
}
