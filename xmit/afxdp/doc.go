// Package afxdp is wirespeed's AF_XDP back-end: a pure-Go (no cgo, no clang) implementation of the
// xmit.Port contract on an AF_XDP socket bound to one queue of a Linux interface.
//
// Open registers a UMEM (one mmap'd arena of fixed-size chunks), maps the fill, completion, RX and
// TX rings, loads a small XDP program (written with cilium/ebpf's asm package) that redirects the
// queue into an XSKMAP holding the socket, attaches it native (driver) or generic (SKB) mode, and
// binds the socket, zero-copy where the driver has it and copy mode otherwise. Port.Mode and
// Port.AttachMode report what runs. A copy-mode socket registers its UMEM in unaligned chunk mode
// (the kernel then reuses a few buffer records, hot in the receiving CPU's cache, instead of one
// per chunk); the chunks themselves stay aligned either way.
//
// # Frames and ownership
//
// Frames handed out by Recv are descriptors into the UMEM: b.Mem is the UMEM and b.Owner the UMEM.
// Releasing them (b.Free) returns them to the UMEM's free list, from which Recv refills the fill
// ring in bursts; Send puts them on the TX ring without copying, and the completion ring gives them
// back. Several ports can share one UMEM (NewUMEM, Config.UMEM; XDP_SHARED_UMEM), so a frame received
// on one port is sent on another by handing its descriptor to the other socket's TX ring. Frames of
// any other arena are copied into free UMEM chunks by Send (Stats.TxCopied).
//
// Every chunk of a UMEM is always in exactly one place: the free list, a fill ring or the kernel's
// receive side, a caller's hands, a TX ring or the kernel's transmit side. UMEM.Accounting reports
// the counts, which always add up to the UMEM's size; releasing or sending a chunk that the caller
// does not hold (a double release, a frame used after Send) panics instead of corrupting the UMEM.
//
// # Accounting
//
// Send counts what it puts on the TX ring in Stats.TxPackets and what it cannot in TxDropped. A frame
// on the ring is not yet sent: the kernel may drop it as it takes it (in copy mode sendto then
// answers EBUSY: the interface went down or lost its carrier), skip it as an invalid descriptor
// (XDP_STATISTICS tx_invalid_descs), or never take it (the interface stays down until Close). Each
// of these is counted in Stats.TxLost, so TxPackets-TxLost frames reached the interface. While the
// interface is down or has no carrier (LinkUp false, read at most once a millisecond) Send puts
// nothing on the ring and counts the frames in TxDropped. What the interface drops after that (a
// veth whose peer is down or full) is in the Kernel* fields of Stats, the interface's own counters
// read over rtnetlink.
//
// # Concurrency
//
// As the xmit.Port contract says: one goroutine in Recv/Wait, one in Send; Stats, XDPStats, LinkUp,
// Mode and Close from anywhere. Ring indices live in mmap'd memory shared with the kernel and are
// read and written with sync/atomic, once per batch. The UMEM's free list is guarded by a mutex
// taken once per batch. Close waits for a Recv or Send in progress, wakes a Wait, and keeps the UMEM
// mapped until every frame the caller still holds has been released.
//
// On systems other than Linux, Open returns errors.ErrUnsupported.
package afxdp
