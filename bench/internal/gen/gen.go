package gen

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// Engine selects how frames are sent.
type Engine string

// The engines.
const (
	EngineAFPacket Engine = "afpacket" // sendmmsg batches on an AF_PACKET socket
	EngineXDP      Engine = "xdp"      // BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, bpf_redirect out
	EngineAFXDP    Engine = "afxdp"    // batches through wirespeed's AF_XDP port (xmit/afxdp): its transmit path
)

// Errors.
var (
	ErrBadConfig = errors.New("gen: invalid config")
	ErrHostNetns = errors.New("gen: refusing to send outside a named network namespace (the host's or this process's own)")
)

// Tag protocol identifiers.
const (
	TPID8021Q  = 0x8100
	TPID8021AD = 0x88a8
)

// Config shapes the traffic and the engine. The zero value (with Netns and Interface set) is one
// flow of 60-byte untagged UDP frames 198.18.0.1:10000 → 198.18.0.2:9, 02:00:00:00:00:01 →
// 02:00:00:00:00:02, sent as fast as possible with sendmmsg until Stop.
type Config struct {
	Netns     string // network namespace name (/var/run/netns/NAME); required, never the host's
	Interface string // interface inside Netns to send on; required for Open
	Engine    Engine // default EngineAFPacket

	Flows int   // distinct flows; default 1 (at most 1<<20)
	Sizes []int // frame lengths without FCS, given to flows round robin; default {60}; 64..9000 with tags

	SrcMAC, DstMAC [6]byte // default 02:00:00:00:00:01 and 02:00:00:00:00:02 (zero means default)

	// VLAN, when not zero, tags every frame with 802.1Q VID VLAN (or, with VLANs > 1, VIDs VLAN,
	// VLAN+1, ... VLAN+VLANs-1 given to flows round robin). InnerVLAN, when not zero, makes it QinQ:
	// the VLAN tag becomes an 802.1ad S-tag and InnerVLAN the 802.1Q C-tag.
	VLAN      uint16
	VLANs     int
	InnerVLAN uint16

	Src netip.Addr     // source address, default 198.18.0.1; flows use source ports 10000+flow%50000
	Dst []netip.Prefix // destinations: flow i goes to prefix i%len(Dst), host number spread by i/len(Dst); default 198.18.0.2/32
	TTL uint8          // default 64

	Rate     float64       // frames per second, 0: as fast as possible
	Duration time.Duration // stop after this long, 0: at Stop
	Batch    int           // AF_PACKET frames per sendmmsg, AF_XDP frames per Send (default 64, at most 1024)
	Repeat   uint32        // XDP frames per BPF_PROG_RUN call (default 1<<22)
	CPU      int           // CPU to pin the sending thread to, -1 none (the zero value pins to CPU 0)
	Nice     int           // niceness of the sending thread (-20..19; 0 leaves it), e.g. -20 on a shared machine
}

func (c *Config) defaults() (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.Engine == "" {
		r.Engine = EngineAFPacket
	}
	if r.Flows == 0 {
		r.Flows = 1
	}
	if len(r.Sizes) == 0 {
		r.Sizes = []int{60}
	}
	if r.SrcMAC == ([6]byte{}) {
		r.SrcMAC = [6]byte{2, 0, 0, 0, 0, 1}
	}
	if r.DstMAC == ([6]byte{}) {
		r.DstMAC = [6]byte{2, 0, 0, 0, 0, 2}
	}
	if !r.Src.IsValid() {
		r.Src = netip.AddrFrom4([4]byte{198, 18, 0, 1})
	}
	if len(r.Dst) == 0 {
		r.Dst = []netip.Prefix{netip.MustParsePrefix("198.18.0.2/32")}
	}
	if r.TTL == 0 {
		r.TTL = 64
	}
	if r.VLANs == 0 {
		r.VLANs = 1
	}
	if r.Batch == 0 {
		r.Batch = 64
	}
	if r.Repeat == 0 {
		r.Repeat = 1 << 22
	}
	bad := func(f string, a ...any) (Config, error) {
		return r, fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(f, a...))
	}
	if r.Engine != EngineAFPacket && r.Engine != EngineXDP && r.Engine != EngineAFXDP {
		return bad("engine %q (want afpacket, xdp or afxdp)", r.Engine)
	}
	if r.Flows < 0 || r.Flows > 1<<20 {
		return bad("flows %d", r.Flows)
	}
	min := r.HeaderLen()
	for _, s := range r.Sizes {
		if s < min || s > 9000 {
			return bad("size %d (want %d..9000)", s, min)
		}
	}
	if !r.Src.Is4() {
		return bad("source %v is not IPv4", r.Src)
	}
	for _, p := range r.Dst {
		if !p.IsValid() || !p.Addr().Is4() {
			return bad("destination %v is not an IPv4 prefix", p)
		}
	}
	if r.VLAN > 4094 || r.InnerVLAN > 4094 || r.VLANs < 1 || int(r.VLAN)+r.VLANs-1 > 4094 || (r.InnerVLAN != 0 && r.VLAN == 0) {
		return bad("vlan %d+%d inner %d", r.VLAN, r.VLANs, r.InnerVLAN)
	}
	if r.Nice < -20 || r.Nice > 19 {
		return bad("nice %d", r.Nice)
	}
	if r.Rate < 0 || r.Duration < 0 || r.Batch < 1 || r.Batch > 1024 {
		return bad("rate %v duration %v batch %d", r.Rate, r.Duration, r.Batch)
	}
	return r, nil
}

// HeaderLen is the length of the Ethernet, tag, IPv4 and UDP headers of the frames c describes.
func (c *Config) HeaderLen() int {
	n := 14 + 20 + 8
	if c.VLAN != 0 {
		n += 4
	}
	if c.InnerVLAN != 0 {
		n += 4
	}
	return n
}

