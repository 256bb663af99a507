// Package e2e holds wirespeed's end-to-end forwarding experiments: the same generator, the same
// three-namespace veth topology, the same run, and the forwarders in turn, interleaved:
//
//		gen namespace              router namespace                         sink namespace
//		 g0  <---- veth ---->  in [ kernel ip_forward | vlanrouter ] out  <---- veth ---->  s0
//		 (bench/internal/gen)     (uplink, untagged)          (trunk: tagged for vlanrouter)  (XDP_DROP, counted)
//
//	  - kernel: net.ipv4.ip_forward=1 inside the router namespace only, 10.0.0.0/16 via the sink
//	    (a permanent neighbour entry, no ARP);
//	  - afpacket, afxdp: examples/vlanrouter built with `go build` and run as a subprocess inside the
//	    router namespace (`ip netns exec`, pinned to CPU 0 with taskset), -uplink in -trunk out
//	    -workers 1: it routes the frames (20 /24s, one per VLAN) out of the trunk, pushing the VLAN tag
//	    the kernel case does not push;
//	  - testpmd-afxdp, testpmd-afpacket: DPDK's dpdk-testpmd (Debian package dpdk; the rows are left
//	    out with a note when it is missing) in mac forward mode on net_af_xdp or net_af_packet over
//	    the same two veths, on CPU 0 without hugepages: it only rewrites the two MAC addresses, so it
//	    is a lower bound on a router's work, and the peer vlanrouter on the same driver path is held to.
//
// The generator sends UDP frames to addresses spread over 10.0.1.0/24 .. 10.0.20.0/24 from CPU 1,
// with the XDP live-frames engine (BPF_PROG_RUN, frames redirected into the router's veth; the
// receiving end gets an XDP_PASS program for NAPI unless AF_XDP attaches its own) or with sendmmsg.
// Every forwarder addresses its frames to a MAC that is not the sink's, so the sink's stack drops them
// at once (PACKET_OTHERHOST); the sink veth's receive counter (ip -s link) is the result: frames
// that made it through the router, per second, over a measured window after a warm-up. Each row also
// reports how busy CPU 0 (router) and CPU 1 (sender) were over the window, from /proc/stat.
//
// Two more cases (keys /xdp/softirq/tx-afxdp/ and /xdp/softirq/tx-afpacket/) measure ceilings: no
// generator and no forwarder, but gen's AF_XDP engine (wirespeed's xmit/afxdp Send) or its AF_PACKET
// sendmmsg engine transmitting from the router namespace's CPU 0 straight out of its outgoing veth,
// as fast as it can. A forwarder on that CPU and back-end cannot deliver more than its ceiling, so
// these rows bound what any user-space forwarder can reach against the kernel row of the same run.
//
// With the XDP sender the router namespace's receive NAPI runs either in softirq context on the
// sender's CPU (napi=softirq) or in its own kernel thread the scheduler can put on the other CPU
// (napi=threaded, /sys/class/net/IF/threaded): the kernel's forwarding runs inside that NAPI, so
// both are measured and each forwarder is compared with the kernel in the same mode.
//
// TestE2EVLAN is the 2010 VLAN egress table end to end: vlanrouter (AF_XDP and AF_PACKET) with
// frames coming in untagged or tagged and leaving untagged or tagged, between one "hosts"
// namespace holding the peers of both router interfaces (the kernel here has no 8021q module, so
// there is no kernel row).
//
// TestE2ELatency measures one-way latency through the same forwarders: timestamped probes at 1 kpps
// beside background traffic at 0, 10 and 90 % of the forwarder's measured capacity, received at the
// sink with kernel timestamps; p50, p99, maximum and probes lost. Its rows afxdp-idle and
// afpacket-v2-idle are vlanrouter -idle-spin 50us (app.Options.IdleSpin).
//
// The experiments are root-only and slow, so they run only when asked:
//
//	cd bench && WIRESPEED_E2E=1 go test ./e2e -run E2E -v -timeout 30m
//
// Environment: WIRESPEED_E2E=1 runs them (otherwise the test skips); WIRESPEED_E2E_RUNS (default 3)
// rounds, each running every case once in turn; WIRESPEED_E2E_SECONDS (default 2) measured seconds
// per run; WIRESPEED_E2E_CASES, comma-separated substrings of "/sender/napi/forwarder/" keys to run
// a subset (e.g. "/xdp/softirq/"); WIRESPEED_E2E_TX_BATCH (default 64), frames per send call of the
// transmit-only ceilings; WIRESPEED_E2E_PIPELINE=1 adds vlanrouter -pipeline on both back-ends
// (forwarders afpacket-pipeline, afxdp-pipeline: one receive and one transmit worker, on CPU 0 as
// the rest); WIRESPEED_E2E_OUT, a file to write the Markdown table to; WIRESPEED_E2E_PERF, a
// directory: TestE2E then runs perf stat and perf record on CPU 0 over every measured window and
// logs, per frame at the sink, the router CPU's time, context switches, system calls and softirqs,
// and the share of samples per binary (the kernel, the forwarder), and records CPU 1 too (the
// sender and the router's receive NAPI, where copy-mode AF_XDP fills the UMEM) and logs its
// busiest functions; the perf.data files stay there for perf report. The forwarder afxdp-busy is
// vlanrouter -busy-poll 64 (afxdp.Config.BusyPoll).
// Without root they skip (or fail under WIRESPEED_REQUIRE_PRIV=1, see internal/nettest).
package e2e
