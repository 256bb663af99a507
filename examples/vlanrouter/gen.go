package main

import (
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// newGenerator plays every host (package trunkgen): VLAN hosts sending upstream through the trunk,
// the upstream sending to VLAN hosts through the uplink; it also sinks what the router sends them,
// checking every frame, and answers the router's ARP requests for the hosts and the gateway.
func newGenerator(t *topology, cfg Config) *trunkgen.Generator {
	return trunkgen.New(trunkgen.Config{
		Pool: t.pool, VLANs: cfg.VLANs, Batch: cfg.Batch, Rate: cfg.Rate, Bad: cfg.Bad,
		TrunkSinks: []xmit.Port{t.hosts[portTrunk]}, UplinkSink: t.hosts[portUplink],
		Neighbours: cfg.Neighbours, Gateway: cfg.Gateway, OwnRoutes: cfg.Routes != "", Until: trunkgen.Until(t.router, cfg.settle, cfg.Bad > 0),
		SendUp:   func(b *frame.Batch) { t.hosts[portTrunk].Send(b) },
		SendDown: func(b *frame.Batch) { t.hosts[portUplink].Send(b) },
	})
}

// udp writes an IPv4/UDP packet of total length 46 at d (tests build frames with it).
func udp(d []byte, src, dst uint32, ttl byte) { trunkgen.UDP(d, src, dst, ttl) }
