package fwd

import (
	"bytes"
	"sort"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// bigRig is a rig whose pool holds jumbo frames.
func bigRig(t testing.TB, edit ...func(*Config)) *rig {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 512, BufSize: 9216 + 128})
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, append([]func(*Config){func(c *Config) { c.Pool = pool }}, edit...)...)
}

// TestFragmentation: packets without DF over the uplink's MTU of 1000 leave as fragments that
// gopacket decodes, each within the MTU, 8-byte aligned, MF on all but the last, with the options
// whose copied flag is set in every fragment and the others only in the first, and that reassemble
// (by offset) into the original payload.
func TestFragmentation(t *testing.T) {
	routerAlert := layers.IPv4Option{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}} // copied
	recordRoute := layers.IPv4Option{OptionType: 7, OptionLength: 7, OptionData: []byte{4, 0, 0, 0, 0}}
	for _, tc := range []struct {
		name    string
		size    int
		opts    []layers.IPv4Option
		fragOff uint16
		mf      bool
	}{
		{"1001 bytes", 1001 - 28, nil, 0, false},
		{"3000 bytes", 3000 - 28, nil, 0, false},
		{"9000 bytes", 9000 - 28, nil, 0, false},
		{"options", 2500, []layers.IPv4Option{routerAlert, recordRoute}, 0, false},
		{"a fragment fragmented again", 2000, nil, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := bigRig(t)
			p := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, size: tc.size, options: tc.opts, fragOff: tc.fragOff, mf: tc.mf, id: 4242}
			sent := gopacket.NewPacket(p.bytes(t), layers.LayerTypeEthernet, gopacket.Default)
			sip := sent.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			res := g.process(t, 0, p.bytes(t))
			c := g.r.Counters()
			frags := append(res.egress[1], res.generated[1]...)
			if c.Fragmented != 1 || c.Received() != 1 || int(c.Fragments) != len(frags) || len(res.egress[1]) != 1 {
				t.Fatalf("counters %+v, %d+%d fragments", c, len(res.egress[1]), len(res.generated[1]))
			}
			type piece struct {
				off  int
				data []byte
				mf   bool
			}
			var ps []piece
			for i, f := range frags {
				if f.ErrorLayer() != nil {
					t.Fatalf("fragment %d: %v", i, f.ErrorLayer().Error())
				}
				eth := f.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				if frame.MAC(eth.DstMAC) != macGW || frame.MAC(eth.SrcMAC) != macUp || f.Layer(layers.LayerTypeDot1Q) != nil {
					t.Fatalf("fragment %d's L2 header: %v", i, f)
				}
				ip := f.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				checkIP(t, ip, 8)
				if ip.Length > 1000 || ip.Id != 4242 || ip.Flags&layers.IPv4DontFragment != 0 {
					t.Errorf("fragment %d: length %d, id %d, flags %v", i, ip.Length, ip.Id, ip.Flags)
				}
				data := ip.Payload
				if ip.Flags&layers.IPv4MoreFragments != 0 && len(data)%8 != 0 {
					t.Errorf("fragment %d: %d bytes of data, not a multiple of 8", i, len(data))
				}
				var types []uint8
				for _, o := range ip.Options {
					if o.OptionType > 1 {
						types = append(types, uint8(o.OptionType))
					}
				}
				want := []uint8{}
				for _, o := range tc.opts {
					if i == 0 || o.OptionType&0x80 != 0 {
						want = append(want, uint8(o.OptionType))
					}
				}
				if !bytes.Equal(types, want) || ip.IHL != sip.IHL {
					t.Errorf("fragment %d: options %v (IHL %d), want %v (IHL %d)", i, types, ip.IHL, want, sip.IHL)
				}
				ps = append(ps, piece{int(ip.FragOffset) * 8, data, ip.Flags&layers.IPv4MoreFragments != 0})
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i].off < ps[j].off })
			var whole []byte
			next := int(tc.fragOff) * 8
			for i, pc := range ps {
				if pc.off != next {
					t.Fatalf("fragment at %d, want %d", pc.off, next)
				}
				if last := i == len(ps)-1; pc.mf != (!last || tc.mf) {
					t.Errorf("fragment at %d: MF %v", pc.off, pc.mf)
				}
				whole = append(whole, pc.data...)
				next += len(pc.data)
			}
			if !bytes.Equal(whole, sip.Payload) {
				t.Fatalf("reassembled %d bytes differ from the %d sent", len(whole), len(sip.Payload))
			}
			g.checkNoLeak(t)
		})
	}
}

// TestFragmentationOutOfBuffers: a packet whose fragments do not all get a buffer is dropped whole,
// counted, and nothing is lost.
func TestFragmentationOutOfBuffers(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4, BufSize: 9216 + 128})
	g := newRig(t, func(c *Config) { c.Pool = pool })
	res := g.process(t, 0, pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, size: 8000}.bytes(t))
	if c := g.r.Counters(); c.Drops[DropFragment] != 1 || len(res.egress[1])+len(res.generated[1]) != 0 {
		t.Fatalf("counters %+v", c)
	}
	g.checkNoLeak(t)
}

// TestFragmentationBadOptions: a packet whose options cannot be walked is not fragmented.
func TestFragmentationBadOptions(t *testing.T) {
	g := bigRig(t)
	b := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, size: 2000,
		options: []layers.IPv4Option{{OptionType: 7, OptionLength: 7, OptionData: []byte{4, 0, 0, 0, 0}}}}.bytes(t)
	b[18+20+1] = 40 // the option's length runs past the header
	ip := frame.IPv4(b[18:])
	ip.SetChecksum()
	g.process(t, 0, b)
	if c := g.r.Counters(); c.Drops[DropMalformed] != 1 {
		t.Fatalf("counters %+v", c)
	}
	g.checkNoLeak(t)
}
