package main

import (
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// newGenerator plays every host (package trunkgen): VLAN hosts sending upstream through the
// aggregate's members, the upstream sending to VLAN hosts through the uplink; it also sinks what the
// router sends them, checking every frame, and answers the router's ARP requests for the hosts
// and the gateway (through an up member, as the switch on the far side would).
func newGenerator(t *topology, cfg Config) *trunkgen.Generator {
	turn := 0
	return trunkgen.New(trunkgen.Config{
		Pool: t.pool, VLANs: cfg.VLANs, Batch: cfg.Batch, Rate: cfg.Rate, Bad: cfg.Bad,
		TrunkSinks: []xmit.Port{t.hosts[0], t.hosts[1]}, UplinkSink: t.hosts[memberUplink],
		Neighbours: cfg.Neighbours, Gateway: cfg.Gateway, OwnRoutes: cfg.Routes != "",
		SendUp: func(b *frame.Batch) { // the VLAN hosts' traffic and ARP replies
			// The switch on the far side spreads its frames over the members whose link is up.
			turn = (turn + 1) % numMembers
			m := turn
			if !t.hosts[m].LinkUp() {
				m = (m + 1) % numMembers
			}
			t.hosts[m].Send(b)
		},
		SendDown: func(b *frame.Batch) { t.hosts[memberUplink].Send(b) },
	})
}
