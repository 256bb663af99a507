package bench

import (
	"fmt"
	"github.com/wirespeed/wirespeed/bench/internal/stats"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

// TestPipelineInterleaved is the noise-resistant form of BenchmarkPipeline, BenchmarkExpLAG and
// BenchmarkExpDSA for a shared machine (skipped unless WIRESPEED_PIPELINE_INTERLEAVED names the
// groups to run: stages, lag, dsa, or all). Every configuration of a group is built once; then, for
// WIRESPEED_PIPELINE_ROUNDS rounds (default 21), each configuration forwards
// WIRESPEED_PIPELINE_FRAMES frames (default 131072) in turn, the order rotated every round, and its
// thread CPU time per frame is recorded (refills not counted). A slow drift of the machine's load
// hits all configurations of a round alike, so the per-round ratios to the group's base
// configuration, and the per-round differences between consecutive stages, are the trustworthy
// figures; their medians are reported beside each configuration's median and min-max.
func TestPipelineInterleaved(t *testing.T) {
	which := os.Getenv("WIRESPEED_PIPELINE_INTERLEAVED")
	if which == "" {
		t.Skip("set WIRESPEED_PIPELINE_INTERLEAVED=stages|lag|dsa|all to run (takes minutes; loads the real table)")
	}
	rt, probes := realFIB(t)
	type cfgName struct {
		name string
		cfg  pipeConfig
	}
	groups := map[string][]cfgName{}
	for _, st := range []stage{stageRx, stageFwd, stageLAG, stageEnqueue} {
		groups["stages"] = append(groups["stages"], cfgName{"stage=" + st.String(), pipeConfig{routes: rt, probes: probes, upto: st, lag: "rr"}})
	}
	groups["stages"] = append(groups["stages"],
		cfgName{"enqueue-aggregate", pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, lag: "rr", aggregate: true}},
		cfgName{"hot1024", pipeConfig{routes: rt, probes: probes[:1024], upto: stageEnqueue, lag: "rr"}},
		cfgName{"routed-uniform +fwd", pipeConfig{routes: rt, probes: routedUniformProbes(t), upto: stageFwd, lag: "rr"}},
		cfgName{"routed-uniform", pipeConfig{routes: rt, probes: routedUniformProbes(t), upto: stageEnqueue, lag: "rr"}},
		cfgName{"vlanrouter-table", pipeConfig{routes: vlanrouterFIB(t), probes: vlanrouterProbes(), upto: stageEnqueue, lag: "rr"}})
	for _, l := range []string{"none", "rr", "layer3+4", "layer2+3", "layer2"} {
		c := pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, lag: l}
		if l == "none" {
			c.lag = ""
		}
		groups["lag"] = append(groups["lag"], cfgName{"lag=" + l, c})
	}
	for _, d := range []string{"off", "edsa", "edsa+ptp", "brcm-prepend", "ocelot-8021q"} {
		tg, ptp := strings.CutSuffix(d, "+ptp")
		if tg == "off" {
			tg = ""
		}
		groups["dsa"] = append(groups["dsa"], cfgName{"dsa=" + d, pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, tagger: tg, ptp: ptp}})
	}
	rounds := envInt("WIRESPEED_PIPELINE_ROUNDS", 21)
	frames := envInt("WIRESPEED_PIPELINE_FRAMES", 131072)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out strings.Builder
	fmt.Fprintf(&out, "load average before: %s", loadavg())
	for _, g := range []string{"stages", "lag", "dsa"} {
		if which != "all" && !strings.Contains(which, g) {
			continue
		}
		cs := groups[g]
		ps := make([]*pipeline, len(cs))
		for i, c := range cs {
			ps[i] = newPipeline(t, c.cfg)
			measurePipeline(t, ps[i], pipeBatch*pipeBatches) // warm up
		}
		cpu := make([][]float64, len(cs))
		for r := 0; r < rounds; r++ {
			for j := range cs {
				i := (j + r) % len(cs)
				cpu[i] = append(cpu[i], measurePipeline(t, ps[i], frames))
			}
		}
		for _, p := range ps {
			p.drain()
		}
		fmt.Fprintf(&out, "\n%s: %d rounds x %d frames, cpu-ns/frame; ratio and delta are per-round medians\n", g, rounds, frames)
		fmt.Fprintf(&out, "| config | median | min-max | ratio to %s | delta to previous row |\n|---|---|---|---|---|\n", cs[0].name)
		for i, c := range cs {
			ratio := make([]float64, rounds)
			delta := make([]float64, rounds)
			for r := range rounds {
				ratio[r] = cpu[i][r] / cpu[0][r]
				if i > 0 {
					delta[r] = cpu[i][r] - cpu[i-1][r]
				}
			}
			d := "-"
			if i > 0 {
				d = fmt.Sprintf("%+.1f ns", stats.Median(delta))
			}
			fmt.Fprintf(&out, "| %s | %.1f ns | %.1f-%.1f | %.2f | %s |\n", c.name, stats.Median(cpu[i]), slices.Min(cpu[i]), slices.Max(cpu[i]), stats.Median(ratio), d)
		}
		fmt.Fprintf(&out, "load average after %s: %s", g, loadavg())
	}
	t.Log("\n" + out.String())
	if f := os.Getenv("WIRESPEED_PIPELINE_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// measurePipeline forwards at least n frames through p and returns the thread CPU time per frame,
// refills excluded.
func measurePipeline(tb testing.TB, p *pipeline, n int) float64 {
	in := frame.NewBatch(pipeBatch)
	var cpu time.Duration
	done := 0
	for done < n {
		p.refill(tb, pipeBatches)
		t0 := threadCPUTime()
		for range pipeBatches {
			p.rx.Recv(in)
			p.forward(in)
		}
		cpu += threadCPUTime() - t0
		done += pipeBatch * pipeBatches
	}
	p.checkForwarded(tb, p.recv)
	return float64(cpu.Nanoseconds()) / float64(done)
}

func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