// Flow describes flow i of a (defaulted) config.
type Flow struct {
	Size    int
	VLAN    uint16 // outer VID, 0 untagged
	Inner   uint16 // inner VID, 0 none
	Dst     netip.Addr
	SrcPort uint16
}

// FlowOf returns flow i's parameters: the sizes, VIDs and destination prefixes are each dealt round
// robin, and within a prefix the host number advances by one every len(Dst) flows, skipping the
// network and broadcast addresses of prefixes shorter than /31.
func (c *Config) FlowOf(i int) Flow {
	f := Flow{Size: c.Sizes[i%len(c.Sizes)], Inner: c.InnerVLAN, SrcPort: uint16(10000 + i%50000)}
	if c.VLAN != 0 {
		f.VLAN = c.VLAN + uint16(i%max(c.VLANs, 1))
	}
	p := c.Dst[i%len(c.Dst)].Masked()
	base := binary.BigEndian.Uint32(p.Addr().AsSlice())
	host := uint32(0)
	if bits := 32 - p.Bits(); bits > 0 {
		span := uint64(1) << bits
		k := uint64(i / len(c.Dst))
		if bits >= 2 {
			host = uint32(1 + k%(span-2))
		} else {
			host = uint32(k % span)
		}
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], base+host)
	f.Dst = netip.AddrFrom4(a)
	return f
}

// Frames builds one frame per flow of cfg (after defaults): Ethernet, the tags, IPv4 (IHL 5, ID 0,
// DF clear, correct header checksum), UDP to port 9 with a zero checksum, zero padding.
func Frames(cfg *Config) ([][]byte, error) {
	c, err := cfg.defaults()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, c.Flows)
	for i := range out {
		out[i] = c.build(c.FlowOf(i))
	}
	return out, nil
}

func (c *Config) build(f Flow) []byte {
	b := make([]byte, f.Size)
	copy(b[0:6], c.DstMAC[:])
	copy(b[6:12], c.SrcMAC[:])
	o := 12
	if f.VLAN != 0 {
		tpid := uint16(TPID8021Q)
		if f.Inner != 0 {
			tpid = TPID8021AD
		}
		binary.BigEndian.PutUint16(b[o:], tpid)
		binary.BigEndian.PutUint16(b[o+2:], f.VLAN)
		o += 4
		if f.Inner != 0 {
			binary.BigEndian.PutUint16(b[o:], TPID8021Q)
			binary.BigEndian.PutUint16(b[o+2:], f.Inner)
			o += 4
		}
	}
	binary.BigEndian.PutUint16(b[o:], 0x0800)
	o += 2
	ip := b[o : o+20]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(f.Size-o))
	ip[8] = c.TTL
	ip[9] = 17
	copy(ip[12:16], c.Src.AsSlice())
	copy(ip[16:20], f.Dst.AsSlice())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
	udp := b[o+20 : o+28]
	binary.BigEndian.PutUint16(udp[0:2], f.SrcPort)
	binary.BigEndian.PutUint16(udp[2:4], 9)
	binary.BigEndian.PutUint16(udp[4:6], uint16(f.Size-o-20))
	return b
}

// ParseRoutes reads IPv4 prefixes, one `a.b.c.d/len` per line (anything after the first field is
// ignored, so `ip route`-style lines work); blank lines and lines starting with # are skipped. A
// bare address counts as a /32.
func ParseRoutes(r io.Reader) ([]netip.Prefix, error) {
	var out []netip.Prefix
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		var p netip.Prefix
		var err error
		if strings.Contains(f[0], "/") {
			p, err = netip.ParsePrefix(f[0])
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(f[0]); err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("gen: routes line %d: %q is not an IPv4 prefix", line, f[0])
		}
		out = append(out, p.Masked())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gen: routes: no prefixes")
	}
	return out, nil
}

// Pacer spaces batches so that the frames sent since the first Delay do not run ahead of Rate per
// second. After a stall (a slow call, a descheduled thread) it lets the sender catch up at most Burst
// frames. The zero value never waits. Not safe for concurrent use.
type Pacer struct {
	Rate  float64 // frames per second; 0 means no limit
	Burst float64 // frames the sender may run ahead after an idle period; default Rate/100

	next time.Time // when the next frame is due
}

// Delay returns how long to wait at now before sending n frames, and books them.
func (p *Pacer) Delay(now time.Time, n int) time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	burst := p.Burst
	if burst <= 0 {
		burst = p.Rate / 100
	}
	if p.next.IsZero() {
		p.next = now
	} else if now.Sub(p.next) > time.Duration(burst/p.Rate*float64(time.Second)) {
		// A stall longer than the burst: do not let the sender catch up the whole gap.
		p.next = now.Add(-time.Duration(burst / p.Rate * float64(time.Second)))
	}
	wait := p.next.Sub(now)
	p.next = p.next.Add(time.Duration(float64(n) / p.Rate * float64(time.Second)))
	if wait < 0 {
		return 0
	}
	return wait
}

// Result is what a generator did.
type Result struct {
	Engine  Engine
	Sent    uint64        // frames the kernel accepted (afpacket) or the program ran on (xdp)
	Errors  uint64        // failed sendmmsg or BPF_PROG_RUN calls
	Elapsed time.Duration // from Start to the end of the last call
	CPU     time.Duration // the sending thread's CPU time (user+system)
}

// PPS is frames per second.
func (r Result) PPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds()
}

func (r Result) String() string {
	return fmt.Sprintf("%s: %d frames in %v: %.3f Mpps, %d errors, CPU %v", r.Engine, r.Sent,
		r.Elapsed.Round(time.Millisecond), r.PPS()/1e6, r.Errors, r.CPU.Round(time.Millisecond))
}
