package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/wirespeed/wirespeed/bench/internal/sender"
)

// ipSum is an independent IPv4 header checksum: the one's complement sum over the header, checksum
// field included, must be 0xffff.
func ipSumOK(h []byte) bool {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

func TestFramesDecodeWithGopacket(t *testing.T) {
	routes := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.0.2.7/32")}
	cases := []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"untagged sizes", Config{Flows: 6, Sizes: []int{60, 64, 1514}, Dst: routes}},
		{"dot1q spread", Config{Flows: 40, VLAN: 101, VLANs: 20, Dst: routes, TTL: 9}},
		{"qinq", Config{Flows: 5, VLAN: 300, InnerVLAN: 42, Sizes: []int{64, 128}, Src: netip.MustParseAddr("10.9.8.7")}},
		{"macs", Config{SrcMAC: [6]byte{0xaa, 1, 2, 3, 4, 5}, DstMAC: [6]byte{0xbb, 6, 7, 8, 9, 10}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := Frames(&tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := tc.cfg.defaults()
			if len(frames) != c.Flows {
				t.Fatalf("%d frames for %d flows", len(frames), c.Flows)
			}
			for i, b := range frames {
				want := c.FlowOf(i)
				if len(b) != want.Size {
					t.Fatalf("flow %d: %d bytes, want %d", i, len(b), want.Size)
				}
				p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
				if el := p.ErrorLayer(); el != nil {
					t.Fatalf("flow %d: gopacket: %v", i, el.Error())
				}
				eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				if !bytes.Equal(eth.SrcMAC, c.SrcMAC[:]) || !bytes.Equal(eth.DstMAC, c.DstMAC[:]) {
					t.Errorf("flow %d: MACs %v → %v", i, eth.SrcMAC, eth.DstMAC)
				}
				var tags []*layers.Dot1Q
				for _, l := range p.Layers() {
					if q, ok := l.(*layers.Dot1Q); ok {
						tags = append(tags, q)
					}
				}
				switch {
				case want.VLAN == 0:
					if len(tags) != 0 || eth.EthernetType != layers.EthernetTypeIPv4 {
						t.Errorf("flow %d: untagged frame has %d tags, type %v", i, len(tags), eth.EthernetType)
					}
				case want.Inner == 0:
					if len(tags) != 1 || tags[0].VLANIdentifier != want.VLAN || eth.EthernetType != layers.EthernetTypeDot1Q {
						t.Errorf("flow %d: want one 802.1Q tag %d, got %v %v", i, want.VLAN, eth.EthernetType, tags)
					}
				default:
					if len(tags) != 2 || eth.EthernetType != layers.EthernetTypeQinQ || tags[0].VLANIdentifier != want.VLAN ||
						tags[0].Type != layers.EthernetTypeDot1Q || tags[1].VLANIdentifier != want.Inner {
						t.Errorf("flow %d: want QinQ %d/%d, got %v %v", i, want.VLAN, want.Inner, eth.EthernetType, tags)
					}
				}
				ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				if !ok {
					t.Fatalf("flow %d: no IPv4 layer", i)
				}
				if !ipSumOK(ip.Contents) {
					t.Errorf("flow %d: bad IPv4 header checksum %#04x", i, ip.Checksum)
				}
				if ip.TTL != c.TTL || ip.Protocol != layers.IPProtocolUDP || int(ip.Length) != want.Size-(len(b)-len(ip.Contents)-len(ip.Payload)) {
					t.Errorf("flow %d: TTL %d proto %v length %d", i, ip.TTL, ip.Protocol, ip.Length)
				}
				if src, _ := netip.AddrFromSlice(ip.SrcIP.To4()); src != c.Src {
					t.Errorf("flow %d: source %v, want %v", i, src, c.Src)
				}
				if dst, _ := netip.AddrFromSlice(ip.DstIP.To4()); dst != want.Dst {
					t.Errorf("flow %d: destination %v, want %v", i, dst, want.Dst)
				}
				udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
				if !ok {
					t.Fatalf("flow %d: no UDP layer", i)
				}
				if uint16(udp.SrcPort) != want.SrcPort || udp.DstPort != 9 || int(udp.Length) != int(ip.Length)-20 {
					t.Errorf("flow %d: UDP %v → %v length %d", i, udp.SrcPort, udp.DstPort, udp.Length)
				}
			}
		})
	}
}

