package main

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// generator plays the switch and everything behind it: hosts on lan1-lan4 sending to the
// internet and pinging the router, the ISP's gateway on wan bringing the answers (and pings from
// the internet), and a share of frames the router must drop. It tags what it sends as the switch
// would (dsa.SwitchSide.Encode) and reads the tags of what the router sends back
// (dsa.SwitchSide.Decode), checking that every frame goes out of the right switch port, with the
// right addresses, TTL and checksums, and that ICMP errors, echo replies and ARP are what they
// should be. Its hosts and the gateway answer the router's ARP requests for them, out of their own
// switch port.
//
// Only its own goroutine calls fill, sink and run; the counters are atomics for the reader.
type generator struct {
	t       *topology
	l       *memLink
	cfg     Config
	sw      *dsa.SwitchSide
	rng     *rand.Rand
	n       uint64 // frames built, for the share of bad ones
	badEach uint64
	ts      bool // the switch puts a timestamp on PTP frames (ksz9477, lan937x)
	stopped atomic.Bool

	delivered   [numSwPorts]atomic.Uint64 // frames the switch sent out of each port
	misdelivery atomic.Uint64             // frames the router sent wrong: port, MAC, VLAN, TTL, checksum, tag, ICMP
	icmpSunk    [2]atomic.Uint64          // ICMP errors (time exceeded, host unreachable) received by the LAN hosts [0] and the gateway [1]
	echoSunk    [2]atomic.Uint64          // echo replies received by them
	arpSunk     atomic.Uint64             // ARP frames from the router, on every port
	arpReplies  atomic.Uint64             // the hosts' and the gateway's answers
	ptpSent     atomic.Uint64             // PTP event frames the hosts sent
	replies     *frame.Batch              // answers to send after the batch sunk
}

// Kinds of bad frames, in turn.
const (
	badTag       = iota // a tag the tagger rejects (a frame too short for one where every tag is valid)
	badPort             // a tag from a switch port the conduit does not know
	badTTL              // TTL 1: the router answers with ICMP time exceeded
	badChecksum         // IPv4 header checksum wrong
	badNeighbour        // to a LAN address nobody answers ARP for: held, ICMP host unreachable after the router's requests
	numBad
)

func newGenerator(t *topology, l *memLink, cfg Config) *generator {
	sw, _ := dsa.NewSwitchSide(t.tagger) // build checked the tagger
	g := &generator{t: t, l: l, cfg: cfg, sw: sw, rng: rand.New(rand.NewPCG(1, 2)), replies: frame.NewBatch(max(cfg.Batch, 64))}
	if cfg.Bad > 0 && 1/cfg.Bad < 1<<62 {
		g.badEach = uint64(1 / cfg.Bad)
	}
	if len(t.ptp) > 0 && kszTimestamps(t.tagger) {
		g.ts = true
		sw.TxTimestamp = true
	}
	return g
}

// inFlight bounds the frames between the generator and the router: below the link's depth.
const inFlight = 2048

const (
	ptpEach  = 32 // one upstream frame in ptpEach is a PTP event message (UDP port 319)
	pingEach = 64 // one frame in pingEach each way is an echo request to the router
)

// udp writes an IPv4/UDP packet of total length 46 at d (which must have room).
func udp(d []byte, src, dst uint32, dport uint16, ttl byte) {
	clear(d[:46])
	ip := frame.IPv4(d[:20])
	ip[0], ip[8], ip[9] = 0x45, ttl, frame.ProtoUDP
	binary.BigEndian.PutUint16(ip[2:], 46)
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	ip.SetChecksum()
	binary.BigEndian.PutUint16(d[20:], 40000)
	binary.BigEndian.PutUint16(d[22:], dport)
	binary.BigEndian.PutUint16(d[24:], 26)
}

// echoRequest writes an IPv4 ICMP echo request of total length 46 at d.
func echoRequest(d []byte, src, dst uint32, seq uint16) {
	clear(d[:46])
	ip := frame.IPv4(d[:20])
	ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoICMP
	binary.BigEndian.PutUint16(ip[2:], 46)
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	ip.SetChecksum()
	m := d[20:46]
	m[0] = 8
	binary.BigEndian.PutUint16(m[4:], 0x7773)
	binary.BigEndian.PutUint16(m[6:], seq)
	binary.BigEndian.PutUint16(m[2:], frame.Checksum(m))
}

