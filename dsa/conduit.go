package dsa

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/frame"
)

// Config sets up a Conduit.
type Config struct {
	// Tagger is the switch's tag format (required).
	Tagger Tagger
	// Ports is the number of ports per switch that may appear in tags (switch port numbers
	// 0 to Ports-1, the CPU port included if it ever shows up). Default: the format's TX width
	// (Spec.Ports).
	Ports int
	// Switches is the number of switches in the tree (Marvell device index, tag_8021q switch ID);
	// default 1. A frame from switch s, port p becomes user port s*Ports+p.
	Switches int
	// Prio is the traffic class Send asks for (formats that carry one).
	Prio uint8
	// TxFlags are added to every Dest that Send and SendTo encode, e.g. DestTimestamp while a
	// KSZ switch has hardware timestamping on, DestBridged, or DestPad.
	TxFlags DestFlags
	// Trunks is the number of trunk (LAG) IDs whose frames Recv delivers, 0-32. A switch that
	// offloads a LAG tags a frame received on a member port with the LAG's trunk ID instead of
	// the port (Marvell FORWARD with the trunk bit: InfoTrunk, Info.Port = trunk ID), and Linux
	// hands it to the LAG's bond or team device (tag_dsa.c: dsa_lag_by_id(tree, ID + 1)). Recv
	// gives a frame from trunk t < Trunks the Frame.Port TrunkPort(t), whatever the switch
	// index; a frame from a trunk ID >= Trunks (Linux: no such LAG) is dropped as ReasonTrunk.
	// Default 0: every trunk frame is dropped as ReasonTrunk.
	Trunks int
	// Local makes Recv keep, unchanged and with Frame.Port = LocalPort(), the frames that the
	// Linux tag driver hands to the conduit interface itself rather than to a user port. Of the
	// built-in taggers only rtl4a has such frames: one whose EtherType is not 0x8899 carries no
	// tag and tag_rtl4_a.c passes it through. Default false: they are dropped as
	// ReasonNotTagged.
	Local bool
}

// PortStats are one port's counters (a user port, or a trunk or the local port: receive only).
type PortStats struct {
	RxFrames  uint64 // frames demultiplexed to the port
	RxBytes   uint64 // their bytes, tag removed
	RxTrapped uint64 // of those, trapped by the switch (not forwarded by hardware)
	RxPTP     uint64 // PTP event frames classified while timestamping was enabled on the port
	TxFrames  uint64 // frames tagged toward the port
	TxBytes   uint64 // their bytes, tag included
}

type portCounters struct {
	rxFrames, rxBytes, rxTrapped, rxPTP, txFrames, txBytes atomic.Uint64
}

type portDelta struct {
	rxFrames, rxBytes, rxTrapped, rxPTP, txFrames, txBytes uint64
}

// Conduit demultiplexes the frames of a DSA conduit interface to user ports (Recv) and tags
// frames toward user ports (Send).
//
// User ports are numbered switch*Ports + port; Recv stores that number in Frame.Port and Send
// reads the destination from Frame.Out. After the NumPorts() user ports come, as Recv's
// Frame.Port only, the Config.Trunks trunk ports (TrunkPort) and, with Config.Local, the local
// port (LocalPort): NumRxPorts() in all. Stats counts them like user ports; Send and SendTo
// address user ports only (a Frame.Out of NumPorts() or more is dropped as ReasonPort).
//
// Concurrency: a Conduit belongs to one worker goroutine; Recv, Send and SendTo must not be called
// concurrently (make one Conduit per worker, they share nothing). Stats, RxDrops, TxDrops and
// EnableTimestamps may be called from any goroutine at any time: counters are atomics that the
// owner updates once per batch (one atomic add per counter and touched port), never per frame.
//
// Frames that fail (malformed or unknown tag, port out of range, no room to tag) are never lost:
// they go to the caller's drop batch or, without one, back to the batch's Owner in one Release
// per batch, and are counted per Reason.
type Conduit struct {
	_ [0]sync.Mutex

	t        Tagger
	c        *codec // the built-in codec behind t, for direct calls; nil for other Taggers
	ports    int
	switches int
	n        int  // user ports: ports x switches
	trunks   int  // trunk ports n to n+trunks-1
	nrx      int  // Frame.Port values Recv produces: n + trunks (+ 1 with Config.Local)
	local    int  // the local port, or -1 without Config.Local
	passUp   bool // Config.Local and a tagger whose untagged frames go to the conduit (rtl4a)
	prio     uint8
	txFlags  DestFlags
	outPort  []uint8 // user port -> switch port
	outSw    []uint8 // user port -> switch index

	stats  []portCounters
	rxDrop [NumReasons]atomic.Uint64
	txDrop [NumReasons]atomic.Uint64

	tsOn   atomic.Int32 // number of ports with timestamping enabled
	tsPort []atomic.Bool

	// owner-only scratch
	pend     []portDelta
	touched  []uint16
	dropPend [NumReasons]uint64
	scratch  []frame.Frame
	ins      []Info   // Recv: the Info of each frame of the chunk being demultiplexed
	rs       []Reason // Recv: its outcome
}

