package trunkgen

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// SendTraffic sends n frames of the trunk examples' traffic on p, in batches of 50 from pool:
// upstream, 802.1Q frames from the hosts of VLANs 1..20 to 198.18.0.0 + k (frame k: inside
// 198.18.0.0/15 for up to 131,072 frames) addressed to the router's trunk MAC; downstream, untagged
// frames from the gateway to the hosts 10.0.vlan.x addressed to the router's uplink MAC. It is what
// the examples' real-interface tests push through a router, and CheckUpstream and CheckDownstream
// judge what comes out. It returns how many frames p queued.
func SendTraffic(p xmit.Port, pool *frame.Pool, routerMAC frame.MAC, upstream bool, n int) (int, error) {
	b := frame.NewBatch(50)
	queued := 0
	for sent := 0; sent < n; {
		if _, err := pool.Alloc(b, min(50, n-sent)); err != nil || len(b.Frames) == 0 {
			return queued, fmt.Errorf("trunkgen: pool exhausted after %d frames: %v", sent, err)
		}
		for i := range b.Frames {
			k := sent + i
			vl := 1 + k%trafficVLANs
			e := frame.Ether(nil)
			if upstream {
				b.Frames[i].Resize(64)
				d := b.Bytes(i)
				e = frame.Ether(d)
				e.SetSrc(HostMAC(vl, 2))
				binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
				binary.BigEndian.PutUint16(d[14:], VID(vl))
				binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
				UDP(d[18:], 0x0a000002|uint32(vl)<<8, 0xc6120000|uint32(k), 64)
			} else {
				b.Frames[i].Resize(60)
				d := b.Bytes(i)
				e = frame.Ether(d)
				e.SetSrc(GatewayMAC)
				e.SetType(frame.TypeIPv4)
				UDP(d[14:], 0xc6120001, 0x0a000000|uint32(vl)<<8|uint32(2+k%200), 33)
			}
			e.SetDst(routerMAC)
		}
		m := len(b.Frames)
		q, err := p.Send(b) // Send empties b
		queued += q
		sent += m
		if err != nil || q != m {
			return queued, fmt.Errorf("trunkgen: the port queued %d of %d: %v", q, m, err)
		}
	}
	return queued, nil
}

// CheckUpstream reports why d, a frame the router sent on the uplink, is not SendTraffic's upstream
// traffic routed: to the gateway, from the router's uplink MAC upMAC, TTL 63, checksum right.
func CheckUpstream(d []byte, upMAC frame.MAC) error {
	if len(d) < frame.EtherLen+frame.IPv4MinLen {
		return fmt.Errorf("upstream frame too short: %x", d)
	}
	ip := frame.IPv4(d[frame.EtherLen:])
	if frame.Ether(d).Dst() != GatewayMAC || frame.Ether(d).Src() != upMAC || ip.TTL() != 63 || !ip.ChecksumOK() || ip.Dst()>>17 != 0xc612>>1 {
		return fmt.Errorf("upstream frame not rewritten as expected: %x", d)
	}
	return nil
}

// CheckDownstream reports why frame f (bytes d), sent by the router on the trunk, is not
// SendTraffic's downstream traffic routed: tagged with its host's VLAN (in the bytes, or out of band
// as veth may hand it), to the host (10.0.i.h at HostMAC(i, h), as the host answered the router's
// ARP: AnswerHost), from the router's trunk MAC trunkMAC, TTL 32, checksum right.
func CheckDownstream(f *frame.Frame, d []byte, trunkMAC frame.MAC) error {
	tci, l3 := f.TCI, frame.EtherLen
	if f.Flags&frame.FlagVLAN == 0 {
		if len(d) < vlan.EthLen {
			return fmt.Errorf("downstream frame too short: %x", d)
		}
		tci, l3 = binary.BigEndian.Uint16(d[14:]), vlan.EthLen
	}
	if len(d) < l3+frame.IPv4MinLen {
		return fmt.Errorf("downstream frame too short: %x", d)
	}
	ip := frame.IPv4(d[l3:])
	vl, h := int(ip.Dst()>>8)&0xff, int(ip.Dst()&0xff)
	if tci&0xfff != VID(vl) || frame.Ether(d).Dst() != HostMAC(vl, h) || frame.Ether(d).Src() != trunkMAC || ip.TTL() != 32 || !ip.ChecksumOK() {
		return fmt.Errorf("downstream frame not rewritten as expected (tci %#x): %x", tci, d)
	}
	return nil
}

