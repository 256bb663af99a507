package main

import (
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// newGenerator plays every host (package trunkgen): VLAN hosts sending upstream through the
// aggregate's members, the upstream sending to VLAN hosts through the uplink; it also sinks what the
// router sends them, checking every frame, and answers the router's ARP requests for the hosts
// and the gateway (through an up member, as the switch on the far side would). Under LACP the
// switch runs a controller of its own (t.partner): it sends only on the members that controller
// has distributing, and its receive side hands the router's PDUs to it.
func newGenerator(t *topology, cfg Config) *trunkgen.Generator {
	turn := 0
	sinks := []xmit.Port{t.hosts[0], t.hosts[1]}
	if t.partner != nil {
		sinks = []xmit.Port{t.taps[0], t.taps[1]}
	}
	return trunkgen.New(trunkgen.Config{
		Pool: t.pool, VLANs: cfg.VLANs, Batch: cfg.Batch, Rate: cfg.Rate, Bad: cfg.Bad,
		TrunkSinks: sinks, UplinkSink: t.hosts[memberUplink],
		Neighbours: cfg.Neighbours, Gateway: cfg.Gateway, OwnRoutes: cfg.Routes != "", Until: trunkgen.Until(t.router, cfg.settle, cfg.Bad > 0),
		SendUp: func(b *frame.Batch) { // the VLAN hosts' traffic and ARP replies
			turn = (turn + 1) % numMembers
			if t.partner != nil {
				// Under LACP the switch sends only on members its controller has collecting and
				// distributing; with none, its frames go nowhere (never generated).
				m := turn
				if !t.partner.Usable(m) {
					m = (m + 1) % numMembers
				}
				if !t.partner.Usable(m) {
					b.Free()
					return
				}
				t.far[m].Send(b)
				return
			}
			// The switch on the far side spreads its frames over the members whose link is up.
			m := turn
			if !t.hosts[m].LinkUp() {
				m = (m + 1) % numMembers
			}
			t.hosts[m].Send(b)
		},
		SendDown: func(b *frame.Batch) { t.hosts[memberUplink].Send(b) },
	})
}