const scratchCap = 256

// NewConduit builds a conduit. It allocates all its state here; Recv and Send allocate nothing.
func NewConduit(cfg Config) (*Conduit, error) {
	if cfg.Tagger == nil {
		return nil, errors.New("dsa: Config.Tagger is nil")
	}
	spec := cfg.Tagger.Spec()
	if cfg.Ports == 0 {
		cfg.Ports = spec.Ports
	}
	if cfg.Switches == 0 {
		cfg.Switches = 1
	}
	if cfg.Ports < 1 || cfg.Ports > 32 || cfg.Switches < 1 || cfg.Switches > 32 {
		return nil, fmt.Errorf("dsa: %d ports x %d switches out of range (1-32 each)", cfg.Ports, cfg.Switches)
	}
	if cfg.Trunks < 0 || cfg.Trunks > 32 {
		return nil, fmt.Errorf("dsa: %d trunks out of range (0-32)", cfg.Trunks)
	}
	n := cfg.Ports * cfg.Switches
	nrx, local := n+cfg.Trunks, -1
	if cfg.Local {
		local = nrx
		nrx++
	}
	c := &Conduit{
		t: cfg.Tagger, ports: cfg.Ports, switches: cfg.Switches, n: n,
		trunks: cfg.Trunks, nrx: nrx, local: local,
		prio: cfg.Prio, txFlags: cfg.TxFlags,
		outPort: make([]uint8, n), outSw: make([]uint8, n),
		stats: make([]portCounters, nrx), tsPort: make([]atomic.Bool, nrx),
		pend: make([]portDelta, nrx), touched: make([]uint16, 0, nrx),
		scratch: make([]frame.Frame, 0, scratchCap),
		ins:     make([]Info, scratchCap), rs: make([]Reason, scratchCap),
	}
	if bt, ok := cfg.Tagger.(builtin); ok {
		c.c = bt.base()
		c.passUp = cfg.Local && c.c.fm.local
	}
	for u := 0; u < n; u++ {
		c.outSw[u], c.outPort[u] = uint8(u/cfg.Ports), uint8(u%cfg.Ports)
	}
	return c, nil
}

// Tagger returns the conduit's tag format.
func (c *Conduit) Tagger() Tagger { return c.t }

// NumPorts is the number of user ports (Ports x Switches).
func (c *Conduit) NumPorts() int { return c.n }

// NumRxPorts is the number of Frame.Port values Recv produces: the user ports, the trunk ports
// (Config.Trunks) and the local port (Config.Local).
func (c *Conduit) NumRxPorts() int { return c.nrx }

// TrunkPort is the Frame.Port Recv gives a frame from trunk (LAG) ID t: NumPorts()+t, or -1 if
// t is not below Config.Trunks.
func (c *Conduit) TrunkPort(t int) int {
	if t < 0 || t >= c.trunks {
		return -1
	}
	return c.n + t
}

// LocalPort is the Frame.Port Recv gives a frame that Linux hands to the conduit interface
// itself (Config.Local): NumPorts()+Config.Trunks, or -1 without Config.Local.
func (c *Conduit) LocalPort() int { return c.local }