// The default frame is the one the receive benchmarks have always used (sender.Frame), so moving
// BenchmarkRecvXDPLive onto this package's XDP engine changed nothing on the wire.
func TestDefaultFrameIsSenderFrame(t *testing.T) {
	frames, err := Frames(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frames[0], sender.Frame(0, 60)) {
		t.Fatalf("default frame\n%x\nwant\n%x", frames[0], sender.Frame(0, 60))
	}
}

func TestFlowSpreadAcrossRoutes(t *testing.T) {
	routes, err := ParseRoutes(strings.NewReader("10.0.1.0/24\n10.0.2.0/24\n# comment\n\n172.16.0.0/30 via 1.2.3.4\n203.0.113.9/32\n198.51.100.0/31\n"))
	if err != nil {
		t.Fatal(err)
	}
	const perPrefix = 7
	c, err := (&Config{Flows: perPrefix * len(routes), Dst: routes}).defaults()
	if err != nil {
		t.Fatal(err)
	}
	count := map[netip.Prefix]int{}
	seen := map[netip.Addr]int{}
	for i := range c.Flows {
		f := c.FlowOf(i)
		var hit netip.Prefix
		for _, p := range routes {
			if p.Contains(f.Dst) {
				hit = p
			}
		}
		if !hit.IsValid() {
			t.Fatalf("flow %d: %v is in no route", i, f.Dst)
		}
		count[hit]++
		seen[f.Dst]++
		if hit.Bits() < 31 {
			a := binary.BigEndian.Uint32(f.Dst.AsSlice())
			mask := uint32(1)<<(32-hit.Bits()) - 1
			if a&mask == 0 || a&mask == mask {
				t.Errorf("flow %d: %v is the network or broadcast address of %v", i, f.Dst, hit)
			}
		}
	}
	for _, p := range routes {
		if count[p] != perPrefix {
			t.Errorf("%v got %d flows, want %d", p, count[p], perPrefix)
		}
	}
	// Distinct addresses: a /24 holds 7 distinct hosts, a /30 only 2, a /32 one, a /31 two.
	want := map[string]int{"10.0.1.0/24": 7, "10.0.2.0/24": 7, "172.16.0.0/30": 2, "203.0.113.9/32": 1, "198.51.100.0/31": 2}
	for _, p := range routes {
		n := 0
		for a := range seen {
			if p.Contains(a) {
				n++
			}
		}
		if n != want[p.String()] {
			t.Errorf("%v: %d distinct destinations, want %d", p, n, want[p.String()])
		}
	}
}

func TestVLANSpread(t *testing.T) {
	c, err := (&Config{Flows: 60, VLAN: 101, VLANs: 20}).defaults()
	if err != nil {
		t.Fatal(err)
	}
	n := map[uint16]int{}
	for i := range c.Flows {
		n[c.FlowOf(i).VLAN]++
	}
	for v := uint16(101); v <= 120; v++ {
		if n[v] != 3 {
			t.Errorf("VID %d: %d flows, want 3", v, n[v])
		}
	}
	if len(n) != 20 {
		t.Errorf("%d VIDs used, want 20", len(n))
	}
}

func TestParseRoutesErrors(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "10.0.0.0/33\n", "2001:db8::/32\n", "nonsense\n", "10.0.0.0/8\n300.1.1.1/32\n"} {
		if _, err := ParseRoutes(strings.NewReader(in)); err == nil {
			t.Errorf("ParseRoutes(%q) accepted", in)
		}
	}
	got, err := ParseRoutes(strings.NewReader("10.1.2.3/8\n192.0.2.1\n"))
	if err != nil || len(got) != 2 || got[0] != netip.MustParsePrefix("10.0.0.0/8") || got[1] != netip.MustParsePrefix("192.0.2.1/32") {
		t.Errorf("ParseRoutes = %v, %v", got, err)
	}
}

