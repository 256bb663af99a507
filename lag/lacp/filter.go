package lacp

import "github.com/wirespeed/wirespeed/xmit/afpacket"

// NoSlowFilter is a classic BPF program for the data path's AF_PACKET sockets
// (afpacket.Config.Filter): it rejects the frames of EtherType 0x8809 (after the kernel took any
// VLAN tag out) and accepts every other frame whole. With it the slow-protocols frames never reach
// the workers; a Sender's Receive takes them to the controller instead, and the aggregates skip
// their per-frame scan (lag.Config.SlowFiltered).
var NoSlowFilter = []afpacket.BPF{
	{Code: 0x28, K: 12},                   // ldh [12]: the EtherType
	{Code: 0x15, Jt: 0, Jf: 1, K: 0x8809}, // jeq #0x8809
	{Code: 0x06, K: 0},                    // ret #0: rejected
	{Code: 0x06, K: 0xffffffff},           // ret #-1: the whole frame
}