// trafficVLANs is how many VLANs SendTraffic spreads over: the examples' default configuration.
const trafficVLANs = 20

// What AnswerHost found a frame to be.
const (
	HostOther    = iota // neither ARP nor an echo request to a host
	HostARP             // an ARP request for a host: answered
	HostEcho            // an echo request to a host: answered
	HostARPOther        // other ARP (the router's announcements, requests for no host): not answered
)

// AnswerHost plays the VLAN hosts behind the trunk (10.0.i.h, h 2-251, at HostMAC(i, h), on VLAN
// 100+i) for frame f (bytes d) that the router sent there (tagged in the bytes, or out of band as
// veth may hand it): an ARP request for one of them gets its reply, an ICMP echo request to one its
// echo reply, both tagged in the bytes with the frame's VID and appended to out (a batch of pool).
// It returns what the frame was. The real-interface tests run it on the trunk's far side, where the
// kernel has no VLAN devices (no 8021q module).
func AnswerHost(pool *frame.Pool, f *frame.Frame, d []byte, out *frame.Batch) int {
	tci, l3 := f.TCI, frame.EtherLen
	if f.Flags&frame.FlagVLAN == 0 {
		if len(d) < vlan.EthLen || frame.Ether(d).Type() != vlan.TPID8021Q {
			return HostOther
		}
		tci, l3 = binary.BigEndian.Uint16(d[14:]), vlan.EthLen
	}
	vl := int(tci&0xfff) - int(VID(0))
	if len(d) < l3+28 || vl < 1 || vl > 255 {
		return HostOther
	}
	p := d[l3:]
	switch binary.BigEndian.Uint16(d[l3-2:]) {
	case frame.TypeARP:
		tpa := binary.BigEndian.Uint32(p[24:])
		h := int(tpa & 0xff)
		if binary.BigEndian.Uint64(p[0:]) != 0x0001080006040001 || tpa>>8 != 0x0a0000|uint32(vl) || h < firstHost || h > lastHost {
			return HostARPOther
		}
		m := HostMAC(vl, h)
		a, ok := answerFrame(pool, out, frame.MAC(p[8:14]), m, tci, frame.TypeARP, 28)
		if !ok {
			return HostARP
		}
		binary.BigEndian.PutUint64(a[0:], 0x0001080006040002)
		copy(a[8:], m[:])
		binary.BigEndian.PutUint32(a[14:], tpa)
		copy(a[18:], p[8:14])
		copy(a[24:28], p[14:18])
		return HostARP
	case frame.TypeIPv4:
		ip, err := frame.ParseIPv4(p)
		dst := ip.Dst()
		h := int(dst & 0xff)
		if err != nil || ip.Protocol() != frame.ProtoICMP || ip.HeaderLen() != frame.IPv4MinLen || ip.IsFragment() ||
			dst>>8 != 0x0a0000|uint32(vl) || h < firstHost || h > lastHost {
			return HostOther
		}
		icmp := ip.Payload()
		if len(icmp) < 8 || icmp[0] != 8 || icmp[1] != 0 {
			return HostOther
		}
		r, ok := answerFrame(pool, out, frame.Ether(d).Src(), HostMAC(vl, h), tci, frame.TypeIPv4, len(ip))
		if !ok {
			return HostEcho
		}
		copy(r, ip)
		rip := frame.IPv4(r)
		binary.BigEndian.PutUint32(rip[12:], dst)
		binary.BigEndian.PutUint32(rip[16:], ip.Src())
		rip[8] = 64
		rip.SetChecksum()
		m := rip.Payload()
		m[0], m[2], m[3] = 0, 0, 0
		binary.BigEndian.PutUint16(m[2:], frame.Checksum(m))
		return HostEcho
	}
	return HostOther
}

