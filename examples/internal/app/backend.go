package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// Backend is the I/O back-end an example runs on.
type Backend string

// Back-ends.
const (
	Mem      Backend = "mem"      // in-memory ports and the example's own generator (no root)
	AFPacket Backend = "afpacket" // AF_PACKET (TPACKET_V3 RX ring, sendmmsg TX), PACKET_FANOUT across workers
	// AFPacketV2 is AF_PACKET with a TPACKET_V2 RX ring (afpacket.Config.FrameRing): each frame is
	// handed over as it arrives, not when its block fills or retires (the lower latency at low rates).
	AFPacketV2 Backend = "afpacket-v2"
	AFXDP      Backend = "afxdp" // AF_XDP, one queue per worker, one UMEM shared by the worker's ports
)

// IsAFPacket reports whether b is AF_PACKET, with either receive ring.
func (b Backend) IsAFPacket() bool { return b == AFPacket || b == AFPacketV2 }

// BackendHelp lists the real back-ends for a -backend flag's help.
const BackendHelp = "afpacket, afpacket-v2 (AF_PACKET with per-frame wakeups: lower latency at low rates), afxdp"

// ParseBackend checks a -backend value.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case Mem, AFPacket, AFPacketV2, AFXDP:
		return b, nil
	}
	return "", fmt.Errorf("unknown backend %q (mem, afpacket, afpacket-v2, afxdp)", s)
}

// OpenConfig says which interfaces to open and how.
type OpenConfig struct {
	Backend Backend
	Ifnames []string // physical ports in the example's numbering
	Workers int      // sockets (AF_PACKET) or queues (AF_XDP) per interface; 0: 1
	// FanoutGroup is the first PACKET_FANOUT group id (interface i uses FanoutGroup+i); 0: derived
	// from the process id so that two forwarders never join each other's groups.
	FanoutGroup uint16
	// MaxFrame is the largest frame (L2 header included) to receive; above 1518 bytes AF_XDP uses
	// 4096-byte UMEM chunks (at most about 3800 bytes a frame in copy mode).
	MaxFrame int
	// Promiscuous puts AF_PACKET interfaces in promiscuous mode (needed on real NICs for frames
	// to MACs other than the interface's; veth delivers everything anyway).
	Promiscuous bool
	// Filters are classic BPF programs for the AF_PACKET sockets of the interfaces, by index in
	// Ifnames (afpacket.Config.Filter); missing or nil: none.
	Filters [][]afpacket.BPF
	// XDPPass are the EtherTypes the AF_XDP program hands to the kernel instead of the sockets,
	// by index in Ifnames (afxdp.Config.PassEtherType); missing or 0: none.
	XDPPass []uint16
	// BusyPoll is afxdp.Config.BusyPoll for every AF_XDP socket (0: off).
	BusyPoll int
}

// Ports are the real ports an example forwards on: ByWorker[w][p] is worker w's port p.
type Ports struct {
	ByWorker [][]xmit.Port
	Backend  Backend
	umems    []*afxdp.UMEM
}