// hello appends one gratuitous ARP per LAN host: what a host sends when its link comes up, and
// what the router's bridge learns its port from (the neighbour table learns nothing from it: an
// unsolicited announcement, arp_accept=0; it resolves the hosts with requests of its own when
// traffic for them comes).
func (g *generator) hello(b *frame.Batch) {
	for lan := 0; lan < numLANPorts; lan++ {
		for h := 0; h < hostsPerLAN; h++ {
			if n, _ := g.l.pool.Alloc(b, 1); n != 1 {
				return
			}
			i := len(b.Frames) - 1
			b.Frames[i].Resize(60)
			d := b.Bytes(i)
			clear(d)
			e := frame.Ether(d)
			e.SetDst(frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
			e.SetSrc(hostMAC(lan, h))
			e.SetType(frame.TypeARP)
			a := d[14:]
			copy(a, []byte{0, 1, 8, 0, 6, 4, 0, 1})
			m := hostMAC(lan, h)
			copy(a[8:], m[:])
			binary.BigEndian.PutUint32(a[14:], hostIP(lan, h))
			binary.BigEndian.PutUint32(a[24:], hostIP(lan, h))
			g.sw.Encode(b, i, dsa.Info{Port: uint16(swLAN1 + lan)})
		}
	}
}

// fill appends up to a batch of fresh frames to b, alternating hosts' upstream traffic and the
// internet's answers; the bad ones alternate direction from one round of kinds to the next.
func (g *generator) fill(b *frame.Batch) {
	n, _ := g.l.pool.Alloc(b, g.cfg.Batch)
	for i := len(b.Frames) - n; i < len(b.Frames); i++ {
		g.n++
		bad := -1
		up := g.n&1 == 0
		if g.badEach > 0 && g.n%g.badEach == 0 {
			round := g.n / g.badEach
			bad = int(round % numBad)
			up = (round/numBad)&1 == 0
		}
		ttl := byte(64)
		if bad == badTTL {
			ttl = 1
		}
		f := &b.Frames[i]
		var info dsa.Info
		ping := bad < 0 && g.n%pingEach>>1 == 1 // n%pingEach 2 (upstream) and 3 (downstream): one ping each way
		// bad neighbour frames are answers from the internet to an unknown LAN address.
		if up && bad != badNeighbour { // upstream: a LAN host to the internet, or to the router
			lan, h := g.rng.IntN(numLANPorts), g.rng.IntN(hostsPerLAN)
			f.Resize(60)
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(lanMAC)
			e.SetSrc(hostMAC(lan, h))
			e.SetType(frame.TypeIPv4)
			switch {
			case ping:
				echoRequest(d[14:], hostIP(lan, h), lanRouterIP, uint16(g.n))
			default:
				dport := uint16(443)
				if g.n%ptpEach == 0 {
					dport = 319
					g.ptpSent.Add(1)
					if g.ts {
						info.Flags, info.Timestamp = dsa.InfoTimestamp, uint32(g.n)
					}
				}
				udp(d[14:], hostIP(lan, h), netInternet|g.rng.Uint32()&maskNet, dport, ttl)
			}
			info.Port = uint16(swLAN1 + lan)
		} else { // downstream: the internet to a LAN host (or to the router), through the ISP's gateway
			lan, h := g.rng.IntN(numLANPorts), g.rng.IntN(hostsPerLAN)
			l3 := 14
			if g.cfg.WANVID != 0 {
				l3 = 18
			}
			f.Resize(l3 + 46)
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(wanMAC)
			e.SetSrc(gatewayMAC)
			if g.cfg.WANVID != 0 {
				e.SetType(vlan.TPID8021Q)
				binary.BigEndian.PutUint16(d[14:], uint16(g.cfg.WANVID))
			}
			binary.BigEndian.PutUint16(d[l3-2:], frame.TypeIPv4)
			src := netInternet | g.rng.Uint32()&maskNet
			if ping {
				echoRequest(d[l3:], src, wanRouterIP, uint16(g.n))
			} else {
				dst := hostIP(lan, h)
				if bad == badNeighbour {
					dst = lanNet | unansweredHost // on the LAN, but nobody answers ARP for it
				}
				udp(d[l3:], src, dst, 40000, ttl)
			}
			info.Port = swWAN
		}
		if bad == badChecksum {
			d := b.Bytes(i)
			d[len(d)-46+10] ^= 0xff
		}
		switch bad {
		case badPort:
			info.Port = swUnknown
		case badTag:
			if g.sw.EncodeMalformed(b, i, int(info.Port)) == dsa.ReasonNone {
				f.Resize(frame.EtherLen) // every tag is valid in this format: too short for one
			}
			continue
		}
		g.sw.Encode(b, i, info)
	}
}

// sink takes what the router sent to the switch, checks it and frees it; it reports whether
// anything came.
func (g *generator) sink(b *frame.Batch) bool {
	got := false
	for {
		n, _ := g.l.swEnd.Recv(b)
		if n == 0 {
			return got
		}
		got = true
		var bad, arp, answered uint64
		var per [numSwPorts]uint64
		var icmp, echo [2]uint64
		for i := range b.Frames {
			d, err := g.sw.Decode(b, i)
			port := d.Ports.First()
			if err != nil || d.Ports.Count() != 1 || port >= numSwPorts {
				bad++
				continue
			}
			side := 0
			if port == swWAN {
				side = 1
			}
			switch g.check(b.Bytes(i), port) {
			case sentBad:
				bad++
				continue
			case sentICMP:
				icmp[side]++
			case sentEcho:
				echo[side]++
			case sentARP:
				arp++
				// The hosts answer while the generator runs; after it stopped (drain) the
				// router has stopped too, and an answer would never be read.
				if !g.stopped.Load() && g.answer(b.Bytes(i), port) {
					answered++
				}
			}
			per[port]++
		}
		if arp > 0 {
			g.arpSunk.Add(arp)
		}
		if len(g.replies.Frames) > 0 {
			g.arpReplies.Add(answered)
			g.l.swEnd.Send(g.replies) // counted as generated
		}
		for p, v := range per {
			if v > 0 {
				g.delivered[p].Add(v)
			}
		}
		for s := range icmp {
			if icmp[s] > 0 {
				g.icmpSunk[s].Add(icmp[s])
			}
			if echo[s] > 0 {
				g.echoSunk[s].Add(echo[s])
			}
		}
		if bad > 0 {
			g.misdelivery.Add(bad)
		}
		b.Free()
	}
}

// What check found a frame to be.
const (
	sentBad       = iota // wrong in some field
	sentForwarded        // a forwarded UDP packet
	sentICMP             // an ICMP time exceeded about a packet the receiver sent with TTL 1, or host unreachable
	sentEcho             // an echo reply to a request the receiver sent
	sentARP              // the router's ARP: a request, an announcement, a reply
)

// check says what frame d, leaving switch port port, is, if it is what the router should have
// sent: to the gateway on wan (tagged with the WAN VID if there is one), to the owner of the
// destination MAC on a LAN port; a forwarded packet with a decremented TTL, or an ICMP message from
// the router's address on that side with a fresh TTL, and valid checksums.
func (g *generator) check(d []byte, port int) int {
	if len(d) < frame.EtherLen+frame.IPv4MinLen {
		return sentBad
	}
	e := frame.Ether(d)
	l3 := 14
	lan, h := -1, -1
	routerIP := uint32(lanRouterIP)
	if port == swWAN {
		if g.cfg.WANVID != 0 {
			if e.Type() != vlan.TPID8021Q || int(binary.BigEndian.Uint16(d[14:])&vlan.VIDMask) != g.cfg.WANVID {
				return sentBad
			}
			l3 = 18
		}
		if e.Src() != wanMAC {
			return sentBad
		}
		if binary.BigEndian.Uint16(d[l3-2:]) == frame.TypeARP {
			return g.checkARP(e, d[l3:], port)
		}
		if e.Dst() != gatewayMAC {
			return sentBad
		}
		routerIP = wanRouterIP
	} else {
		m := e.Dst()
		if e.Src() != lanMAC {
			return sentBad
		}
		if e.Type() == frame.TypeARP {
			return g.checkARP(e, d[l3:], port)
		}
		if m != hostMAC(port-swLAN1, int(m[5])) || m[5] >= hostsPerLAN {
			return sentBad
		}
		lan, h = port-swLAN1, int(m[5])
	}
	if binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeIPv4 {
		return sentBad
	}
	ip, err := frame.ParseIPv4(d[l3:])
	if err != nil || !ip.ChecksumOK() || ip.HeaderLen() != frame.IPv4MinLen {
		return sentBad
	}
	// The receiver: the LAN host the MAC belongs to, or on the WAN someone on the internet.
	if lan >= 0 && ip.Dst() != hostIP(lan, h) || lan < 0 && ip.Dst()&^maskNet != netInternet {
		return sentBad
	}
	if ip.Protocol() == frame.ProtoUDP {
		// Forwarded: from the internet to the host, or from a LAN host to the internet.
		if ip.TTL() != 63 || lan >= 0 && ip.Src()&^maskNet != netInternet || lan < 0 && ip.Src()&^0xff != lanNet {
			return sentBad
		}
		return sentForwarded
	}
	m := ip.Payload()
	if ip.Protocol() != frame.ProtoICMP || ip.Src() != routerIP || ip.TTL() != 64 || len(m) < 8 || frame.Checksum(m) != 0 {
		return sentBad
	}
	switch {
	case m[0] == 0 && m[1] == 0 && len(m) == 26: // echo reply, the request's identifier kept
		if binary.BigEndian.Uint16(m[4:]) != 0x7773 {
			return sentBad
		}
		return sentEcho
	case m[0] == 3 && m[1] == 1: // host unreachable: a frame for a LAN address nobody answers ARP for
		q, err := frame.ParseIPv4(m[8:])
		if lan >= 0 || err != nil || len(q) != 46 || !q.ChecksumOK() || q.Protocol() != frame.ProtoUDP || q.Src() != ip.Dst() ||
			q.Dst() != lanNet|unansweredHost {
			return sentBad
		}
		return sentICMP
	case m[0] == 11 && m[1] == 0: // time exceeded in transit, quoting the packet as received
		q, err := frame.ParseIPv4(m[8:])
		if err != nil || len(q) != 46 || !q.ChecksumOK() || q.TTL() != 1 || q.Protocol() != frame.ProtoUDP || q.Src() != ip.Dst() {
			return sentBad
		}
		// It went the other way: LAN host to the internet, or the internet to a LAN host.
		if lan >= 0 && q.Dst()&^maskNet != netInternet || lan < 0 && q.Dst()&^0xff != lanNet {
			return sentBad
		}
		if sport, _, ok := q.Ports(); !ok || sport != 40000 {
			return sentBad
		}
		return sentICMP
	}
	return sentBad
}

// unansweredHost is the host part of the LAN address the generator's bad frames go to and no host
// answers ARP for.
const unansweredHost = 200

// checkARP judges an ARP frame the router sent out of switch port port (a, the bytes after the L2
// header e): from the router's MAC and address on that side; a request (broadcast, or unicast to a
// host it knows: a probe) for an address of that side's subnet, or an announcement of its own
// address; or a reply to a host that asked for the router's address.
func (g *generator) checkARP(e frame.Ether, a []byte, port int) int {
	mac, own, net := lanMAC, uint32(lanRouterIP), uint32(lanNet)
	if port == swWAN {
		mac, own, net = wanMAC, wanRouterIP, wanNet
	}
	if len(a) < 28 || binary.BigEndian.Uint64(a[0:]) & ^uint64(0xffff) != 0x0001080006040000 || frame.MAC(a[8:14]) != mac ||
		binary.BigEndian.Uint32(a[14:]) != own {
		return sentBad
	}
	tpa := binary.BigEndian.Uint32(a[24:])
	switch op := binary.BigEndian.Uint16(a[6:]); {
	case op == 1 && tpa == own: // an announcement
		if e.Dst() != broadcast {
			return sentBad
		}
	case op == 1 && tpa&^0xff == net && tpa&0xff != 0 && tpa&0xff != 0xff:
		if m, p, ok := g.neighbour(tpa); e.Dst() != broadcast && (!ok || e.Dst() != m || p != port) {
			return sentBad // a probe goes to the neighbour's MAC, out of its port
		}
	case op == 2: // a reply, to the host that asked
		m, p, ok := g.neighbour(tpa)
		if !ok || e.Dst() != m || frame.MAC(a[18:24]) != m || p != port {
			return sentBad
		}
	default:
		return sentBad
	}
	return sentARP
}

var broadcast = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// neighbour returns the MAC and switch port of the host (or the gateway) the generator plays at
// address a.
func (g *generator) neighbour(a uint32) (frame.MAC, int, bool) {
	if a == binary.BigEndian.Uint32(gatewayIP.AsSlice()) {
		return gatewayMAC, swWAN, true
	}
	n := int(a&0xff) - 10
	if a&^0xff != lanNet || n < 0 || n/10 >= numLANPorts || n%10 >= hostsPerLAN {
		return frame.MAC{}, 0, false
	}
	return hostMAC(n/10, n%10), swLAN1 + n/10, true
}

// answer appends to g.replies, tagged as the switch sends it from port, the reply of the host that
// request d (a broadcast or a probe the router sent out of port, checked) is for, if the generator
// plays it and it is behind port; it reports whether it did.
func (g *generator) answer(d []byte, port int) bool {
	l3 := 14
	if port == swWAN && g.cfg.WANVID != 0 {
		l3 = 18
	}
	a := d[l3:]
	if binary.BigEndian.Uint16(a[6:]) != 1 || g.replies.Space() == 0 {
		return false
	}
	tpa := binary.BigEndian.Uint32(a[24:])
	m, p, ok := g.neighbour(tpa)
	if !ok || p != port {
		return false
	}
	if n, _ := g.l.pool.Alloc(g.replies, 1); n == 0 {
		return false
	}
	i := len(g.replies.Frames) - 1
	g.replies.Frames[i].Resize(l3 + 46)
	r := g.replies.Bytes(i)
	clear(r)
	copy(r[0:6], d[6:12]) // to the router
	copy(r[6:12], m[:])
	if l3 == 18 {
		binary.BigEndian.PutUint16(r[12:], vlan.TPID8021Q)
		binary.BigEndian.PutUint16(r[14:], uint16(g.cfg.WANVID))
	}
	binary.BigEndian.PutUint16(r[l3-2:], frame.TypeARP)
	ra := r[l3:]
	binary.BigEndian.PutUint64(ra[0:], 0x0001080006040002)
	copy(ra[8:], m[:])
	binary.BigEndian.PutUint32(ra[14:], tpa)
	copy(ra[18:24], a[8:14])
	copy(ra[24:28], a[14:18])
	g.sw.Encode(g.replies, i, dsa.Info{Port: uint16(port)})
	return true
}

func (g *generator) run(ctx context.Context) {
	defer g.stopped.Store(true)
	out, sb := frame.NewBatch(g.cfg.Batch+numLANPorts*hostsPerLAN), frame.NewBatch(g.cfg.Batch)
	g.hello(out)
	g.l.swEnd.Send(out)
	start := time.Now()
	var sent uint64
	spins := 0
	for ctx.Err() == nil {
		g.sink(sb)
		// Self-clocking: keep fewer frames in flight than the link holds, so the generator never
		// overruns the router (frames it could not queue would be counted, but generating them is
		// wasted work the router's core could use).
		if g.l.pool.InUse()+2*g.cfg.Batch > inFlight {
			if spins++; spins < 32 {
				runtime.Gosched()
			} else {
				time.Sleep(10 * time.Microsecond)
			}
			continue
		}
		spins = 0
		g.fill(out)
		g.l.swEnd.Send(out)
		sent += uint64(g.cfg.Batch)
		if g.cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(sent) / float64(g.cfg.Rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// drain sinks until the link stays empty (after the router stopped).
func (g *generator) drain() {
	sb := frame.NewBatch(g.cfg.Batch)
	for g.sink(sb) {
	}
}