// UserPort is the user port number of (switch, port).
func (c *Conduit) UserPort(sw, port int) int { return sw*c.ports + port }

// EnableTimestamps turns PTP receive timestamping on or off for user port u (not a trunk or the
// local port: ErrPort). While at least one
// port has it on, Recv classifies the frames of those ports (PTP over Ethernet 0x88F7, or UDP
// event port 319 over IPv4/IPv6, behind at most one VLAN tag, as ptp_classify_raw does), counts
// them in RxPTP and, if the tag carried a timestamp, sets frame.FlagTimestamp and Frame.Meta to
// the raw value. While no port has it on, Recv does none of that work. Safe from any goroutine;
// takes effect at the next batch. In a build with -tags dsa_noptp, where Recv has no classifier,
// turning it on is an error wrapping errors.ErrUnsupported.
func (c *Conduit) EnableTimestamps(u int, on bool) error {
	if u < 0 || u >= c.n {
		return ErrPort
	}
	if on && !ptpCompiled {
		return errNoPTP
	}
	if c.tsPort[u].CompareAndSwap(!on, on) {
		if on {
			c.tsOn.Add(1)
		} else {
			c.tsOn.Add(-1)
		}
	}
	return nil
}

// Stats returns the counters of user port u, or of the trunk or local port u (receive counters
// only); zero for an unknown port. Safe from any goroutine.
func (c *Conduit) Stats(u int) PortStats {
	if u < 0 || u >= c.nrx {
		return PortStats{}
	}
	s := &c.stats[u]
	return PortStats{
		RxFrames: s.rxFrames.Load(), RxBytes: s.rxBytes.Load(), RxTrapped: s.rxTrapped.Load(),
		RxPTP: s.rxPTP.Load(), TxFrames: s.txFrames.Load(), TxBytes: s.txBytes.Load(),
	}
}

// RxDrops is the number of received frames dropped for reason r. Safe from any goroutine.
func (c *Conduit) RxDrops(r Reason) uint64 {
	if r >= NumReasons {
		return 0
	}
	return c.rxDrop[r].Load()
}

// TxDrops is the number of frames Send/SendTo could not tag, for reason r. Safe from any goroutine.
func (c *Conduit) TxDrops(r Reason) uint64 {
	if r >= NumReasons {
		return 0
	}
	return c.txDrop[r].Load()
}

func reasonOf(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	for r := ReasonTruncated; r < NumReasons; r++ {
		if errors.Is(err, reasonErr[r]) {
			return r
		}
	}
	return ReasonBadTag
}

// Recv decodes every frame of b in place: the tag is stripped and Frame.Port set to the user
// port (or to a trunk port or the local port: see Config.Trunks and Config.Local). Frames that
// fail are moved out of b (b keeps the good ones, in order) into drop if it is
// non-nil (drop must be empty or hold frames of b's arena; when it is full the rest are
// released), else released to b.Owner in one call. Recv returns the number of frames left in b.
func (c *Conduit) Recv(b *frame.Batch, drop *frame.Batch) int {
	drop = c.dropBatch(b, drop)
	fr := b.Frames
	mem := b.Mem
	ts := ptpCompiled && c.tsOn.Load() != 0
	keep := 0
	for s := 0; s < len(fr); s += scratchCap {
		chunk := fr[s:min(s+scratchCap, len(fr))]
		ins, rs := c.ins[:len(chunk)], c.rs[:len(chunk)]
		if c.c != nil {
			c.c.decodeBatch(mem, chunk, ins, rs) // the format chosen once per chunk
		} else {
			for j := range chunk {
				rs[j] = reasonOf(c.t.Decode(b, s+j, &ins[j]))
			}
		}
		keep = c.demux(b, drop, s, keep, ts)
	}
	b.Frames = fr[:keep]
	c.finish(b, &c.rxDrop)
	return keep
}