// Open opens every interface once per worker: AF_PACKET sockets in one PACKET_FANOUT group per
// interface (flow hash, so a flow stays on one worker and in order), or AF_XDP sockets on queue w
// for worker w, sharing one UMEM per worker so frames cross from one interface to the other without
// a copy. The sockets belong to the calling thread's network namespace. On error nothing stays open.
func Open(cfg OpenConfig) (*Ports, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	p := &Ports{Backend: cfg.Backend}
	group := cfg.FanoutGroup
	if group == 0 {
		group = uint16(os.Getpid()*16) | 1
	}
	for w := 0; w < cfg.Workers; w++ {
		var ports []xmit.Port
		var umem *afxdp.UMEM
		if cfg.Backend == AFXDP {
			uc := &afxdp.UMEMConfig{Frames: 8192}
			if cfg.MaxFrame > 1518 {
				uc.FrameSize = 4096
			}
			u, err := afxdp.NewUMEM(uc)
			if err != nil {
				p.Close()
				return nil, fmt.Errorf("worker %d: UMEM: %w", w, err)
			}
			umem = u
			p.umems = append(p.umems, u)
		}
		for i, name := range cfg.Ifnames {
			var port xmit.Port
			var err error
			switch cfg.Backend {
			case AFPacket, AFPacketV2:
				c := &afpacket.Config{PortID: uint16(i), Promiscuous: cfg.Promiscuous}
				if cfg.Backend == AFPacketV2 {
					c.FrameRing = frameRing(cfg.MaxFrame)
				}
				if i < len(cfg.Filters) {
					c.Filter = cfg.Filters[i]
				}
				if cfg.Workers > 1 {
					c.Fanout = &afpacket.Fanout{Group: group + uint16(i), Mode: afpacket.FanoutHash}
				}
				port, err = afpacket.Open(name, c)
			case AFXDP:
				if q := Queues(name); w >= q {
					err = fmt.Errorf("%s has %d receive queue(s), worker %d needs queue %d (AF_XDP binds one socket per queue: use -workers %d, or make the veth with numrxqueues/numtxqueues %d)", name, q, w, w, q, cfg.Workers)
				} else {
					c := &afxdp.Config{UMEM: umem, BusyPoll: cfg.BusyPoll}
					if i < len(cfg.XDPPass) {
						c.PassEtherType = cfg.XDPPass[i]
					}
					port, err = afxdp.Open(name, w, c)
				}
			default:
				err = fmt.Errorf("backend %q opens no interfaces", cfg.Backend)
			}
			if err != nil {
				for _, q := range ports {
					q.Close()
				}
				p.Close()
				return nil, fmt.Errorf("open %s (%s, worker %d): %w", name, cfg.Backend, w, err)
			}
			ports = append(ports, port)
		}
		p.ByWorker = append(p.ByWorker, ports)
	}
	return p, nil
}

// frameRing is the TPACKET_V2 ring for frames up to maxFrame bytes (0: 1518): the default
// geometry, slots large enough for jumbo frames.
func frameRing(maxFrame int) *afpacket.FrameRing {
	if maxFrame <= 1518 {
		return &afpacket.FrameRing{}
	}
	return &afpacket.FrameRing{FrameSize: (maxFrame + afpacket.FrameSlotOverhead + 15) &^ 15}
}

// Queues is the number of receive queues of an interface (1 if sysfs does not say).
func Queues(ifname string) int {
	m, _ := filepath.Glob(filepath.Join("/sys/class/net", ifname, "queues", "rx-*"))
	return max(len(m), 1)
}

// Stats sums port p's counters over the workers. The Kernel fields are the interface's own
// counters, which every worker's queue reports whole: they are counted once (ops.SumQueues).
func (p *Ports) Stats(port int) xmit.Stats {
	var s xmit.Stats
	for w, ports := range p.ByWorker {
		s = ops.SumQueues(s, ports[port].Stats(), w == 0)
	}
	return s
}

// Rows are the rate table's rows of the ports, names[p] naming port p: one per port (Stats), each
// followed by a Worker row per worker (its own queue's counters).
func (p *Ports) Rows(names []string) []monitor.Row {
	var rows []monitor.Row
	for i, name := range names {
		rows = append(rows, monitor.PortRow(name, func() xmit.Stats { return p.Stats(i) }))
		for w, ports := range p.ByWorker {
			rows = append(rows, monitor.WorkerRow(w, ports[i]))
		}
	}
	return rows
}

// Close closes every port, then the shared UMEMs.
func (p *Ports) Close() error {
	var errs []error
	for _, ports := range p.ByWorker {
		for _, q := range ports {
			errs = append(errs, q.Close())
		}
	}
	for _, u := range p.umems {
		errs = append(errs, u.Close())
	}
	p.ByWorker, p.umems = nil, nil
	return errors.Join(errs...)
}
