package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
)

// LACP in lagrouter (-lag 802.3ad): one lacp.Controller for the aggregate, whatever the number of
// workers. Every worker's lag.Aggregate hands it the LACPDUs its members receive
// (lag.Config.SlowProtocols) and is attached to it (the controller sets the members usable), and the
// controller sends its PDUs through a port of its own per member: a lacp.Sender (send-only
// AF_PACKET socket) on real interfaces, the member's in-memory link shared under a lock in memory.

// usesLACP reports whether the aggregate runs under LACP.
func (c *Config) usesLACP() bool { return c.LAG == "802.3ad" || c.LAG == "lacp" }

// modeName is the aggregate's mode as the banner prints it.
func (c *Config) modeName() string {
	switch {
	case c.usesLACP():
		return fmt.Sprintf("802.3ad %s, lacp_rate %s, %s", c.Hash, c.LACPRate, map[bool]string{true: "active", false: "passive"}[c.LACPActive])
	case c.LAG == "xor":
		return "xor " + c.Hash
	}
	return c.LAG
}

// lacpConfig is the controller's configuration: system, the rate and activity of the flags,
// min-links, one port per member sending through tx.
func (c *Config) lacpConfig(system frame.MAC, tx []xmit.Port, macs []frame.MAC, events func(lacp.Event)) *lacp.Config {
	lc := &lacp.Config{System: system, Fast: c.LACPRate == "fast", Passive: !c.LACPActive, MinLinks: c.MinLinks, Events: events}
	for i, p := range tx {
		pc := lacp.PortConfig{Tx: p}
		if macs != nil {
			pc.MAC = macs[i]
		}
		lc.Ports = append(lc.Ports, pc)
	}
	return lc
}

// logger is the event log (-log: text or JSON lines) on stderr, or on cfg.logw.
func (c *Config) logger() *slog.Logger { return c.OperatorFlags.Logger(c.logw) }

