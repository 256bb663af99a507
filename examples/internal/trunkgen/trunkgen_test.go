package trunkgen

import (
	"context"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// The generator's frames decode in gopacket as the plan says: tagged upstream frames from VLAN hosts
// to 198.18.0.0/15, untagged frames from the gateway to VLAN hosts, valid checksums except the share
// made bad on purpose.
func TestFramesMatchThePlan(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	a, z := xmit.Pipe(pool, &xmit.PipeConfig{Depth: 4096})
	var up, down []gopacket.Packet
	grab := func(dst *[]gopacket.Packet) func(b *frame.Batch) {
		return func(b *frame.Batch) {
			for i := range b.Frames {
				*dst = append(*dst, gopacket.NewPacket(append([]byte(nil), b.Bytes(i)...), layers.LayerTypeEthernet, gopacket.Default))
			}
			a.Send(b)
		}
	}
	g := New(Config{Pool: pool, VLANs: 20, Batch: 64, Bad: 0.1, TrunkSinks: []xmit.Port{z},
		SendUp: grab(&up), SendDown: grab(&down)})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	g.Run(ctx)
	g.Drain()
	if len(up) == 0 || len(down) == 0 {
		t.Fatal("no frames")
	}
	bad := 0
	for _, p := range up {
		q, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if q == nil || ip == nil {
			t.Fatalf("upstream frame: %v", p)
		}
		if ip.DstIP[0] != 198 || ip.DstIP[1]&0xfe != 18 || ip.SrcIP[0] != 10 {
			t.Fatalf("upstream addresses %v -> %v", ip.SrcIP, ip.DstIP)
		}
		if q.VLANIdentifier != 4000 && (q.VLANIdentifier < 101 || q.VLANIdentifier > 120 || int(ip.SrcIP[2]) != int(q.VLANIdentifier)-100) {
			t.Fatalf("VID %d for source %v", q.VLANIdentifier, ip.SrcIP)
		}
		if q.VLANIdentifier == 4000 || ip.TTL == 1 || !checksumOK(p) {
			bad++
		}
	}
	for _, p := range down {
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil || p.Layer(layers.LayerTypeDot1Q) != nil || ip.DstIP[0] != 10 || ip.DstIP[2] < 1 || ip.DstIP[2] > 20 {
			t.Fatalf("downstream frame: %v", p)
		}
	}
	if share := float64(bad) / float64(len(up)); share < 0.03 || share > 0.2 {
		t.Fatalf("bad share upstream %.3f, configured 0.1 over both directions", share)
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers in use after Drain", pool.InUse())
	}
}

func checksumOK(p gopacket.Packet) bool {
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	return frame.Checksum(ip.Contents) == 0
}
