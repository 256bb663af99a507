package bench

import (
	"strings"
	"testing"
)

// BenchmarkExpDSA is the DSA experiment: BenchmarkPipeline's whole pipeline (stage +enqueue,
// no LAG) with the trunk and the uplink either plain Ethernet ports (dsa=off) or two ports of a
// switch behind one conduit link, whose tagger decodes every received frame (dsa.Conduit.Recv: tag
// stripped, Frame.Port = switch port; the demux then classifies per frame) and tags every frame it
// sends (dsa.Conduit.Send). edsa is examples/dsarouter's default (an 8-byte tag after the source
// address, which moves the MAC addresses both ways); brcm-prepend a 4-byte tag in front of the
// frame (no MAC move); ocelot-8021q a VLAN-based tag_8021q. edsa+ptp is edsa with PTP receive
// timestamping on for the trunk's switch port (dsa.Conduit.EnableTimestamps), so that Recv also
// classifies every frame for PTP (a per-packet classifier; none of these frames is PTP). Compare with benchstat -col /dsa.
func BenchmarkExpDSA(b *testing.B) {
	rt, probes := realFIB(b)
	for _, tg := range []string{"off", "edsa", "edsa+ptp", "brcm-prepend", "ocelot-8021q"} {
		b.Run("dsa="+tg, func(b *testing.B) {
			t, ptp := strings.CutSuffix(tg, "+ptp")
			if t == "off" {
				t = ""
			}
			runPipeline(b, pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, tagger: t, ptp: ptp})
		})
	}
}
