package fib

import (
	"bufio"
	"compress/gzip"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// realTableFile returns the path of the full Internet table shipped in bart's module zip (the bench
// module's real table), or "" when the module cache does not hold it.
func realTableFile() string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	ms, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "github.com", "gaissmai", "bart@*", "internal", "tests", "testdata", "prefixes.txt.gz"))
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1]
}

// readRealTable reads the IPv4 prefixes of path with the bench module's next hops (one of 16 by a hash
// of the prefix).
func readRealTable(t *testing.T, path string) []Route {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Route
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		p, err := netip.ParsePrefix(strings.TrimSpace(sc.Text()))
		if err != nil || !p.Addr().Is4() {
			continue
		}
		p = p.Masked()
		a, l, _ := prefixKey(p)
		h := (uint64(a)<<8 | uint64(l)) * 0x9E3779B97F4A7C15
		rs = append(rs, Route{p, uint32(h>>40) % 16})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// levels returns the number of node levels a lookup of a walks below the direct-pointing array.
func (s *snapshot) levels(a uint32) int {
	e := s.dir[a>>(32-dirBits)][(a>>slotShift)&(chunkSize-1)]
	if e&nodeBit == 0 {
		return 0
	}
	p := e & rootMask
	v := (a >> (32 - dpBits - 6)) & 63
	if e&kidsBit == 0 || s.roots[p+1]&(1<<v) == 0 {
		return 1
	}
	k := uint64(a) << 4
	n := &s.nodes[rootChildBase(s.rootHalves, p)+uint32(bits.OnesCount64(s.roots[p+1]&(2<<v-1)))-1]
	for lv, sh := 2, uint(rootShift-6); ; lv, sh = lv+1, sh-6 {
		v := (k >> sh) & 63
		if n.vec[sideChild]&(1<<v) == 0 {
			return lv
		}
		n = &s.nodes[n.base[sideChild]+uint32(bits.OnesCount64(n.vec[sideChild]&(2<<v-1)))-1]
	}
}

// TestRealTableLevels is a measurement aid, skipped unless WIRESPEED_FIB_LEVELS=1: on the real table
// (bart's module zip in the module cache) it prints, for the bench module's two key sets (uniform
// random, and random hosts of random table prefixes), how many keys a lookup answers from the
// direct-pointing array (0 levels) or after 1, 2, 3 node levels, and the table's size. It checks that
// LookupBatch and LookupU32 agree with the naive reference on every key.
func TestRealTableLevels(t *testing.T) {
	if os.Getenv("WIRESPEED_FIB_LEVELS") != "1" {
		t.Skip("set WIRESPEED_FIB_LEVELS=1 to run this measurement")
	}
	path := realTableFile()
	if path == "" {
		t.Fatal("bart's prefixes.txt.gz is not in the module cache (go -C bench mod download)")
	}
	routes := readRealTable(t, path)
	tb := New()
	if err := tb.Replace(routes); err != nil {
		t.Fatal(err)
	}
	ref := refFrom(routes)
	s := tb.cur.Load()
	st := tb.Stats()
	t.Logf("%d routes, %d nodes, %d leaves, %d chunks, %.2f lookup B/prefix", st.Routes, st.Nodes, st.Leaves, st.Chunks, float64(st.LookupBytes)/float64(st.Routes))
	for _, kind := range []string{"random", "intable"} {
		rng := rand.New(rand.NewPCG(42, uint64(len(kind))))
		ps := make([]uint32, 1<<20)
		for i := range ps {
			if kind == "random" {
				ps[i] = rng.Uint32()
				continue
			}
			r := routes[rng.IntN(len(routes))]
			a, l, _ := prefixKey(r.Prefix)
			ps[i] = a | rng.Uint32()&^maskOf(l)
		}
		var hist [5]int
		for _, a := range ps {
			hist[min(s.levels(a), 4)]++
		}
		t.Logf("keys=%-7s levels 0: %5.1f%%  1: %5.1f%%  2: %5.1f%%  3: %5.1f%%  4+: %5.1f%%", kind,
			100*float64(hist[0])/float64(len(ps)), 100*float64(hist[1])/float64(len(ps)),
			100*float64(hist[2])/float64(len(ps)), 100*float64(hist[3])/float64(len(ps)), 100*float64(hist[4])/float64(len(ps)))
		checkAgainst(t, tb, ref, ps)
	}
}
