// Package linuxcp makes the Linux kernel the control plane of a wirespeed router, as VPP's
// linux-cp plugin and grout do: the kernel keeps the router's addresses, ARP, and whatever runs on
// the host (a routing daemon such as FRR or BIRD, SSH), and wirespeed's workers forward.
//
// # Exception path
//
// Each router interface (fwd.Iface, VLAN interfaces included) has a TAP interface in the kernel
// with the same MAC address and MTU (OpenTAP). Frames the forwarding stage delivers locally
// (fwd.Output.Local: the router's own addresses, ARP, broadcasts and anything else not forwarded)
// go up the TAP of their interface, their VLAN tags removed; what the kernel sends on a TAP goes
// out the interface's physical port, tagged as the interface's egress header (the vlan.Demux)
// says. Exception carries both directions:
//
//	worker: Process → Output.Local → Worker.Up ──ring (per worker)──► writer goroutine → TAP → kernel
//	worker: Worker.Take(port) → Port.Send  ◄──ring (per TAP)── reader goroutine ◄── TAP ◄── kernel
//
// Each TAP has one reader and one writer goroutine, which read and write in batches; frames cross
// between goroutines through the lock-free rings of package ring in bursts, never one at a time.
// The workers never wait for the kernel: Up copies the frames into the exception path's own pool
// (so the worker's arena is released at once) and a full queue, like an empty pool, is a counted
// drop. Each direction has a pool of its own (Config.Pool up, Config.DownPool down), so local
// traffic that a slow kernel does not drain cannot take the buffers of what the kernel sends (its
// ARP replies, a routing daemon's keepalives), nor the other way round. Every frame is counted
// (Counters), and the worker's side allocates nothing.
//
// # Which of the kernel and the router sees a frame
//
// With AF_PACKET the kernel also receives every frame of the physical port: with the router's
// addresses on the TAPs, the weak host model would have the kernel answer pings and ARP for them
// on the physical interface too, beside the router. IsolatePhysical makes the kernel ignore the
// physical interface (no addresses, ARP off, IPv6 off, every IPv4 packet arriving there rejected by
// strict reverse-path filtering), while AF_PACKET keeps seeing every frame: exactly one of the two
// handles each frame, the router, and the kernel takes part only through the TAPs. With AF_XDP the
// kernel sees nothing of the frames the XDP program redirects to a socket's queue.
//
// # Netlink mirror
//
// The routes and neighbours the kernel holds (put there by a routing daemon, or learnt by the
// kernel's own ARP on the TAPs) are mirrored into the router's FIB and next-hop tables by following
// the kernel's rtnetlink notifications after an initial dump, so that the forwarding workers use
// what the control plane decided without asking the kernel per packet.
//
// Netlink is spoken through github.com/vishvananda/netlink, the library Docker, Kubernetes CNI
// plugins and Cilium use.
package linuxcp