// demux is Recv's second pass over the chunk of b starting at frame s, decoded into c.ins and
// c.rs: it maps each decoded frame to its user, trunk or local port, counts it and moves it to
// fr[keep], and stashes the failures. It returns the new keep.
func (c *Conduit) demux(b, drop *frame.Batch, s, keep int, ts bool) int {
	fr := b.Frames
	chunk := fr[s:min(s+scratchCap, len(fr))]
	ins, rs := c.ins[:len(chunk)], c.rs[:len(chunk)]
	pend, ports, switches := c.pend, c.ports, c.switches
	for j := range chunk {
		f := &chunk[j]
		in := &ins[j]
		r := rs[j]
		u := 0
		if r == ReasonNone {
			switch {
			case in.Flags&(InfoTrunk|InfoBridge) != 0:
				switch {
				case in.Flags&InfoBridge != 0:
					r = ReasonBridge
				case int(in.Port) < c.trunks:
					u = c.n + int(in.Port)
				default:
					r = ReasonTrunk
				}
			case int(in.Port) >= ports || int(in.Switch) >= switches:
				r = ReasonPort
			default:
				u = int(in.Switch)*ports + int(in.Port)
			}
		} else if r == ReasonNotTagged && c.passUp {
			// The frame is unchanged (a failed decode touches nothing); its Info is not set.
			*in = Info{}
			r, u = ReasonNone, c.local
		}
		if r != ReasonNone {
			c.dropPend[r]++
			c.stash(b, drop, *f)
			continue
		}
		f.Port = uint16(u)
		d := &pend[u]
		if d.rxFrames == 0 { // Recv touches only rx counters, all zero until the port's first frame
			c.touched = append(c.touched, uint16(u))
		}
		d.rxFrames++
		d.rxBytes += uint64(f.Len)
		if in.Flags&InfoTrapped != 0 {
			d.rxTrapped++
		}
		if ts && c.tsPort[u].Load() {
			stamp(b.Mem, f, in, d)
		}
		if keep != s+j { // after a drop only: the frame moves down over the dropped ones
			fr[keep] = *f
		}
		keep++
	}
	return keep
}

// Send tags every frame of b toward user port Frame.Out. Frames that cannot be tagged leave b as
// in Recv. It returns the number of frames left in b.
func (c *Conduit) Send(b *frame.Batch, drop *frame.Batch) int {
	drop = c.dropBatch(b, drop)
	fr := b.Frames
	keep := 0
	for i := range fr {
		f := &fr[i]
		u := int(f.Out)
		r := ReasonPort
		if u < c.n {
			d := Dest{Ports: 1 << c.outPort[u], Switch: c.outSw[u], Prio: c.prio, Flags: c.txFlags}
			r = ReasonNone
			if err := c.t.Encode(b, i, d); err != nil { // a built-in tagger's fast path first
				r = reasonOf(err)
			}
		}
		if r != ReasonNone {
			c.dropPend[r]++
			c.stash(b, drop, *f)
			continue
		}
		p := &c.pend[u]
		if *p == (portDelta{}) {
			c.touched = append(c.touched, uint16(u))
		}
		p.txFrames++
		p.txBytes += uint64(f.Len)
		fr[keep] = *f
		keep++
	}
	b.Frames = fr[:keep]
	c.finish(b, &c.txDrop)
	return keep
}

// SendTo tags every frame of b toward d (with Config.TxFlags added), e.g. a flood to a port mask.
// Each port of d.Ports on switch d.Switch counts every frame. Failures leave b as in Recv.
func (c *Conduit) SendTo(b *frame.Batch, d Dest, drop *frame.Batch) int {
	drop = c.dropBatch(b, drop)
	d.Flags |= c.txFlags
	fr := b.Frames
	keep := 0
	var frames, bytes uint64
	for i := range fr {
		f := &fr[i]
		r := ReasonNone
		if err := c.t.Encode(b, i, d); err != nil {
			r = reasonOf(err)
		}
		if r != ReasonNone {
			c.dropPend[r]++
			c.stash(b, drop, *f)
			continue
		}
		frames++
		bytes += uint64(f.Len)
		fr[keep] = *f
		keep++
	}
	b.Frames = fr[:keep]
	if frames > 0 && int(d.Switch) < c.switches {
		for m := d.Ports; m != 0; m &= m - 1 {
			p := m.First()
			if p >= c.ports {
				break
			}
			u := int(d.Switch)*c.ports + p
			pd := &c.pend[u]
			if *pd == (portDelta{}) {
				c.touched = append(c.touched, uint16(u))
			}
			pd.txFrames += frames
			pd.txBytes += bytes
		}
	}
	c.finish(b, &c.txDrop)
	return keep
}

