package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
	"github.com/wirespeed/wirespeed/bench/internal/stats"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestE2EScaling is vlanrouter with N workers end to end, for each N of WIRESPEED_E2E_WORKERS
// (default 1,2,4,... up to half the CPUs): every veth of the topology has N queues; on AF_XDP the
// router binds one socket per queue (worker i: queue i on both interfaces), on AF_PACKET N sockets
// per interface share a PACKET_FANOUT group. Workers are pinned to CPUs 0..N-1 and N senders, one
// per CPU N..2N-1, offer 1000 flows each (the XDP sender's frames land on the receive queue of the
// CPU that sends them, the sendmmsg sender's on the queue the flow hash picks). It reports Mpps at
// the sink per worker count, the ratio to one worker and the router CPUs' busy time.
//
//	cd bench && WIRESPEED_E2E=1 WIRESPEED_E2E_WORKERS=1,2,4,8 go test ./e2e -run E2EScaling -v -timeout 30m
//
// WIRESPEED_E2E_RUNS (default 3) interleaved rounds, WIRESPEED_E2E_SECONDS (default 2) per run,
// WIRESPEED_E2E_CASES a comma-separated list of substrings of "/sender/forwarder/N/" to keep.
// A worker count that needs more than the machine's CPUs still runs, with CPUs shared (said in
// the output); its figures then say nothing about scaling.
func TestE2EScaling(t *testing.T) {
	if os.Getenv("WIRESPEED_E2E") != "1" {
		t.Skip("end-to-end experiments run only with WIRESPEED_E2E=1 (root)")
	}
	nettest.RequirePriv(t)
	ncpu := runtime.NumCPU()
	var counts []int
	if s := os.Getenv("WIRESPEED_E2E_WORKERS"); s != "" {
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 64 {
				t.Fatalf("WIRESPEED_E2E_WORKERS: %q is not a worker count (1-64)", f)
			}
			counts = append(counts, n)
		}
	} else {
		for n := 1; 2*n <= max(2, ncpu); n *= 2 {
			counts = append(counts, n)
		}
	}
	runs := envInt("WIRESPEED_E2E_RUNS", 3)
	window := time.Duration(envInt("WIRESPEED_E2E_SECONDS", 2)) * time.Second
	warm := 700 * time.Millisecond

	bin := filepath.Join(t.TempDir(), "vlanrouter")
	if out, err := exec.Command("go", "build", "-C", "../..", "-o", bin, "./examples/vlanrouter").CombinedOutput(); err != nil {
		t.Fatalf("go build vlanrouter: %v\n%s", err, out)
	}
	var dst []netip.Prefix
	for i := 1; i <= 20; i++ {
		dst = append(dst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24))
	}
	type key struct {
		sender gen.Engine
		fwd    string // afxdp, afpacket
		n      int
	}
	var cases []key
	for _, s := range []gen.Engine{gen.EngineXDP, gen.EngineAFPacket} {
		for _, f := range []string{"afxdp", "afpacket"} {
			for _, n := range counts {
				cases = append(cases, key{s, f, n})
			}
		}
	}
	if f := os.Getenv("WIRESPEED_E2E_CASES"); f != "" {
		cases = slices.DeleteFunc(cases, func(c key) bool {
			k := fmt.Sprintf("/%s/%s/%d/", c.sender, c.fwd, c.n)
			for _, sub := range strings.Split(f, ",") {
				if strings.Contains(k, sub) {
					return false
				}
			}
			return true
		})
	}
	// One topology per worker count: the queues of a veth are fixed when it is made.
	topos := map[int]*topo{}
	for _, c := range cases {
		if topos[c.n] == nil {
			topos[c.n] = newTopoQueues(t, c.n)
		}
	}
	cpuList := func(first, n int) string {
		var l []string
		for i := range n {
			l = append(l, strconv.Itoa((first+i)%ncpu))
		}
		return strings.Join(l, ",")
	}

	type point struct{ mpps, offered, busy float64 }
	res := map[key][]point{}
	runOne := func(c key) (point, error) {
		tp := topos[c.n]
		// NAPI on the router's receiving veth for the XDP sender's frames, unless AF_XDP attaches
		// its own program.
		var pass link.Link
		if c.sender == gen.EngineXDP && c.fwd != "afxdp" {
			l, err := attach(tp.rtr, tp.rin, 2)
			if err != nil {
				return point{}, err
			}
			pass = l
			defer pass.Close()
		}
		r := newVLANRouter(bin, tp.rtr.Name, c.fwd, tp.rout, tp.rin, "-workers", strconv.Itoa(c.n))
		r.cpus = cpuList(0, c.n)
		if err := r.start(); err != nil {
			return point{}, err
		}
		var gens []*gen.Generator
		for i := range c.n {
			g, err := gen.Open(&gen.Config{Netns: tp.gen.Name, Interface: tp.g0, Engine: c.sender, Flows: 1000,
				Src: netip.AddrFrom4([4]byte{198, 18, byte(i), 1}), Dst: dst, DstMAC: tp.rinMAC,
				CPU: (c.n + i) % ncpu, Nice: nice(), Repeat: 1 << 20})
			if err != nil {
				for _, g := range gens {
					g.Stop()
				}
				t.Log(r.stop())
				return point{}, err
			}
			gens = append(gens, g)
		}
		for _, g := range gens {
			g.Start()
		}
		time.Sleep(warm)
		s0, _ := rxPackets(tp.sink, tp.s0)
		b0, n0 := cpuTimesAll(ncpu)
		t0 := time.Now()
		time.Sleep(window)
		s1, err := rxPackets(tp.sink, tp.s0)
		el := time.Since(t0)
		b1, n1 := cpuTimesAll(ncpu)
		offered := 0.0
		for _, g := range gens {
			offered += g.Stop().PPS()
		}
		log := r.stop()
		if err == nil && s1 == s0 {
			err = fmt.Errorf("nothing reached the sink")
		}
		if err != nil {
			return point{}, fmt.Errorf("%w; %s", err, log)
		}
		busy := 0.0
		for i := range min(c.n, ncpu) {
			busy += 100 * float64(b1[i]-b0[i]) / float64(max(1, n1[i]-n0[i]))
		}
		smp := point{mpps: float64(s1-s0) / el.Seconds() / 1e6, offered: offered / 1e6, busy: busy / float64(min(c.n, ncpu))}
		t.Logf("%s/%s/%d: %.3f Mpps at the sink, %.3f offered, router CPUs %.0f %% busy; %s", c.sender, c.fwd, c.n, smp.mpps, smp.offered, smp.busy, log)
		return smp, nil
	}
	start := time.Now()
	for round := range runs {
		for _, c := range cases {
			s, err := runOne(c)
			if err != nil {
				t.Errorf("round %d %s/%s/%d: %v", round, c.sender, c.fwd, c.n, err)
				continue
			}
			res[c] = append(res[c], s)
		}
	}
	var md strings.Builder
	fmt.Fprintf(&md, "| sender | forwarder | workers | Mpps at sink, median | min - max | x 1 worker | Mpps per worker | offered Mpps | router CPUs busy %% |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cases {
		v := res[c]
		if len(v) == 0 {
			fmt.Fprintf(&md, "| %s | %s | %d | failed | | | | | |\n", c.sender, c.fwd, c.n)
			continue
		}
		col := func(f func(point) float64) []float64 {
			var xs []float64
			for _, s := range v {
				xs = append(xs, f(s))
			}
			return xs
		}
		mpps := col(func(s point) float64 { return s.mpps })
		ratio := ""
		if one := res[key{c.sender, c.fwd, 1}]; len(one) > 0 && c.n != 1 {
			var xs []float64
			for _, s := range one {
				xs = append(xs, s.mpps)
			}
			ratio = fmt.Sprintf("%.2f", stats.Median(mpps)/stats.Median(xs))
		}
		fmt.Fprintf(&md, "| %s | vlanrouter, %s | %d | %.3f | %.3f - %.3f | %s | %.3f | %.3f | %.0f |\n", c.sender, c.fwd, c.n,
			stats.Median(mpps), slices.Min(mpps), slices.Max(mpps), ratio, stats.Median(mpps)/float64(c.n),
			stats.Median(col(func(s point) float64 { return s.offered })), stats.Median(col(func(s point) float64 { return s.busy })))
	}
	fmt.Fprintf(&md, "\n%d rounds, %v per run after %v warm-up, %d CPUs; workers on CPUs 0..N-1, one sender per CPU N..2N-1", runs, window, warm, ncpu)
	if 2*slices.Max(counts) > ncpu {
		fmt.Fprintf(&md, " (wrapping around: with more than %d workers CPUs are shared and the figures do not show scaling)", ncpu/2)
	}
	fmt.Fprintf(&md, "; %v in all.\n", time.Since(start).Round(time.Second))
	t.Logf("\n%s", md.String())
	if out := os.Getenv("WIRESPEED_E2E_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// cpuTimesAll reads the busy and total jiffies of CPUs 0..n-1 from /proc/stat.
func cpuTimesAll(n int) (busy, total []uint64) {
	busy, total = make([]uint64, n), make([]uint64, n)
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		i, err := strconv.Atoi(f[0][3:])
		if err != nil || i >= n {
			continue
		}
		for k, s := range f[1:9] {
			v, _ := strconv.ParseUint(s, 10, 64)
			total[i] += v
			if k != 3 && k != 4 { // idle, iowait
				busy[i] += v
			}
		}
	}
	return
}
