package ops

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

// Namespace is the prefix of every metric name the collector exports.
const Namespace = "wirespeed"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(Namespace+"_"+name, help, labels, nil)
}

type portCounter struct {
	d   *prometheus.Desc
	get func(*xmit.Stats) uint64
}

// The ports' counters, from xmit.Stats.
var portCounters = []portCounter{
	{desc("port_receive_packets_total", "Frames the port handed to Recv's callers.", "port"), func(s *xmit.Stats) uint64 { return s.RxPackets }},
	{desc("port_receive_bytes_total", "Bytes of the frames the port received, without FCS.", "port"), func(s *xmit.Stats) uint64 { return s.RxBytes }},
	{desc("port_receive_drops_total", "Frames the port, or the kernel below it, dropped before Recv saw them.", "port"), func(s *xmit.Stats) uint64 { return s.RxDropped }},
	{desc("port_transmit_packets_total", "Frames the port queued for transmission.", "port"), func(s *xmit.Stats) uint64 { return s.TxPackets }},
	{desc("port_transmit_bytes_total", "Bytes of the frames the port queued for transmission, without FCS.", "port"), func(s *xmit.Stats) uint64 { return s.TxBytes }},
	{desc("port_transmit_drops_total", "Frames Send released without queueing them: queue full, link or carrier down, too big, port closed.", "port"), func(s *xmit.Stats) uint64 { return s.TxDropped }},
	{desc("port_transmit_copies_total", "Frames Send copied from a foreign memory arena.", "port"), func(s *xmit.Stats) uint64 { return s.TxCopied }},
	{desc("port_transmit_lost_total", "Frames counted as transmitted that never left the port.", "port"), func(s *xmit.Stats) uint64 { return s.TxLost }},
	{desc("port_errors_total", "System-call and ring errors of the port.", "port"), func(s *xmit.Stats) uint64 { return s.Errors }},
	{desc("port_kernel_receive_drops_total", "The interface's kernel counters since the port opened: rx_dropped plus rx_missed_errors.", "port"), func(s *xmit.Stats) uint64 { return s.KernelRxDropped }},
	{desc("port_kernel_receive_errors_total", "The interface's kernel counters since the port opened: rx_errors.", "port"), func(s *xmit.Stats) uint64 { return s.KernelRxErrors }},
	{desc("port_kernel_transmit_drops_total", "The interface's kernel counters since the port opened: tx_dropped.", "port"), func(s *xmit.Stats) uint64 { return s.KernelTxDropped }},
	{desc("port_kernel_transmit_errors_total", "The interface's kernel counters since the port opened: tx_errors.", "port"), func(s *xmit.Stats) uint64 { return s.KernelTxErrors }},
}

var (
	portCallErrors = desc("port_call_errors_total", "Errors the port's Recv and Send calls returned to the worker.", "port", "call")
	portUp         = desc("port_up", "1 if the port's link is up and has carrier, 0 if not.", "port")

	fwdFrames     = desc("fwd_frames_total", "Frames the forwarding stage was given, by verdict; a held frame handed back after resolution is counted again under its new verdict.", "verdict")
	fwdDrops      = desc("fwd_drops_total", "Frames the forwarding stage dropped, by reason.", "reason")
	fwdFragments  = desc("fwd_fragments_total", "IPv4 fragments the forwarding stage produced.")
	fwdICMP       = desc("fwd_icmp_errors_total", "ICMP error messages the forwarding stage generated.")
	fwdICMPSupp   = desc("fwd_icmp_errors_suppressed_total", "ICMP error messages the forwarding stage did not send, by reason.", "reason")
	fwdDiscarded  = desc("fwd_discarded_total", "Local and held frames released for want of a taker.")
	ifRxPackets   = desc("interface_receive_packets_total", "Frames received on the logical interface.", "interface")
	ifRxBytes     = desc("interface_receive_bytes_total", "Bytes received on the logical interface.", "interface")
	ifTxPackets   = desc("interface_transmit_packets_total", "Frames the forwarding stage sent on the logical interface.", "interface")
	ifTxBytes     = desc("interface_transmit_bytes_total", "Bytes the forwarding stage sent on the logical interface.", "interface")
	ifMTU         = desc("interface_mtu_bytes", "Largest IPv4 packet the router sends on the interface.", "interface")
	neighEntries  = desc("neigh_entries", "Neighbour table entries, by interface and NUD state.", "interface", "state")
	neighHeld     = desc("neigh_held_frames", "Frames waiting in the neighbours' hold queues.", "interface")
	fibRoutes     = desc("fib_routes", "Prefixes in the route table.")
	neighARPIn    = desc("neigh_arp_received_total", "ARP frames the neighbour table took, by outcome.", "result")
	neighARPOut   = desc("neigh_arp_sent_total", "ARP frames the neighbour table sent, by type.", "type")
	neighHoldIn   = desc("neigh_hold_total", "Frames given to the neighbour table to hold until their next hop resolves, by outcome.", "result")
	neighHoldOut  = desc("neigh_held_released_total", "Held frames that left the hold queues, by how.", "result")
	neighCounters = []struct {
		d   *prometheus.Desc
		get func(*neigh.Counters) uint64
	}{
		{desc("neigh_arp_not_sent_total", "ARP replies, requests and announcements not sent for want of a buffer or batch room."), func(c *neigh.Counters) uint64 { return c.GenNoBuffer }},
		{desc("neigh_learned_total", "Entries created from ARP requests for the router's addresses."), func(c *neigh.Counters) uint64 { return c.Learned }},
		{desc("neigh_refused_total", "Entries not created because the table was full."), func(c *neigh.Counters) uint64 { return c.Refused }},
		{desc("neigh_not_on_link_total", "ARP request senders not learned: outside the receiving interface's subnets."), func(c *neigh.Counters) uint64 { return c.NotOnLink }},
		{desc("neigh_mac_changes_total", "Entries whose MAC address changed."), func(c *neigh.Counters) uint64 { return c.MACChanges }},
		{desc("neigh_probe_replies_total", "ARP replies sent to RFC 5227 probes."), func(c *neigh.Counters) uint64 { return c.ProbeReplies }},
		{desc("neigh_entries_created_total", "Entries created (learned, next hops, static)."), func(c *neigh.Counters) uint64 { return c.Created }},
		{desc("neigh_resolutions_total", "Entries that went from INCOMPLETE or FAILED to a valid state."), func(c *neigh.Counters) uint64 { return c.Resolved }},
		{desc("neigh_resolution_failures_total", "Entries that went to FAILED."), func(c *neigh.Counters) uint64 { return c.Failures }},
		{desc("neigh_evictions_total", "Entries without next hops removed to make room."), func(c *neigh.Counters) uint64 { return c.Evicted }},
		{desc("neigh_collected_total", "STALE and FAILED entries without next hops removed after GCStale."), func(c *neigh.Counters) uint64 { return c.Collected }},
		{desc("neigh_hosts_added_total", "Hosts of connected subnets given a host next hop and a /32 route."), func(c *neigh.Counters) uint64 { return c.Hosts }},
		{desc("neigh_hosts_removed_total", "Host next hops and routes removed."), func(c *neigh.Counters) uint64 { return c.HostsRemoved }},
		{desc("neigh_nexthop_updates_total", "Next-hop table updates the neighbour table published."), func(c *neigh.Counters) uint64 { return c.NextHopPub }},
	}
)

