package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDPDKFIB compares fib.LookupBatch with DPDK's rte_fib (DIR-24-8, with each of its lookup
// functions) and rte_lpm on the same table and the same keys, through DPDK's own benchmark,
// dpdk-test-fib (Debian package dpdk-dev). It is a measurement: it runs only with
// WIRESPEED_DPDK_FIB=1 and asserts nothing about times.
//
//	WIRESPEED_DPDK_FIB=1 go test -run DPDKFIB -v -timeout 30m
//
// DPDK runs without hugepages by default, on 4 KiB pages as the Go heap is where transparent huge
// pages are madvise-only; WIRESPEED_DPDK_FIB_HUGE=1 gives it hugepages, as a DPDK deployment has.
// WIRESPEED_DPDK_FIB_VARIANTS keeps the DPDK variants whose names contain one of its comma-separated
// substrings ("(s1),(s2),(s3),(v)": the DIR-24-8 lookups without rte_lpm, whose table build takes
// minutes per run and most of a full run's time).
//
// The table is the real one of BenchmarkFIBLookup (next hop n written as n+1: 0 is DPDK's miss); the
// keys are its two probe sets of 2^20 addresses. dpdk-test-fib builds its table, then times one pass
// over the key file with 64-key bursts (rte_fib_lookup_bulk, rte_lpm_lookup_bulk) and prints the
// average TSC cycles per lookup. The first pass is that figure for a key file holding the keys once;
// the warm figure comes from a second run over the keys repeated warmPasses times:
// warm = (warmPasses*avg(repeated) - first) / (warmPasses-1). wirespeed is timed the same way: a fresh
// table, one pass of 64-key LookupBatch calls, then warmPasses-1 more. Cycles become nanoseconds with
// the TSC frequency DPDK's EAL reports. Rounds are interleaved; medians are printed.
//
// dpdk-test-fib 22.11 reads each key with inet_pton and uses the four bytes as a host-order integer,
// so the keys are written byte-reversed; a dry run (-u) dumps what it parsed and is compared with the
// keys before anything is timed.
func TestDPDKFIB(t *testing.T) {
	if os.Getenv("WIRESPEED_DPDK_FIB") != "1" {
		t.Skip("set WIRESPEED_DPDK_FIB=1 to run this measurement")
	}
	bin, err := exec.LookPath("dpdk-test-fib")
	if err != nil {
		t.Skip("dpdk-test-fib not found (Debian package dpdk-dev)")
	}
	rounds := 3
	if s := os.Getenv("WIRESPEED_DPDK_FIB_ROUNDS"); s != "" {
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("WIRESPEED_DPDK_FIB_ROUNDS=%q: want a positive integer", s)
		}
	}
	const warmPasses = 4
	routes := realRoutes(t)
	dir := t.TempDir()
	routeFile := filepath.Join(dir, "routes")
	writeLines(t, routeFile, len(routes), func(w *bufio.Writer, i int) {
		fmt.Fprintf(w, "%s %d\n", routes[i].p, routes[i].nh+1)
	})

	// The DPDK variants: the DIR-24-8 lookup functions (the vector one needs AVX-512 and EAL's
	// permission to use it), and rte_lpm, which -c runs beside the default DIR-24-8 one.
	type variant struct {
		name string
		args []string
		pick string // the line whose average it reports
	}
	variants := []variant{
		{"rte_fib dir24_8 scalar macro (s1)", []string{"-v", "s1"}, "AVG FIB lookup"},
		{"rte_fib dir24_8 scalar inline (s2)", []string{"-v", "s2"}, "AVG FIB lookup"},
		{"rte_fib dir24_8 scalar uni (s3)", []string{"-v", "s3"}, "AVG FIB lookup"},
		{"rte_lpm", []string{"-c"}, "AVG LPM lookup"},
	}
	if cpuHas("avx512f") && cpuHas("avx512dq") {
		variants = append(variants, variant{"rte_fib dir24_8 avx512 (v)", []string{"-v", "v"}, "AVG FIB lookup"})
	}
	if f := os.Getenv("WIRESPEED_DPDK_FIB_VARIANTS"); f != "" { // e.g. "(s1),(v)": a subset, for a shorter run
		variants = slices.DeleteFunc(variants, func(v variant) bool {
			for _, sub := range strings.Split(f, ",") {
				if sub = strings.TrimSpace(sub); sub != "" && strings.Contains(v.name, sub) {
					return false
				}
			}
			return true
		})
		if len(variants) == 0 {
			t.Fatalf("WIRESPEED_DPDK_FIB_VARIANTS=%q names none of the DPDK variants", f)
		}
	}

	tscHz := 0.0
	for _, kind := range []string{"random", "intable"} {
		probes := makeProbes(routes, kind)
		once := filepath.Join(dir, kind+".1")
		rep := filepath.Join(dir, kind+".rep")
		key := func(w *bufio.Writer, i int) {
			a := probes[i%len(probes)]
			fmt.Fprintf(w, "%d.%d.%d.%d\n", byte(a), byte(a>>8), byte(a>>16), byte(a>>24))
		}
		writeLines(t, once, len(probes), key)
		writeLines(t, rep, warmPasses*len(probes), key)

		// What dpdk-test-fib parsed must be the probes.
		dump := filepath.Join(dir, kind+".dump")
		out := runTestFIB(t, bin, "-f", routeFile, "-t", once, "-u", dump)
		if tscHz == 0 {
			tscHz = tscFrequency(t, out)
		}
		checkDump(t, dump, probes)

		firstNs := make(map[string][]float64)
		warmNs := make(map[string][]float64)
		var names []string
		add := func(name string, first, warm float64) {
			if _, ok := firstNs[name]; !ok {
				names = append(names, name)
			}
			firstNs[name] = append(firstNs[name], first)
			warmNs[name] = append(warmNs[name], warm)
		}
		var outBuf [64]uint32
		for r := range rounds {
			// wirespeed: a fresh table, then the passes.
			ws := buildWirespeed(routes)()
			pass := func() time.Duration {
				t0 := time.Now()
				for j := 0; j+len(outBuf) <= len(probes); j += len(outBuf) {
					ws.LookupBatch(probes[j:j+len(outBuf)], outBuf[:])
					sink += outBuf[0]
				}
				return time.Since(t0)
			}
			first := pass()
			var rest time.Duration
			for range warmPasses - 1 {
				rest += pass()
			}
			n := float64(len(probes))
			add("wirespeed fib.LookupBatch", float64(first.Nanoseconds())/n, float64(rest.Nanoseconds())/n/(warmPasses-1))

			for _, v := range variants {
				c1 := avgCycles(t, runTestFIB(t, bin, append([]string{"-f", routeFile, "-t", once}, v.args...)...), v.pick)
				cr := avgCycles(t, runTestFIB(t, bin, append([]string{"-f", routeFile, "-t", rep}, v.args...)...), v.pick)
				warm := (warmPasses*cr - c1) / (warmPasses - 1)
				add(v.name, c1/tscHz*1e9, warm/tscHz*1e9)
			}
			t.Logf("keys=%s round %d/%d done", kind, r+1, rounds)
		}
		med := func(xs []float64) float64 {
			ys := slices.Clone(xs)
			slices.Sort(ys)
			return ys[len(ys)/2]
		}
		wsFirst, wsWarm := med(firstNs[names[0]]), med(warmNs[names[0]])
		for _, name := range names {
			f, w := med(firstNs[name]), med(warmNs[name])
			if w <= 0 { // the two runs' difference is noise: no warm figure
				t.Logf("keys=%-7s %-36s first pass %6.2f ns/lookup  warm    n/a              wirespeed/this: first %.2fx",
					kind, name, f, wsFirst/f)
				continue
			}
			t.Logf("keys=%-7s %-36s first pass %6.2f ns/lookup  warm %6.2f ns/lookup  wirespeed/this: first %.2fx warm %.2fx",
				kind, name, f, w, wsFirst/f, wsWarm/w)
		}
	}
	pages := "DPDK on 4 KiB pages (--no-huge)"
	if os.Getenv("WIRESPEED_DPDK_FIB_HUGE") == "1" {
		pages = "DPDK on 2 MiB hugepages"
	}
	t.Logf("TSC %.3f GHz (DPDK EAL), %d rounds, medians; %s", tscHz/1e9, rounds, pages)
}

