package bench

import "testing"

// BenchmarkExpLAG is the LAG experiment: BenchmarkPipeline's whole pipeline (stage +enqueue)
// with the trunk a two-member aggregate whose member choice is the last stage before the TX queue,
// round-robin (balance-rr: per-worker position, no shared counter) against balance-xor with the
// layer3+4 hash (the frame's addresses and ports read for every frame), plus layer2+3 and layer2
// for scale, and lag=none (the trunk one port, no choice at all) as the floor. Compare with
// benchstat -col /lag.
func BenchmarkExpLAG(b *testing.B) {
	rt, probes := realFIB(b)
	for _, mode := range []string{"none", "rr", "layer3+4", "layer2+3", "layer2"} {
		b.Run("lag="+mode, func(b *testing.B) {
			l := mode
			if l == "none" {
				l = ""
			}
			runPipeline(b, pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, lag: l})
		})
	}
}
