package neigh

import (
	"net/netip"

	"github.com/wirespeed/wirespeed/frame"
)

// State is a neighbour's NUD (neighbour unreachability detection) state, as Linux names them.
type State uint8

const (
	StateNone       State = iota // no entry (never reported by Entries)
	StateIncomplete              // resolving: broadcast requests sent, no answer yet
	StateReachable               // confirmed by a reply to us within the reachable time
	StateStale                   // the MAC is known but unconfirmed; usable
	StateDelay                   // usable; waiting DelayFirstProbe before probing
	StateProbe                   // usable; unicast probes sent, waiting for a reply
	StateFailed                  // resolution failed; no MAC
	StatePermanent               // static: never changes, never expires
)

var stateNames = [...]string{"NONE", "INCOMPLETE", "REACHABLE", "STALE", "DELAY", "PROBE", "FAILED", "PERMANENT"}

// String returns the state's name as `ip neigh` prints it (REACHABLE, STALE, ...).
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "?"
}

// Valid reports whether a neighbour in state s has a MAC that traffic may use: REACHABLE, STALE,
// DELAY, PROBE and PERMANENT (Linux's NUD_VALID). Next hops of a neighbour in any other state are
// flagged fib.NextHopUnresolved.
func (s State) Valid() bool {
	switch s {
	case StateReachable, StateStale, StateDelay, StateProbe, StatePermanent:
		return true
	}
	return false
}

// Entry is one neighbour as Entries reports it.
type Entry struct {
	Iface    uint16     // interface ID
	Addr     netip.Addr // IPv4 address
	MAC      frame.MAC  // the neighbour's MAC (zero until it is first known)
	State    State
	NextHops []uint32 // the next-hop indices that follow this neighbour (AddNextHop), ascending
	Held     int      // frames in its hold queue
}

// Counters count everything a Table did. Each ARP frame Input takes is counted in ARPIn and in
// exactly one of Requests, Replies, Updates, Ignored, Malformed, BadSender, Looped, Conflicts and
// NoIface. Each frame Hold is given is counted in HoldIn and in exactly one of Held, HoldNoNeighbour,
// HoldNoHost, HoldTooBig and HoldNoBuffer; each held frame then leaves in exactly one of Ready, Failed,
// QueueOverflow and BacklogOverflow, or is still queued (Entries' Held plus the backlogs Poll has not
// emptied yet).
type Counters struct {
	// Input, by outcome.
	ARPIn     uint64 // ARP frames taken out of local batches
	Requests  uint64 // requests for one of our addresses (RFC 5227 probes included)
	Replies   uint64 // replies that updated an entry
	Updates   uint64 // other ARP that updated an entry: requests for other hosts, gratuitous ARP
	Ignored   uint64 // well-formed ARP that changed nothing: for other hosts from unknown senders, unsolicited replies
	Malformed uint64 // truncated, hardware/protocol type or length not Ethernet/IPv4, operation not request/reply
	BadSender uint64 // sender MAC broadcast, multicast or zero; sender IPv4 0/8 (0.0.0.0 other than in a request), 127/8, 224/4 or 240/4
	Looped    uint64 // sender MAC is the receiving interface's own
	Conflicts uint64 // sender IPv4 is one of our addresses, from another MAC
	NoIface   uint64 // Frame.Port is no configured interface

	// Input, besides the outcome.
	Learned      uint64 // entries created from requests for our addresses
	Refused      uint64 // entries not created because the table was full (MaxEntries)
	NotOnLink    uint64 // request senders not learned: outside the receiving interface's subnets
	MACChanges   uint64 // entries whose MAC changed
	RepliesSent  uint64 // replies appended to out
	ProbeReplies uint64 // of RepliesSent: answers to RFC 5227 probes (sender 0.0.0.0)

	// Hold, by outcome.
	HoldIn          uint64 // frames given to Hold
	Held            uint64 // copied into a hold queue (or, for a neighbour already resolved, straight into the ready backlog)
	HoldNoNeighbour uint64 // Frame.Meta is no next hop added with AddNextHop or AddSubnet
	HoldNoHost      uint64 // for a subnet, but no entry for its destination: not IPv4, not a host address, table full, host next hops used up, Hosts refused the route
	HoldTooBig      uint64 // larger than QueueBytes or than a pool buffer
	HoldNoBuffer    uint64 // the pool had no buffer for the copy

	// Held frames, by how they left.
	Ready           uint64 // handed to Poll's ready batch
	Failed          uint64 // handed to Poll's failed batch
	QueueOverflow   uint64 // dropped, oldest first, to make room in a hold queue for a newer frame
	BacklogOverflow uint64 // dropped because the ready or failed backlog was full

	// Generated frames.
	RequestsSent  uint64 // broadcast requests (INCOMPLETE)
	ProbesSent    uint64 // unicast requests (PROBE)
	AnnouncesSent uint64 // gratuitous ARP (Announce)
	GenNoBuffer   uint64 // replies, requests and announcements not sent: no pool buffer or no room in out

	// Entries.
	Created   uint64 // entries created (Learned, AddNextHop, AddStatic)
	Resolved  uint64 // entries that went from INCOMPLETE or FAILED to a valid state
	Failures  uint64 // entries that went to FAILED
	Evicted   uint64 // entries without next hops removed to make room for one that has (or a static one)
	Collected uint64 // STALE and FAILED entries without next hops removed after GCStale

	// Hosts of connected subnets (AddSubnet).
	Hosts        uint64 // hosts given a host next hop and a /32 route
	HostsRemoved uint64 // host next hops and routes removed (the host failed, or was deleted or evicted)
	NextHopPub   uint64 // next-hop table updates published (one per call that changed something)
}
