// Package frame is the memory model every wirespeed stage shares: frames, batches, the in-memory
// buffer pool, and small header views (Ethernet, IPv4, the L4 ports) with checksum helpers.
//
// # Frames are descriptors, not slices
//
// A [Frame] is a small pointer-free value that says where a frame's bytes lie in an arena of memory
// owned by an I/O layer (a [Pool], an AF_PACKET mmap ring, an AF_XDP UMEM): an offset, a length, the
// headroom in front of it and the tailroom behind it, plus a little per-frame metadata that stages
// pass along (ingress port, egress interface, an out-of-band VLAN tag, a next-hop index). Because a
// frame holds no pointer, a batch of them is a flat array the garbage collector never scans, and
// copying one between stages or across a ring costs a few words.
//
// A [Batch] is a fixed-capacity vector of frames that all live in one arena ([Batch.Mem]) and go
// back to one [Owner] ([Batch.Owner]). Every stage takes and returns a batch; per-frame work happens
// inside a loop over it, so interface calls, locks and syscalls are paid once per batch.
//
// # The metadata, stage by stage
//
// Port, Out, L3 and Meta are each one 16- or 32-bit field whose meaning is set by the stage that
// writes it; a stage documents what it reads and writes. Along the forwarding path they mean:
//
//	stage                                 Port                 Out                  L3            Meta
//	port Recv (xmit, afpacket, afxdp)     0 (afpacket PortID)  0                    0             0
//	vlan demux (Classify*, in place)      logical interface    -                    L2 length     -
//	dsa Conduit.Recv                      switch user port     -                    -             timestamp
//	fwd Worker.Process                    -                    egress interface     L2 length     next hop (held)
//	vlan Egress/Encap (read Out)          -                    -                    -             -
//	xmit TxQueue.Route (reads Out)        -                    TxQueue egress id    -             -
//	dsa Conduit.Send (reads Out)          -                    switch user port     -             -
//	port Send                             ignored              ignored              ignored       ignored
//
// "-" is left as it was. So Port is where a frame came from in the numbering of the last stage
// that classified it (port, then interface), and Out is where it goes in the numbering of the next
// stage that reads it (interface for vlan; TxQueue's egress ids, from TxQueue.Add, for a TxQueue;
// the switch port for dsa): a stage between two numberings maps one to the other (the examples'
// dsarouter maps switch ports to interfaces and back). fwd's Output.Unresolved frames keep the
// ingress interface in Port and the next-hop index in Meta, which is what package neigh and
// linuxcp read. Flags, TPID and TCI keep their one meaning throughout (FlagVLAN's tag, checksum
// state, timestamps); the out-of-band tag is the port layer's, and a port's Send puts one still
// present back into the bytes ([Batch.ReinsertVLAN]).
//
// # Ownership
//
// The holder of a batch owns its frames: it may read and write their bytes and metadata, and it must
// eventually do exactly one of these with each frame: pass it on (to a port's Send, a ring, another
// batch of the same arena) or give it back with [Batch.Free] / [Owner.Release]. After a frame is passed
// on or released the old holder must not touch its bytes again. A frame's bytes stay valid until it
// is released; no I/O layer reuses a buffer it has handed out before the buffer comes back. [Pool]
// detects a buffer released twice and counts buffers in use, so tests can prove none is lost.
//
// # Headroom
//
// Arenas reserve headroom in front of every frame (128 bytes by default in [Pool]) so that pushing a
// VLAN or switch tag moves only the 12 MAC bytes toward the front ([Frame.PushHead]) and never the
// payload. Tailroom lets a stage pad a runt to the Ethernet minimum or append a tail tag.
package frame
