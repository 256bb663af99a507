// Package afpacket is wirespeed's AF_PACKET back-end: a pure-Go (golang.org/x/sys/unix, no cgo) Port
// on a Linux packet socket, with a TPACKET_V3 receive ring read in place and sendmmsg(2) batches on
// the way out.
//
// # Receive
//
// The kernel copies each frame into a ring of blocks shared with user space (mmap). Recv walks the
// blocks the kernel has handed over and returns frame.Frame descriptors pointing into the ring: no copy
// and no allocation per frame. A block goes back to the kernel when every frame handed out from it has
// been released, in any order, from any goroutine (see Port on ownership). The kernel hands a block
// over when it is full or when Config.RetireTimeout (1 ms by default) passes, which bounds the latency
// at low rates. Wait blocks in poll(2) until a block is ready.
//
// The kernel takes the outermost VLAN tag out of frames it receives (veth and most NICs do so before
// AF_PACKET sees them) and reports it out of band. The port never loses it: the frame carries
// frame.FlagVLAN with Frame.TPID and Frame.TCI, which package vlan consumes (vlan.Pop, demux) or puts
// back (vlan.Reinsert, and every port's Send); Config.ReinsertVLAN puts it back in the bytes on
// receive instead, using the headroom (Config.Headroom, PACKET_RESERVE).
//
// Frames the kernel drops because the ring is full (a slow consumer, or one that holds frames) are
// counted by the kernel (PACKET_STATISTICS) and appear in Stats().RxDropped and RingStats.
//
// Several workers can share an interface's receive load: open the interface once per worker with the
// same Config.Fanout (PACKET_FANOUT, by flow hash, CPU, queue, round robin...).
//
// # Transmit
//
// Send transmits a batch with one sendmmsg(2) call whose iovecs point into the frames' own memory, so
// frames received on another port (its ring, a UMEM, a Pool) are forwarded without a copy in user
// space. Out-of-band VLAN tags go in band through an extra iovec; runts are padded to 60 bytes. Frames
// the kernel refuses are counted in Stats().TxDropped, never lost silently (Config.TxRetries sets how
// hard Send tries when the kernel has no room). sendmmsg is the only transmit method: on veth a
// TPACKET TX ring was measured slower (veth must copy ring pages, skb_copy_ubufs) and it would need a
// user-space copy of every forwarded frame into the TX ring. (The TX ring was measured before this
// package existed, see the project's measured-here notes; it is not implemented here.)
//
// On systems other than Linux, Open returns an error wrapping errors.ErrUnsupported.
package afpacket
