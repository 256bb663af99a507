package fib

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// The in-package benchmarks use a synthetic table of 900,000 routes with the real table's prefix-length
// distribution (the real table is benchmarked in the bench module, beside bart and DIR-24-8).
var benchTable struct {
	once   sync.Once
	routes []Route
	t      *Table
	keys   map[string][]uint32
}

const benchProbes = 1 << 20

func benchSetup(b *testing.B) ([]Route, *Table, map[string][]uint32) {
	benchTable.once.Do(func() {
		rng := rand.New(rand.NewPCG(21, 22))
		benchTable.routes = synthTable(rng, 900000, 16)
		benchTable.t = New()
		if err := benchTable.t.Replace(benchTable.routes); err != nil {
			panic(err)
		}
		benchTable.keys = map[string][]uint32{"random": make([]uint32, benchProbes), "intable": make([]uint32, benchProbes)}
		for i := range benchProbes {
			benchTable.keys["random"][i] = rng.Uint32()
			a, l, _ := prefixKey(benchTable.routes[rng.IntN(len(benchTable.routes))].Prefix)
			benchTable.keys["intable"][i] = a | rng.Uint32()&^maskOf(l)
		}
	})
	return benchTable.routes, benchTable.t, benchTable.keys
}

var benchSink uint32

func BenchmarkLookup(b *testing.B) {
	_, t, keys := benchSetup(b)
	for _, k := range []string{"random", "intable"} {
		ps := keys[k]
		addrs := make([]netip.Addr, len(ps))
		for i, a := range ps {
			addrs[i] = u32ToAddr(a)
		}
		b.Run("api=Lookup/keys="+k, func(b *testing.B) {
			b.ReportAllocs()
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := t.Lookup(addrs[i&(benchProbes-1)])
				s += nh
			}
			benchSink += s
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
		b.Run("api=LookupU32/keys="+k, func(b *testing.B) {
			b.ReportAllocs()
			var s uint32
			for i := 0; i < b.N; i++ {
				nh, _ := t.LookupU32(ps[i&(benchProbes-1)])
				s += nh
			}
			benchSink += s
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// BenchmarkLookupBatch: ns/op is per address, in batches of 64.
func BenchmarkLookupBatch(b *testing.B) {
	_, t, keys := benchSetup(b)
	for _, k := range []string{"random", "intable"} {
		ps := keys[k]
		b.Run("keys="+k, func(b *testing.B) {
			b.ReportAllocs()
			var out [64]uint32
			for i := 0; i < b.N; i += len(out) {
				j := i & (benchProbes - 1)
				m := min(len(out), b.N-i)
				t.LookupBatch(ps[j:j+m], out[:m])
			}
			benchSink += out[0]
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// BenchmarkFIBUpdate measures insert/delete churn on a copy of the 900,000-route table while a reader
// goroutine runs batch lookups: one op is one Insert or Delete (mode=single) or one change of a 256-change
// Apply (mode=apply256). It reports updates/s and the reader's lookups/s during the churn.
func BenchmarkFIBUpdate(b *testing.B) {
	routes, _, keys := benchSetup(b)
	for _, mode := range []string{"single", "apply256"} {
		b.Run("mode="+mode, func(b *testing.B) {
			t := New()
			if err := t.Replace(routes); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(31, 32))
			s := newSampler(realLenWeights)
			churn := make([]Change, 4096)
			for i := range churn {
				base, _, _ := prefixKey(routes[rng.IntN(len(routes))].Prefix)
				l := s.draw(rng)
				churn[i] = Change{Prefix: pfx(base|rng.Uint32()&0xFFF, l), NextHop: rng.Uint32N(16)}
			}
			var stop atomic.Bool
			var lookups atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out [64]uint32
				ps := keys["random"]
				n := 0
				for j := 0; !stop.Load(); j = (j + 64) & (benchProbes - 1) {
					t.LookupBatch(ps[j:j+64], out[:])
					n += 64
				}
				lookups.Add(int64(n))
			}()
			b.ReportAllocs()
			b.ResetTimer()
			if mode == "single" {
				for i := 0; i < b.N; i++ {
					c := churn[(i/2)%len(churn)]
					if i%2 == 0 {
						_ = t.Insert(c.Prefix, c.NextHop)
					} else {
						_ = t.Delete(c.Prefix)
					}
				}
			} else {
				batch := make([]Change, 256)
				for i := 0; i < b.N; i += len(batch) {
					m := min(len(batch), b.N-i)
					for k := range m {
						c := churn[((i+k)/2)%len(churn)]
						c.Delete = (i+k)%2 == 1
						batch[k] = c
					}
					if err := t.Apply(batch[:m]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			stop.Store(true)
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			b.ReportMetric(float64(lookups.Load())/b.Elapsed().Seconds(), "reader-lookups/s")
		})
	}
}

// BenchmarkReplace: bulk build of the 900,000-route table; ns/op is per table.
func BenchmarkReplace(b *testing.B) {
	routes, _, _ := benchSetup(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var t Table
		if err := t.Replace(routes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(routes))/b.Elapsed().Seconds(), "routes/s")
}
