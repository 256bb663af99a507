// Package afpacket is wirespeed's AF_PACKET back-end: a pure-Go (golang.org/x/sys/unix, no cgo) Port
// on a Linux packet socket, with a TPACKET_V3 receive ring (or, as an option, a TPACKET_V2 one) read
// in place and sendmmsg(2) batches on the way out (or, as an option, a PACKET_TX_RING).
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
// Config.FrameRing selects a TPACKET_V2 ring instead: fixed-size slots, one frame each, which the
// kernel hands over one by one, waking Wait for every frame, so a frame waits for no block to fill
// or retire. Choose it for latency at low rates, where a TPACKET_V3 frame waits up to RetireTimeout
// (1 ms) for its block. What it costs: Recv and Release write every frame's slot status (the slot is
// marked held when handed out and given back with a compare-and-swap when released, where TPACKET_V3
// writes a block's status once per block), the kernel wakes the reader for every frame rather than
// every block, and every frame takes a whole slot (2 KiB by default: the default ring holds 8192
// frames in 16 MiB, about 8 ms at 1 Mpps, where the TPACKET_V3 ring holds over 100 000 frames of 60
// bytes). Recv's walk is the same: no system call, a frame's header read in place. A consumer holding
// one frame stops the ring at that slot (the kernel drops and counts what arrives until it is
// released), as holding one frame of each block does with TPACKET_V3. The TX ring (Config.TxRing)
// cannot be combined with it. See bench/notes/rx.md.
//
// The kernel takes the outermost VLAN tag out of frames it receives (veth and most NICs do so before
// AF_PACKET sees them) and reports it out of band. The port never loses it: the frame carries
// frame.FlagVLAN with Frame.TPID and Frame.TCI, which package vlan consumes (vlan.Pop, demux) or puts
// back (Batch.ReinsertVLAN, which every port's Send calls for a frame that still has the flag);
// Config.ReinsertVLAN puts it back in the bytes on
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
// By default Send transmits a batch with one sendmmsg(2) call whose iovecs point into the frames' own
// memory, so frames received on another port (its ring, a UMEM, a Pool) are forwarded without a copy
// in user space. Out-of-band VLAN tags go in band through an extra iovec; runts are padded to 60
// bytes. Frames the kernel refuses are counted in Stats().TxDropped, never lost silently
// (Config.TxRetries sets how hard Send tries when the kernel has no room). Config.QdiscBypass sets
// PACKET_QDISC_BYPASS.
//
// While the interface is down or has no carrier (LinkUp false), Send drops and counts every frame
// (TxDropped) without a system call: the kernel would report the frames sent and drop them (a veth
// whose peer is down counts them in its tx_dropped). Send reads the carrier at most once a
// millisecond, so frames sent in the millisecond after the carrier goes can still be lost that way;
// the Kernel* fields of Stats (the interface's own counters, read over rtnetlink) show them, along
// with whatever else the kernel drops below the port: a veth peer's full backlog or too small an
// MTU, a NIC's missed frames.
//
// Config.TxRing selects a PACKET_TX_RING instead (TPACKET_V3 slots, mapped together with the receive
// ring): Send copies every frame into a slot (tag in band, padded; counted in Stats().TxCopied),
// publishes it with an atomic store of TP_STATUS_SEND_REQUEST and rings the doorbell once per batch
// with send(2). A slot comes back (TP_STATUS_AVAILABLE) when the kernel frees the frame's skb; when
// every slot is still in flight the rest of the batch waits (TxRetries) or is dropped and counted.
// Frames the kernel does not take are taken back from the ring and counted, so no slot is left
// pending between calls.
//
// sendmmsg is the default: it forwards from the receive ring without a copy, and the TX ring sends
// no more frames per second (bench/notes/tx.md). The TX ring spends less CPU of the sending thread per
// frame, so it is the choice when the sending core's CPU time is what runs out.
//
// On systems other than Linux, Open returns an error wrapping errors.ErrUnsupported.
package afpacket
