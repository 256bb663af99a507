// Package gen is wirespeed's pure-Go traffic generator: the load source of the end-to-end
// benchmarks (bench/e2e) and of the command bench/cmd/gen.
//
// It builds one UDP/IPv4 frame per flow ([Frames]): sizes, optional 802.1Q or QinQ (802.1ad outer,
// 802.1Q inner) tags, VLAN IDs spread over a range, destinations spread across a list of prefixes
// (a routes file of `a.b.c.d/len` lines, [ParseRoutes], or one CIDR), and sends them with one of three
// engines:
//
//   - [EngineAFPacket]: an AF_PACKET socket (PACKET_QDISC_BYPASS) that transmits batches of frames
//     with sendmmsg(2). Every frame is an skb; the count is what the kernel accepted.
//   - [EngineXDP]: XDP live frames. BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES runs a small XDP
//     program (written with cilium/ebpf's asm package) Repeat times on recycled pages; the program
//     writes the flow's whole frame header every time (recycled pages keep what a receiver changed)
//     and bpf_redirects the frame out of the interface (ndo_xdp_xmit). Frames never become skbs, so
//     this engine offers ~10 Mpps into a veth on one core. Its count is the frames the program ran
//     on (offered); frames the peer could not take are dropped by the kernel without a count here, so
//     measure at the receiver. A veth peer needs an XDP program attached (NAPI) to receive them.
//   - [EngineAFXDP]: wirespeed's own AF_XDP port (xmit/afxdp): batches of Config.Batch frames
//     handed to Port.Send, which copies them into UMEM chunks, fills the TX ring and kicks the
//     kernel with one sendto. On a device without native AF_XDP transmit (veth) every frame then
//     becomes an skb in the kernel's copy-mode path, so this engine measures the ceiling of any
//     AF_XDP forwarder's output on that device. Its count is what the TX ring took.
//
// # Safety: network namespaces only
//
// A Generator only ever sends inside a network namespace the caller names (Config.Netns, a name
// under /var/run/netns as `ip netns add` makes them). Open refuses an empty name and refuses a
// namespace that is the one of PID 1 or of this process (the host's or the container's own
// interfaces), with [ErrHostNetns]. There is no way to send on the caller's own interfaces.
//
// # Rate and duration
//
// Config.Rate limits frames per second (a pacer that sleeps between batches; the AF_PACKET engine
// shrinks its batch to about a millisecond of traffic at low rates, the XDP engine shrinks Repeat to
// about 200 ms of traffic, as each BPF_PROG_RUN call has ~20 ms of overhead). Config.Duration stops the generator by itself; the XDP engine stops at the
// end of the BPF_PROG_RUN call in progress (a call of 2^22 frames lasts ~0.4 s at 10 Mpps).
//
// # Concurrency
//
// A Generator runs one sending goroutine locked to an OS thread (pinned to Config.CPU when asked).
// Start, Stop, Sent and Done may be called from any goroutine; Stop may be called more than once.
//
// Outside Linux, Open returns errors.ErrUnsupported; Frames, ParseRoutes and Pacer work everywhere.
package gen
