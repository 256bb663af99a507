package fwd

// Reason is why a frame was dropped.
type Reason uint8

const (
	DropVLAN              Reason = iota // no interface for the frame's port/VLAN, a malformed tag, or an interface without an Iface entry
	DropNotForUs                        // Ethernet unicast to another host
	DropMalformed                       // IPv4 header invalid or truncated, or options that cannot be fragmented
	DropChecksum                        // IPv4 header checksum wrong
	DropMartianDst                      // destination in 0/8, 127/8 or 240/4 (not 255.255.255.255)
	DropMartianSrc                      // source in 0/8, 127/8, 224/4 or 240/4
	DropMulticast                       // multicast destination outside 224.0.0.0/24: not routed
	DropL2Broadcast                     // Ethernet broadcast or multicast destination on a packet to be forwarded
	DropDirectedBroadcast               // a connected subnet's broadcast address, with Config.DirectedBroadcast off
	DropTTL                             // TTL expired (ICMP Time Exceeded)
	DropNoRoute                         // no route, or a route to a next hop the table lacks (ICMP Network Unreachable)
	DropBlackhole                       // a next hop flagged fib.NextHopDrop
	DropUnresolved                      // a next hop flagged fib.NextHopUnresolved, with Config.HoldUnresolved off
	DropTooBig                          // larger than the egress MTU with DF set (ICMP Fragmentation Needed)
	DropFragment                        // fragmentation needed but no buffer or batch room for every fragment
	DropEgress                          // the egress interface is unknown to the demux, beyond the ports, or the header rewrite failed (no headroom)
	NumReasons
)

var reasonNames = [NumReasons]string{"vlan", "not-for-us", "malformed", "checksum", "martian-dst", "martian-src",
	"multicast", "l2-broadcast", "directed-broadcast", "ttl", "no-route", "blackhole", "unresolved", "too-big",
	"fragment", "egress"}

// Verdicts a Tap sees besides the drop reasons.
const (
	Forwarded   Reason = NumReasons + iota // handed to an egress batch (fragmented packets: their first fragment)
	Local                                  // handed to Output.Local
	Echoed                                 // answered in place with an ICMP echo reply
	Held                                   // handed to Output.Unresolved
	NumVerdicts                            // bounds every verdict a Tap sees
)

var verdictNames = [...]string{"forwarded", "local", "echoed", "held"}

func (r Reason) String() string {
	switch {
	case r < NumReasons:
		return reasonNames[r]
	case r < NumVerdicts:
		return verdictNames[r-NumReasons]
	}
	return "?"
}

// Counters is the sum over workers of what the stage did. Every frame a worker was given is counted
// once in Forwarded, Fragmented, Local, Echoed, Held or Drops (so their sum is the frames received);
// a held frame given back through Worker.Resume is counted again under its new verdict. The rest
// count what the stage generated.
type Counters struct {
	Forwarded  uint64 // frames put in an egress batch unchanged in size
	Fragmented uint64 // packets cut into fragments
	Local      uint64 // frames put in Output.Local
	Echoed     uint64 // echo requests answered
	Held       uint64 // frames put in Output.Unresolved
	Drops      [NumReasons]uint64

	Fragments       uint64 // fragments produced (the first, in the packet's own buffer, included)
	ICMPErrors      uint64 // ICMP error messages generated
	ICMPRateLimited uint64 // ICMP errors the token bucket suppressed
	ICMPNoBuffer    uint64 // ICMP errors not sent for want of a buffer or room in the generated batch
	ICMPNoAddress   uint64 // ICMP errors not sent because the router has no IPv4 address
	Discarded       uint64 // local and held frames Worker.Forward released for want of a taker
}

// Received is the number of frames the workers were given.
func (c Counters) Received() uint64 {
	n := c.Forwarded + c.Fragmented + c.Local + c.Echoed + c.Held
	for _, d := range c.Drops {
		n += d
	}
	return n
}

// Dropped is the sum of Drops.
func (c Counters) Dropped() uint64 {
	var n uint64
	for _, d := range c.Drops {
		n += d
	}
	return n
}

// The worker's counters as one array: the verdicts by Reason (drops, then Forwarded..Held), then
// the generated ones.
const (
	cFragmented = int(NumVerdicts) + iota
	cFragments
	cICMPErrors
	cICMPNoBuffer
	cICMPNoAddress
	cDiscarded
	numCounters
)

func (c *Counters) add(x [numCounters]uint64) {
	for i := range c.Drops {
		c.Drops[i] += x[i]
	}
	c.Forwarded += x[Forwarded]
	c.Local += x[Local]
	c.Echoed += x[Echoed]
	c.Held += x[Held]
	c.Fragmented += x[cFragmented]
	c.Fragments += x[cFragments]
	c.ICMPErrors += x[cICMPErrors]
	c.ICMPNoBuffer += x[cICMPNoBuffer]
	c.ICMPNoAddress += x[cICMPNoAddress]
	c.Discarded += x[cDiscarded]
}