// logLACP returns the controller's event callback: every event logged, members by name. Links
// and members going down and the aggregate going down are warnings; a state change that moves
// only the periodic machine (PERIODIC_TX and back, every LACPDU) is logged at debug level.
func logLACP(log *slog.Logger, lagName string, members []string) func(lacp.Event) {
	name := func(m int) string {
		if m >= 0 && m < len(members) {
			return members[m]
		}
		return fmt.Sprint(m)
	}
	level := func(up bool) slog.Level {
		if up {
			return slog.LevelInfo
		}
		return slog.LevelWarn
	}
	ctx := context.Background()
	last := make([]lacp.PortStatus, len(members)) // the last state logged at info level
	return func(e lacp.Event) {
		switch e.Kind {
		case lacp.EventLink:
			log.Log(ctx, level(e.Up), "lag member link "+upDown(e.Up), "lag", lagName, "member", name(e.Member))
		case lacp.EventMember:
			msg := "lag member distributing"
			if !e.Up {
				msg = "lag member stopped distributing"
			}
			log.Log(ctx, level(e.Up), msg, "lag", lagName, "member", name(e.Member))
		case lacp.EventAggregate:
			log.Log(ctx, level(e.Up), "lag "+upDown(e.Up), "lag", lagName)
		case lacp.EventState:
			p := &e.Port
			lv := slog.LevelInfo
			if e.Member >= 0 && e.Member < len(last) {
				l := &last[e.Member]
				if p.Rx == l.Rx && p.Mux == l.Mux && p.Selected == l.Selected && p.Aggregator == l.Aggregator && p.Actor == l.Actor && p.Partner == l.Partner {
					lv = slog.LevelDebug
				} else {
					*l = *p
				}
			}
			log.Log(ctx, lv, "lacp state", "lag", lagName, "member", name(e.Member), "rx", p.Rx.String(), "mux", p.Mux.String(),
				"periodic", p.Periodic.String(), "selected", p.Selected, "aggregator", p.Aggregator,
				"actor", p.Actor.State.String(), "partner", p.Partner.State.String(),
				"partner_system", p.Partner.System.String(), "partner_key", p.Partner.Key, "partner_port", p.Partner.Port)
		}
	}
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// watchMembers logs the aggregate's members becoming usable or not (the carrier poller's view;
// without LACP nothing else reports it), checking every interval until ctx ends.
func watchMembers(ctx context.Context, log *slog.Logger, agg *lag.Aggregate, members []string, every time.Duration) {
	if every <= 0 {
		every = 10 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	was := make([]int8, len(members)) // -1 not read yet, 0 down, 1 up
	for i := range was {
		was[i] = -1
	}
	for {
		for i, name := range members {
			up := int8(0)
			if agg.MemberUp(i) {
				up = 1
			}
			switch {
			case up == was[i] || up == 1 && was[i] == -1: // the first reading logs a member down only
			case up == 1:
				log.Info("lag member up", "lag", agg.Name(), "member", name)
			default:
				log.Warn("lag member down", "lag", agg.Name(), "member", name)
			}
			was[i] = up
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sharedTx is a port whose Send is shared by the data path and the LACP controller under a
// mutex taken once per batch: in memory, where a member has no second socket to send the PDUs.
type sharedTx struct {
	xmit.Port
	mu sync.Mutex
}

func (p *sharedTx) Send(b *frame.Batch) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Port.Send(b)
}

// LinkUp is the port's own (the aggregate's carrier poller reads it).
func (p *sharedTx) LinkUp() bool {
	ls, ok := p.Port.(xmit.LinkStater)
	return !ok || ls.LinkUp()
}

// slowTap is the in-memory partner's receive side of one member: it takes the slow-protocols
// frames out of what the member receives and hands them to the partner's controller, and passes
// the rest on (what the generator checks).
type slowTap struct {
	xmit.Port
	member int
	to     lag.SlowHandler
	drop   []frame.Frame
	slow   uint64
}

func (p *slowTap) Recv(b *frame.Batch) (int, error) {
	for {
		n, err := p.Port.Recv(b)
		if n == 0 {
			return n, err
		}
		keep, drop := 0, p.drop[:0]
		for _, f := range b.Frames {
			if d := f.Data(b.Mem); len(d) >= frame.EtherLen && d[12] == lag.SlowEtherType>>8 && d[13] == lag.SlowEtherType&0xff {
				p.to.HandleSlow(p.member, d)
				drop = append(drop, f)
				continue
			}
			b.Frames[keep] = f
			keep++
		}
		b.Frames = b.Frames[:keep]
		if len(drop) > 0 && b.Owner != nil {
			b.Owner.Release(drop)
		}
		p.drop = drop[:0]
		p.slow += uint64(len(drop))
		if keep > 0 || err != nil {
			return keep, err
		}
	}
}

// memberReport is the per-member line of the final report: what each member received and sent,
// and with LACP its LACPDUs in and out and its state.
func memberReport(lagName string, names []string, stats []xmit.Stats, st *lacp.Status) string {
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s members:", lagName)
	for i, name := range names {
		if i > 0 {
			b.WriteByte(';')
		}
		s := stats[i]
		fmt.Fprintf(&b, " %s rx %s, tx %s (dropped %s)", name, g(s.RxPackets), g(s.TxPackets), g(s.TxDropped))
		if st != nil && i < len(st.Ports) {
			p := &st.Ports[i]
			fmt.Fprintf(&b, ", LACPDUs in %s out %s, %s", g(p.Stats.LACPDURx), g(p.Stats.LACPDUTx), p.Mux)
			if p.Stats.Illegal+p.Stats.Unknown+p.Stats.RxOverflow+p.Stats.TxErrors > 0 {
				fmt.Fprintf(&b, " (illegal %s, unknown %s, rx overflow %s, tx errors %s)", g(p.Stats.Illegal), g(p.Stats.Unknown), g(p.Stats.RxOverflow), g(p.Stats.TxErrors))
			}
		}
	}
	return b.String()
}

// slowReport is the line of the frames the aggregates took out of the receive path: the
// slow-protocols frames handed to the controller (or, direct, received by the controller's own
// sockets while the members' filter them out) and those dropped on members not distributing.
func slowReport(lagName string, aggs []*lag.Aggregate, st *lacp.Status, direct uint64) string {
	var slow, inactive uint64
	for _, a := range aggs {
		slow += a.SlowFrames()
		inactive += a.RxInactive()
	}
	up := "down"
	if st.Up {
		up = "up"
	}
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	how := g(slow) + " slow-protocols frames to the controller"
	if direct > 0 {
		how = fmt.Sprintf("slow-protocols frames filtered out in the kernel (%s read by the controller's sockets; %s reached the workers)", g(direct), g(slow))
	}
	return fmt.Sprintf("%s LACP: aggregate %s (aggregator %d); receive path: %s, %s dropped on members not distributing",
		lagName, up, st.Aggregator, how, g(inactive))
}
