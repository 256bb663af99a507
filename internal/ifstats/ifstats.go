// Package ifstats reads the kernel's own counters and flags of a network interface (rtnetlink
// RTM_GETLINK: struct rtnl_link_stats64 and ifi_flags) for wirespeed's back-ends, so that what the
// kernel drops below a port (a veth whose peer is down or whose peer's backlog is full, a NIC out of
// descriptors) shows up in the port's Stats.
//
// It uses a netlink socket rather than /sys/class/net/DEV/statistics: the socket belongs to the
// network namespace of the thread that opens it, as the port's own socket does, while sysfs shows
// the namespace of whoever mounted it (a port opened in another namespace would read another
// interface's counters, or none).
package ifstats

import "github.com/wirespeed/wirespeed/xmit"

// Counters are the fields of struct rtnl_link_stats64 (linux/if_link.h), in its order. A kernel
// that reports fewer fields leaves the rest zero.
type Counters struct {
	RxPackets, TxPackets, RxBytes, TxBytes      uint64
	RxErrors, TxErrors, RxDropped, TxDropped    uint64
	Multicast, Collisions                       uint64
	RxLengthErrors, RxOverErrors, RxCRCErrors   uint64
	RxFrameErrors, RxFIFOErrors, RxMissedErrors uint64
	TxAbortedErrors, TxCarrierErrors            uint64
	TxFIFOErrors, TxHeartbeatErrors             uint64
	TxWindowErrors, RxCompressed, TxCompressed  uint64
	RxNoHandler, RxOtherhostDropped             uint64
}

// numCounters is the number of uint64 fields of Counters.
const numCounters = 25

func (c *Counters) fields() *[numCounters]uint64 {
	return (*[numCounters]uint64)(toPtr(c))
}

// AddTo adds the counters that xmit.Stats carries to s: KernelRxDropped (rx_dropped +
// rx_missed_errors), KernelRxErrors (rx_errors), KernelTxDropped (tx_dropped) and KernelTxErrors
// (tx_errors).
func (c Counters) AddTo(s *xmit.Stats) {
	s.KernelRxDropped += c.RxDropped + c.RxMissedErrors
	s.KernelRxErrors += c.RxErrors
	s.KernelTxDropped += c.TxDropped
	s.KernelTxErrors += c.TxErrors
}

// accumulator turns successive readings of an interface's counters into counts since the first
// one. A field that goes down (a driver that resets its counters) counts from zero again, so the
// sums never go backwards.
type accumulator struct {
	last, sum Counters
}

func (a *accumulator) start(c Counters) { a.last, a.sum = c, Counters{} }

func (a *accumulator) add(c Counters) {
	cur, last, sum := c.fields(), a.last.fields(), a.sum.fields()
	for i := range cur {
		if cur[i] >= last[i] {
			sum[i] += cur[i] - last[i]
		} else {
			sum[i] += cur[i]
		}
	}
	a.last = c
}