func TestConfigErrors(t *testing.T) {
	bad := []Config{
		{Engine: "pktgen"},
		{Flows: -1},
		{Sizes: []int{41}},
		{VLAN: 5, Sizes: []int{45}}, // a tag needs 46
		{Sizes: []int{9001}},
		{VLAN: 4095},
		{VLAN: 4090, VLANs: 10},
		{InnerVLAN: 7}, // an inner tag needs an outer one
		{Src: netip.MustParseAddr("::1")},
		{Dst: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")}},
		{Rate: -1},
		{Batch: 2000},
		{Nice: -21},
	}
	for _, c := range bad {
		if _, err := Frames(&c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Frames(%+v) = %v, want ErrBadConfig", c, err)
		}
	}
	if _, err := Frames(&Config{VLAN: 5, InnerVLAN: 6, Sizes: []int{50}}); err != nil {
		t.Errorf("a 50-byte QinQ frame was refused: %v", err)
	}
}

// TestPacer drives the pacer with a simulated clock: a sender that takes 10 µs per call must end up
// at the configured rate, and a sender slower than the rate is never told to wait.
func TestPacer(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		chunk int
		call  time.Duration
	}{
		{10_000, 10, 10 * time.Microsecond},
		{1_000_000, 64, 2 * time.Microsecond},
		{1_000_000, 200_000, 20 * time.Millisecond}, // XDP-like: slow calls, big chunks
		{50, 1, 0},
	} {
		p := Pacer{Rate: tc.rate, Burst: 2 * float64(tc.chunk)}
		now := time.Unix(1000, 0)
		end := now.Add(10 * time.Second)
		sent := 0
		for now.Before(end) {
			now = now.Add(p.Delay(now, tc.chunk) + tc.call)
			sent += tc.chunk
		}
		want := tc.rate * 10
		if float64(sent) < want*0.98 || float64(sent) > want*1.02+float64(tc.chunk) {
			t.Errorf("rate %v chunk %d: %d frames in 10 s, want %v", tc.rate, tc.chunk, sent, want)
		}
	}
	// Slower than the rate: no waiting.
	p := Pacer{Rate: 1000}
	now := time.Unix(0, 0)
	for range 100 {
		if d := p.Delay(now, 1); d > 0 && now.After(time.Unix(0, 0)) {
			t.Fatalf("a sender slower than the rate was told to wait %v", d)
		}
		now = now.Add(5 * time.Millisecond)
	}
	// No limit.
	var z Pacer
	if d := z.Delay(time.Now(), 1<<20); d != 0 {
		t.Errorf("zero Pacer waits %v", d)
	}
}

// After a stall the pacer catches up at most Burst frames, not the whole gap.
func TestPacerStallBurst(t *testing.T) {
	p := Pacer{Rate: 1000, Burst: 10}
	now := time.Unix(0, 0)
	p.Delay(now, 1)
	now = now.Add(time.Second) // stalled for 1000 frames' worth
	free := 0
	for p.Delay(now, 1) == 0 {
		free++
		if free > 1000 {
			break
		}
	}
	if free > 11 {
		t.Errorf("after a 1 s stall the pacer let %d frames go at once, want at most Burst+1", free)
	}
}

func TestResult(t *testing.T) {
	r := Result{Engine: EngineXDP, Sent: 3_000_000, Elapsed: 2 * time.Second}
	if r.PPS() != 1.5e6 {
		t.Errorf("PPS = %v", r.PPS())
	}
	if !strings.Contains(r.String(), "1.500 Mpps") {
		t.Errorf("String = %q", r.String())
	}
	if (Result{}).PPS() != 0 {
		t.Error("zero Result has a rate")
	}
}