// answerFrame appends a frame of pool to out, to dst from src, tagged with tci in the bytes, of
// EtherType etype with an n-byte payload (padded to the Ethernet minimum), and returns the payload.
func answerFrame(pool *frame.Pool, out *frame.Batch, dst, src frame.MAC, tci, etype uint16, n int) ([]byte, bool) {
	if out.Space() == 0 {
		return nil, false
	}
	if k, _ := pool.Alloc(out, 1); k == 0 {
		return nil, false
	}
	i := len(out.Frames) - 1
	out.Frames[i].Resize(max(vlan.EthLen+n, frame.MinEthernetLen+vlan.HeaderLen))
	d := out.Bytes(i)
	clear(d)
	e := frame.Ether(d)
	e.SetDst(dst)
	e.SetSrc(src)
	binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
	binary.BigEndian.PutUint16(d[14:], tci)
	binary.BigEndian.PutUint16(d[16:], etype)
	return d[vlan.EthLen : vlan.EthLen+n], true
}

// Hosts plays the VLAN hosts on the far ends of a trunk (or of an aggregate's members) for the
// real-interface tests: on each port it answers the router's ARP and echo requests (AnswerHost, the
// answer out of the port the request came in on) and checks every other frame as SendTraffic's
// downstream traffic routed (CheckDownstream), from Start until Stop.
type Hosts struct {
	ports    []xmit.Port
	pool     *frame.Pool
	trunkMAC frame.MAC
	stop     chan struct{}
	done     chan struct{}

	mu sync.Mutex
	HostsSeen
}

// HostsSeen is what Hosts saw.
type HostsSeen struct {
	Delivered   []int // downstream frames that passed CheckDownstream, by port
	ARP, Echoes int   // requests answered
	Errors      []error
}

// NewHosts returns hosts on ports (the router's trunk MAC trunkMAC), answering with frames of pool.
func NewHosts(ports []xmit.Port, pool *frame.Pool, trunkMAC frame.MAC) *Hosts {
	return &Hosts{ports: ports, pool: pool, trunkMAC: trunkMAC, stop: make(chan struct{}), done: make(chan struct{}),
		HostsSeen: HostsSeen{Delivered: make([]int, len(ports))}}
}

// Start runs the hosts on a goroutine of their own.
func (h *Hosts) Start() {
	go func() {
		defer close(h.done)
		rb, answers := frame.NewBatch(64), frame.NewBatch(64)
		for {
			select {
			case <-h.stop:
				return
			default:
			}
			idle := true
			for p, port := range h.ports {
				if n, _ := port.Recv(rb); n == 0 {
					continue
				}
				idle = false
				h.mu.Lock()
				for i := range rb.Frames {
					switch AnswerHost(h.pool, &rb.Frames[i], rb.Bytes(i), answers) {
					case HostARP:
						h.ARP++
					case HostEcho:
						h.Echoes++
					case HostARPOther: // the router's announcements
					default:
						if err := CheckDownstream(&rb.Frames[i], rb.Bytes(i), h.trunkMAC); err != nil {
							h.Errors = append(h.Errors, err)
						} else {
							h.Delivered[p]++
						}
					}
				}
				h.mu.Unlock()
				rb.Free()
				if len(answers.Frames) > 0 {
					port.Send(answers)
				}
			}
			if idle {
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
}

// Seen returns what the hosts saw so far.
func (h *Hosts) Seen() HostsSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.HostsSeen
	s.Delivered = append([]int(nil), s.Delivered...)
	s.Errors = append([]error(nil), s.Errors...)
	return s
}

// Stop stops the hosts (once; later calls do nothing) and returns what they saw.
func (h *Hosts) Stop() HostsSeen {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	return h.Seen()
}
