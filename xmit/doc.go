// Package xmit is wirespeed's port layer: the Port contract every I/O back-end implements, the
// counters they share, and the in-memory back-end (Pipe) that lets forwarders, examples and tests run
// anywhere without root. The AF_PACKET and AF_XDP back-ends live in the subpackages afpacket and
// afxdp and implement the same contract.
//
// A Port is one RX queue and one TX queue. Workers each own their ports (run to completion, share
// nothing): a worker calls Recv, runs every stage over the batch, sorts the frames into one batch per
// egress port and calls Send once per batch. Send always takes ownership of the whole batch; frames it
// cannot queue are released and counted (Stats.TxDropped), never lost silently, and frames it queued
// that the kernel then drops before they leave, or that Close discards, are counted in Stats.TxLost.
package xmit
