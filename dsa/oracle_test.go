package dsa

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A naive reference written straight from the kernel layouts with slices and appends: what the
// switch sends the CPU for a frame that entered on (sw, port), and how the switch reads a frame
// the CPU tagged. It shares no code with the package.

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rxWidth is how many source ports the RX field can name (it may differ from the TX width).
var rxWidth = map[string]int{
	"dsa": 32, "edsa": 32, "brcm": 32, "brcm-prepend": 32, "qca": 8, "mtk": 8, "ksz8795": 4,
	"ksz9477": 8, "ksz9893": 8, "lan937x": 8, "rtl4a": 256, "rtl8_4": 16, "rtl8_4t": 16,
	"ocelot-8021q": 16, "vsc73xx-8021q": 16, "sja1105": 16, "ar9331": 16, "gswip": 8,
	"hellcreek": 4, "lan9303": 4, "trailer": 8, "none": 1,
}

// switchWidth is how many switch indexes the RX tag can name.
var switchWidth = map[string]int{"dsa": 32, "edsa": 32, "ocelot-8021q": 8, "vsc73xx-8021q": 8, "sja1105": 8}

// naiveRx: the frame the switch hands the CPU (forwarded, untagged ingress, no timestamp).
func naiveRx(name string, inner []byte, sw, port int) []byte {
	mac, rest := inner[:12], inner[12:]
	sa := func(tag ...byte) []byte { return cat(mac, tag, rest) }
	p := byte(port)
	switch name {
	case "dsa":
		return sa(3<<6|byte(sw), p<<3, 0, 0) // FORWARD, dev, port<<3, VID 0
	case "edsa":
		return sa(0xda, 0xda, 0, 0, 3<<6|byte(sw), p<<3, 0, 0)
	case "brcm":
		return sa(0, 0, 0, p)
	case "brcm-prepend":
		return cat([]byte{0, 0, 0, p}, inner)
	case "qca":
		return sa(0x80, p) // version 2 in bits 15:14
	case "mtk":
		return sa(0, p, 0, 0)
	case "ksz8795", "ksz9477", "ksz9893", "lan937x", "hellcreek":
		return cat(inner, []byte{p})
	case "rtl4a":
		return sa(0x88, 0x99, 0xa0, p)
	case "rtl8_4":
		return sa(0x88, 0x99, 0x04, 0, 0, 0, 0, p)
	case "rtl8_4t":
		return cat(inner, []byte{0x88, 0x99, 0x04, 0, 0, 0, 0, p})
	case "ocelot-8021q", "vsc73xx-8021q", "sja1105":
		vid := 0xc00 | sw<<6 | port
		tp := []byte{0x81, 0x00}
		if name == "sja1105" {
			tp = []byte{0xda, 0xdb}
		}
		return sa(tp[0], tp[1], byte(vid>>8), byte(vid))
	case "ar9331":
		h := 0x4000 | 0x30 | port
		return cat([]byte{byte(h), byte(h >> 8)}, inner)
	case "gswip":
		return cat([]byte{0, 0, 0, 0, 0, 0, 0, p << 4}, inner)
	case "lan9303":
		return sa(0x81, 0, 0, p)
	case "trailer":
		return cat(inner, []byte{0x80, p, 0, 0})
	case "none":
		return cat(inner)
	}
	panic(name)
}

// naiveTx reads a CPU-tagged frame as the switch would: the untagged frame and the destination
// mask (the port number as a one-bit mask for single-port formats).
func naiveTx(name string, f []byte) (inner []byte, mask uint32) {
	n := len(f)
	unSA := func(k int) []byte { return cat(f[:12], f[12+k:]) }
	switch name {
	case "dsa":
		return unSA(4), 1 << (f[13] >> 3)
	case "edsa":
		return unSA(8), 1 << (f[17] >> 3)
	case "brcm":
		return unSA(4), uint32(f[14]&1)<<8 | uint32(f[15])
	case "brcm-prepend":
		return f[4:], uint32(f[2]&1)<<8 | uint32(f[3])
	case "qca":
		return unSA(2), uint32(f[13] & 0x7f)
	case "mtk":
		return unSA(4), uint32(f[13] & 0x3f)
	case "ksz8795":
		return f[:n-1], uint32(f[n-1] & 0x1f)
	case "ksz9893":
		return f[:n-1], uint32(f[n-1] & 7)
	case "ksz9477":
		return f[:n-2], uint32(f[n-1] & 0x7f)
	case "lan937x":
		return f[:n-2], uint32(f[n-1])
	case "hellcreek":
		return f[:n-1], uint32(f[n-1])
	case "rtl4a":
		return unSA(4), uint32(f[15])
	case "rtl8_4":
		return unSA(8), uint32(f[18]&7)<<8 | uint32(f[19])
	case "rtl8_4t":
		return f[:n-8], uint32(f[n-2]&7)<<8 | uint32(f[n-1])
	case "ocelot-8021q", "vsc73xx-8021q", "sja1105":
		return unSA(4), 1 << (f[15] & 0xf)
	case "ar9331":
		return f[2:], 1 << (f[0] & 0xf)
	case "gswip":
		return f[4:], uint32(f[3]&0x7e) >> 1
	case "lan9303":
		return unSA(4), 1 << (f[15] & 3)
	case "trailer":
		return f[:n-4], uint32(f[n-3])
	case "none":
		return f, 1
	}
	panic(name)
}

// randomInner is an Ethernet frame of random length and bytes whose EtherType is not one a
// tagger treats specially (VLAN TPIDs, EDSA, Realtek, 0xDADB).
func randomInner(r *rand.Rand) []byte {
	b := make([]byte, 14+r.IntN(120))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[12], b[13] = 0x08, 0x00
	return b
}

func TestOracleRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tg := mustTagger(t, name)
			spec := tg.Spec()
			for range 300 {
				inner := randomInner(r)
				port := r.IntN(min(spec.Ports, rxWidth[name]))
				sw := 0
				if w := switchWidth[name]; w > 0 {
					sw = r.IntN(w)
				}
				// RX: the switch's frame decodes to the inner frame and the source port.
				_, b := oneFrame(t, naiveRx(name, inner, sw, port))
				in, err := decodeInfo(tg, b, 0)
				if err != nil || int(in.Port) != port || int(in.Switch) != sw || !bytes.Equal(b.Bytes(0), inner) {
					t.Fatalf("rx port %d sw %d: %+v %v\n got % x\nwant % x", port, sw, in, err, b.Bytes(0), inner)
				}
				// TX: the switch reads our tag as the port, and the frame behind it unchanged
				// (padded with zeros where the format pads).
				setFrame(b, 0, inner)
				b.Frames[0].Resize(len(inner))
				d := Dest{Ports: Port(port), Switch: uint8(min(sw, 7))}
				if name == "mtk" {
					d.Switch = 0
				}
				if err := tg.Encode(b, 0, d); err != nil {
					t.Fatalf("tx port %d: %v", port, err)
				}
				got, mask := naiveTx(name, b.Bytes(0))
				want := inner
				if len(want) < spec.PadTo {
					want = cat(inner, make([]byte, spec.PadTo-len(inner)))
				}
				if name != "none" && mask != uint32(Port(port)) || !bytes.Equal(got, want) {
					t.Fatalf("tx port %d: mask %#x\n got % x\nwant % x", port, mask, got, want)
				}
			}
		})
	}
}

// Formats whose TX and RX tags are the same layout decode what they encode.
func TestSymmetricRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name string
		d    func(port, sw int) Dest
	}{
		{"dsa", func(p, s int) Dest { return Dest{Ports: Port(p), Switch: uint8(s), Flags: DestForward} }},
		{"edsa", func(p, s int) Dest { return Dest{Ports: Port(p), Switch: uint8(s), Flags: DestForward} }},
		{"ocelot-8021q", func(p, s int) Dest { return Dest{Ports: Port(p), Switch: uint8(s & 7)} }},
		{"sja1105", func(p, s int) Dest { return Dest{Ports: Port(p), Switch: uint8(s & 7), Prio: 7} }},
		{"lan9303", func(p, s int) Dest { return Dest{Ports: Port(p)} }},
	}
	for _, c := range cases {
		tg := mustTagger(t, c.name)
		for range 200 {
			inner := randomInner(r)
			port, sw := r.IntN(tg.Spec().Ports), r.IntN(32)
			d := c.d(port, sw)
			_, b := oneFrame(t, inner)
			if err := tg.Encode(b, 0, d); err != nil {
				t.Fatal(c.name, err)
			}
			in, err := decodeInfo(tg, b, 0)
			if err != nil || int(in.Port) != port || (c.name != "lan9303" && in.Switch != d.Switch) ||
				!bytes.Equal(b.Bytes(0), inner) {
				t.Fatalf("%s: %+v %v", c.name, in, err)
			}
		}
	}
}

// gopacket decodes the inner frame after Decode: Ethernet, IPv4, UDP and the payload intact, and
// for Marvell's tagged frames the restored 802.1Q tag.
func TestGopacketInner(t *testing.T) {
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{192, 0, 2, 1}, DstIP: []byte{198, 51, 100, 7}}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 9999}
	_ = udp.SetNetworkLayerForChecksum(ip)
	payload := gopacket.Payload("wirespeed dsa test payload")
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, payload); err != nil {
		t.Fatal(err)
	}
	inner := buf.Bytes()
	check := func(t *testing.T, data []byte, vid int) {
		t.Helper()
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("gopacket: %v", el.Error())
		}
		if vid >= 0 {
			q, ok := pkt.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
			if !ok || int(q.VLANIdentifier) != vid {
				t.Fatalf("want 802.1Q VID %d, got %v", vid, pkt.Layer(layers.LayerTypeDot1Q))
			}
		}
		gip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		gudp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if gip == nil || gudp == nil || !gip.SrcIP.Equal(ip.SrcIP) || !gip.DstIP.Equal(ip.DstIP) ||
			gudp.DstPort != 9999 || string(gudp.Payload) != string(payload) {
			t.Fatalf("inner frame damaged: %v", pkt)
		}
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tg := mustTagger(t, name)
			_, b := oneFrame(t, naiveRx(name, inner, 0, 1%max(1, min(tg.Spec().Ports, rxWidth[name]))))
			if _, err := decodeInfo(tg, b, 0); err != nil {
				t.Fatal(err)
			}
			check(t, b.Bytes(0), -1)
		})
	}
	// Marvell "tagged": the switch folded VID 42 into its tag; after Decode gopacket sees it again.
	tg := mustTagger(t, "edsa")
	tagged := cat(inner[:12], []byte{0xda, 0xda, 0, 0, 3<<6 | 0x20, 2 << 3, 0, 42}, inner[12:])
	_, b := oneFrame(t, tagged)
	if _, err := decodeInfo(tg, b, 0); err != nil {
		t.Fatal(err)
	}
	check(t, b.Bytes(0), 42)
	// tag_8021q frames are VLAN frames to gopacket: it reads the standalone VID we encode.
	tg = mustTagger(t, "ocelot-8021q")
	_, b = oneFrame(t, inner)
	if err := tg.Encode(b, 0, Dest{Ports: Port(5), Switch: 2}); err != nil {
		t.Fatal(err)
	}
	check(t, b.Bytes(0), int(Tag8021QVID(2, 5)))
}