// dropBatch returns drop if dropped frames may go there, nil otherwise.
func (c *Conduit) dropBatch(b, drop *frame.Batch) *frame.Batch {
	if drop == nil {
		return nil
	}
	if drop.Len() == 0 {
		drop.Adopt(b)
		return drop
	}
	if drop.SameArena(b) && drop.Owner == b.Owner {
		return drop
	}
	return nil
}

// stash keeps a dropped frame for the drop batch or for one Release at the end of the batch.
func (c *Conduit) stash(b, drop *frame.Batch, f frame.Frame) {
	if drop != nil && drop.Append(f) {
		return
	}
	if len(c.scratch) == cap(c.scratch) {
		c.release(b)
	}
	c.scratch = append(c.scratch, f)
}

func (c *Conduit) release(b *frame.Batch) {
	if len(c.scratch) > 0 && b.Owner != nil {
		b.Owner.Release(c.scratch)
	}
	c.scratch = c.scratch[:0]
}

// finish releases stashed frames and publishes the batch's counters.
func (c *Conduit) finish(b *frame.Batch, drops *[NumReasons]atomic.Uint64) {
	c.release(b)
	for r := range c.dropPend {
		if v := c.dropPend[r]; v != 0 {
			drops[r].Add(v)
			c.dropPend[r] = 0
		}
	}
	for _, u := range c.touched {
		d := &c.pend[u]
		s := &c.stats[u]
		if d.rxFrames != 0 {
			s.rxFrames.Add(d.rxFrames)
			s.rxBytes.Add(d.rxBytes)
		}
		if d.rxTrapped != 0 {
			s.rxTrapped.Add(d.rxTrapped)
		}
		if d.rxPTP != 0 {
			s.rxPTP.Add(d.rxPTP)
		}
		if d.txFrames != 0 {
			s.txFrames.Add(d.txFrames)
			s.txBytes.Add(d.txBytes)
		}
		*d = portDelta{}
	}
	c.touched = c.touched[:0]
}

// stamp is the optional per-frame PTP work: classify, count, hand the tag's timestamp on.
func stamp(mem []byte, f *frame.Frame, in *Info, d *portDelta) {
	if !IsPTPEvent(f.Data(mem)) {
		return
	}
	d.rxPTP++
	if in.Flags&InfoTimestamp != 0 {
		f.Flags |= frame.FlagTimestamp
		f.Meta = in.Timestamp
	}
}

// IsPTPEvent reports whether an untagged-by-the-switch Ethernet frame is a PTP message over
// Ethernet (EtherType 0x88F7) or a UDP datagram to the PTP event port 319 over IPv4 or IPv6,
// optionally behind one 802.1Q/802.1ad tag, like the kernel's ptp_classify_raw.
func IsPTPEvent(p []byte) bool {
	if len(p) < frame.EtherLen {
		return false
	}
	et, off := be16(p[12:14]), 14
	if et == frame.TypeVLAN || et == frame.TypeQinQ {
		if len(p) < 18 {
			return false
		}
		et, off = be16(p[16:18]), 18
	}
	ip := p[off:]
	switch et {
	case 0x88f7:
		return true
	case frame.TypeIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 17 || ip[6]&0x1f != 0 || ip[7] != 0 {
			return false
		}
		h := int(ip[0]&0xf) * 4
		return h >= 20 && len(ip) >= h+4 && be16(ip[h+2:h+4]) == 319
	case frame.TypeIPv6:
		return len(ip) >= 44 && ip[0]>>4 == 6 && ip[6] == 17 && be16(ip[42:44]) == 319
	}
	return false
}

// KSZTime converts a raw KSZ timestamp (2 bits of seconds, 30 bits of nanoseconds;
// ksz_decode_tstamp) to nanoseconds. The switch's PTP clock supplies the missing high seconds.
func KSZTime(raw uint32) uint64 {
	return uint64(raw>>30)*1e9 + uint64(raw&(1<<30-1))
}