func writeLines(t *testing.T, path string, n int, line func(w *bufio.Writer, i int)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		line(w, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// runTestFIB runs dpdk-test-fib without devices, and without hugepages unless
// WIRESPEED_DPDK_FIB_HUGE=1 (then DPDK takes 2 GiB of the machine's 2 MiB pages: set
// vm.nr_hugepages and mount hugetlbfs first; its files there are unlinked once mapped, so the
// pages go back when it exits), and returns its output.
func runTestFIB(t *testing.T, bin string, args ...string) string {
	t.Helper()
	eal := []string{"-m", "2048", "--no-pci", "--log-level=eal,debug",
		"--force-max-simd-bitwidth=512", "--file-prefix", fmt.Sprintf("wsfib%d", os.Getpid()), "--"}
	if os.Getenv("WIRESPEED_DPDK_FIB_HUGE") != "1" {
		eal = append([]string{"--no-huge"}, eal...)
	} else {
		eal = append([]string{"--huge-unlink"}, eal...) // no hugepage files left behind once it exits
	}
	cmd := exec.Command(bin, append(eal, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var tscRE = regexp.MustCompile(`TSC frequency is ~(\d+) KHz`)

func tscFrequency(t *testing.T, out string) float64 {
	t.Helper()
	m := tscRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("dpdk-test-fib did not report the TSC frequency:\n%s", tail(out, 2000))
	}
	khz, _ := strconv.ParseFloat(m[1], 64)
	return khz * 1e3
}

func avgCycles(t *testing.T, out, pick string) float64 {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), pick+" "); ok {
			c, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			return c
		}
	}
	t.Fatalf("dpdk-test-fib printed no %q line:\n%s", pick, tail(out, 2000))
	return 0
}

// checkDump compares the keys dpdk-test-fib dumped (most significant byte first) with probes.
func checkDump(t *testing.T, path string, probes []uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(probes) {
		t.Fatalf("dpdk-test-fib parsed %d keys, want %d", len(lines), len(probes))
	}
	for i, l := range lines {
		a := probes[i]
		if want := fmt.Sprintf("%d.%d.%d.%d", byte(a>>24), byte(a>>16), byte(a>>8), byte(a)); l != want {
			t.Fatalf("key %d: dpdk-test-fib parsed %s, want %s", i, l, want)
		}
	}
}

func cpuHas(flag string) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "flags") {
			return slices.Contains(strings.Fields(l), flag)
		}
	}
	return false
}