// The NUD states an entry can be in, as label values (Entries never reports NONE).
var neighStates = []neigh.State{neigh.StateIncomplete, neigh.StateReachable, neigh.StateStale, neigh.StateDelay,
	neigh.StateProbe, neigh.StateFailed, neigh.StatePermanent}

var stateLabels = func() []string {
	var l []string
	for _, s := range neighStates {
		l = append(l, lower(s.String()))
	}
	return l
}()

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Collector is a prometheus.Collector of a Source: at every scrape it reads the counters the
// ports, the stage, the neighbour table and the route table already keep, and adds nothing to
// their work per frame. Register it with a prometheus.Registry.
//
// Metric names start with wirespeed_; counters end in _total, sizes are in bytes; the labels are
// port (a physical port), interface (a logical interface of the stage), verdict and reason (the
// stage's, as fwd.Reason names them), state (a NUD state in lower case), result, type and call.
//
// Concurrency: Collect may run on any goroutine, concurrently with the workers and with itself.
// It reads the stage's and the ports' published counters (atomic loads), and takes the neighbour
// table's mutex once for its counters and once to list its entries, as any control-plane call
// does; the workers hold that mutex once per batch at most, so a scrape can delay a batch by the
// time it takes to copy the table.
type Collector struct {
	src Source
}

