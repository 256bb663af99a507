package lag

import (
	"fmt"
)

// Mode is how an aggregate spreads frames over its members (bonding's mode).
type Mode uint8

// Modes, numbered as bonding's (BOND_MODE_*).
const (
	RoundRobin   Mode = 0 // "balance-rr": members in turn, PacketsPerMember frames each
	ActiveBackup Mode = 1 // "active-backup": one member carries everything; the next usable takes over
	XOR          Mode = 2 // "balance-xor": a member per flow, by the hash policy
	Broadcast    Mode = 3 // "broadcast": every frame on every usable member
)

var modeNames = [...]string{"balance-rr", "active-backup", "balance-xor", "broadcast"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode converts bonding's name ("balance-xor") or number ("2") of a mode.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n || s == fmt.Sprint(i) {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("lag: unknown mode %q", s)
}

// Member choices written by Selector.Select besides member indices.
const (
	NoMember  uint8 = 0xff // no usable member: the frame is dropped (and counted) by the aggregate
	AllUsable uint8 = 0xfe // broadcast: the frame goes to every usable member
)

// MaxMembers is the largest number of members an aggregate may have.
const MaxMembers = 64

// Buckets is the size of the hash-to-member table (team's hash_to_port_mapping).
const Buckets = 256

// Bucket is the table bucket of a hash: team's fold of a 32-bit hash into a byte (the XOR of its
// four bytes).
func Bucket(h uint32) uint8 {
	h ^= h >> 16
	h ^= h >> 8
	return uint8(h)
}

// snapshot is what workers read, once per batch, through one atomic pointer. It is never changed
// after it is published: a change builds a new one (RCU style).
type snapshot struct {
	n       int        // members configured
	usable  []uint8    // usable members, in member order (bond->usable_slaves)
	members [256]uint8 // usable, padded with zeros (pick indexes it without a bounds check)
	half    [256]uint8 // half[k] = members[k>>1] (pickHalf)
	mp, ds  uint64     // pick's constants for cnt (pickHalf takes mp>>1, pick8 mp>>8 and ds>>8)
	cnt     uint32     // len(usable)
	mpAll   uint64     // rem's constants for n (round-robin's random choice)
	dsAll   uint64
	next    [MaxMembers]uint8 // round-robin: first usable member at or after i (bond_get_slave_by_id)
	active  uint8             // active-backup: the active member, or NoMember
	table   *[Buckets]uint8   // XOR with Table: the effective bucket → member table
	upMask  uint64            // bit i: member i usable
	version uint64            // increases with every publication
}