// NewCollector returns a collector of src (copied: later changes to src are not seen).
func NewCollector(src *Source) *Collector {
	c := &Collector{}
	if src != nil {
		c.src = *src
		c.src.Ports = append([]Port(nil), src.Ports...)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, p := range portCounters {
		ch <- p.d
	}
	for _, d := range []*prometheus.Desc{portCallErrors, portUp, fwdFrames, fwdDrops, fwdFragments, fwdICMP, fwdICMPSupp,
		fwdDiscarded, ifRxPackets, ifRxBytes, ifTxPackets, ifTxBytes, ifMTU, neighEntries, neighHeld, fibRoutes,
		neighARPIn, neighARPOut, neighHoldIn, neighHoldOut} {
		ch <- d
	}
	for _, n := range neighCounters {
		ch <- n.d
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.src.Ports {
		if p.Stats != nil {
			s := p.Stats()
			for _, pc := range portCounters {
				counter(ch, pc.d, pc.get(&s), p.Name)
			}
		}
		if p.Errors != nil {
			e := p.Errors.Counts()
			counter(ch, portCallErrors, e.Recv, p.Name, "recv")
			counter(ch, portCallErrors, e.Send, p.Name, "send")
		}
		if p.LinkUp != nil {
			up := 0.0
			if p.LinkUp() {
				up = 1
			}
			gauge(ch, portUp, up, p.Name)
		}
	}
	if r := c.src.Stage; r != nil {
		collectStage(ch, r)
	}
	if t := c.src.Neigh; t != nil {
		c.collectNeigh(ch, t)
	}
	if rt := c.src.Routes; rt != nil {
		gauge(ch, fibRoutes, float64(rt.Len()))
	}
}

func collectStage(ch chan<- prometheus.Metric, r *fwd.Router) {
	collectFwdCounters(ch, r.Counters())
	for i, ifc := range r.Ifaces() {
		name := ifaceName(r, uint16(i))
		s := r.IfaceStats(uint16(i))
		counter(ch, ifRxPackets, s.RxPackets, name)
		counter(ch, ifRxBytes, s.RxBytes, name)
		counter(ch, ifTxPackets, s.TxPackets, name)
		counter(ch, ifTxBytes, s.TxBytes, name)
		gauge(ch, ifMTU, float64(ifc.MTU), name)
	}
}

// collectFwdCounters sends the series of the stage's counters k.
func collectFwdCounters(ch chan<- prometheus.Metric, k fwd.Counters) {
	for _, v := range []struct {
		name string
		n    uint64
	}{{"forwarded", k.Forwarded}, {"fragmented", k.Fragmented}, {"local", k.Local}, {"echoed", k.Echoed},
		{"held", k.Held}, {"dropped", k.Dropped()}} {
		counter(ch, fwdFrames, v.n, v.name)
	}
	for i, n := range k.Drops {
		counter(ch, fwdDrops, n, fwd.Reason(i).String())
	}
	counter(ch, fwdFragments, k.Fragments)
	counter(ch, fwdICMP, k.ICMPErrors)
	counter(ch, fwdICMPSupp, k.ICMPRateLimited, "rate-limit")
	counter(ch, fwdICMPSupp, k.ICMPNoBuffer, "no-buffer")
	counter(ch, fwdICMPSupp, k.ICMPNoAddress, "no-address")
	counter(ch, fwdDiscarded, k.Discarded)
}

// ifaceName is the stage's name of interface id, or its number when it has none.
func ifaceName(r *fwd.Router, id uint16) string {
	if r != nil {
		if ifs := r.Ifaces(); int(id) < len(ifs) && ifs[id].Name != "" {
			return ifs[id].Name
		}
	}
	return strconv.Itoa(int(id))
}

func (c *Collector) collectNeigh(ch chan<- prometheus.Metric, t *neigh.Table) {
	collectNeighCounters(ch, t.Counters())

	// Entries by interface and state: every state of every interface the stage has, zeros
	// included, so that a series does not vanish when its last entry leaves.
	type count struct {
		states [neigh.StatePermanent + 1]int
		held   int
	}
	counts := map[uint16]*count{}
	var ids []uint16
	get := func(id uint16) *count {
		if counts[id] == nil {
			counts[id] = new(count)
			ids = append(ids, id)
		}
		return counts[id]
	}
	if c.src.Stage != nil {
		for i := range c.src.Stage.Ifaces() {
			get(uint16(i))
		}
	}
	for _, e := range t.Entries() {
		n := get(e.Iface)
		if int(e.State) < len(n.states) {
			n.states[e.State]++
		}
		n.held += e.Held
	}
	for _, id := range ids {
		name := ifaceName(c.src.Stage, id)
		n := counts[id]
		for i, s := range neighStates {
			gauge(ch, neighEntries, float64(n.states[s]), name, stateLabels[i])
		}
		gauge(ch, neighHeld, float64(n.held), name)
	}
}

// collectNeighCounters sends the series of the neighbour table's counters k.
func collectNeighCounters(ch chan<- prometheus.Metric, k neigh.Counters) {
	for _, v := range []struct {
		name string
		n    uint64
	}{{"request", k.Requests}, {"reply", k.Replies}, {"update", k.Updates}, {"ignored", k.Ignored},
		{"malformed", k.Malformed}, {"bad-sender", k.BadSender}, {"looped", k.Looped}, {"conflict", k.Conflicts},
		{"no-interface", k.NoIface}} {
		counter(ch, neighARPIn, v.n, v.name)
	}
	for _, v := range []struct {
		name string
		n    uint64
	}{{"reply", k.RepliesSent}, {"request", k.RequestsSent}, {"probe", k.ProbesSent}, {"announce", k.AnnouncesSent}} {
		counter(ch, neighARPOut, v.n, v.name)
	}
	for _, v := range []struct {
		name string
		n    uint64
	}{{"held", k.Held}, {"no-neighbour", k.HoldNoNeighbour}, {"no-host", k.HoldNoHost}, {"too-big", k.HoldTooBig},
		{"no-buffer", k.HoldNoBuffer}} {
		counter(ch, neighHoldIn, v.n, v.name)
	}
	for _, v := range []struct {
		name string
		n    uint64
	}{{"ready", k.Ready}, {"failed", k.Failed}, {"queue-overflow", k.QueueOverflow}, {"backlog-overflow", k.BacklogOverflow}} {
		counter(ch, neighHoldOut, v.n, v.name)
	}
	for _, n := range neighCounters {
		counter(ch, n.d, n.get(&k))
	}
}
