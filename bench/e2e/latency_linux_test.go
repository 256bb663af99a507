package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// Probe frames carry probeMagic and the sender's CLOCK_REALTIME nanoseconds in their UDP payload.
const (
	probeMagic  = 0x77737031 // "wsp1"
	probeOffset = 14 + 20 + 8
)

// TestE2ELatency measures the one-way latency the forwarders add, on the topology of TestE2E:
// probe frames at 1,000 per second from the generator namespace, each stamped with the time just
// before its send, received at the sink by an AF_PACKET socket whose kernel receive timestamp
// (SO_TIMESTAMPNS) ends the measurement; one clock, one machine. Beside the probes, background
// traffic from the sendmmsg generator loads the router at 0, 10 % and 90 % of its capacity, which
// each run measures first as the rate reaching the sink when that generator sends as fast as it can
// (so it is the smaller of the router's and the sender's limits: the table says which it is).
// It prints p50, p99 and the maximum per forwarder and load, and the probes lost. It asserts
// nothing about times.
//
//	cd bench && WIRESPEED_E2E=1 go test ./e2e -run E2ELatency -v -timeout 30m
//
// WIRESPEED_E2E_LAT_SECONDS (default 3) probe seconds per run, WIRESPEED_E2E_RUNS (default 3) rounds,
// WIRESPEED_E2E_CASES a comma-separated list of substrings of forwarder names to keep.
func TestE2ELatency(t *testing.T) {
	if os.Getenv("WIRESPEED_E2E") != "1" {
		t.Skip("end-to-end experiments run only with WIRESPEED_E2E=1 (root)")
	}
	nettest.RequirePriv(t)
	runs := envInt("WIRESPEED_E2E_RUNS", 3)
	probeTime := time.Duration(envInt("WIRESPEED_E2E_LAT_SECONDS", 3)) * time.Second

	bin := filepath.Join(t.TempDir(), "vlanrouter")
	if out, err := exec.Command("go", "build", "-C", "../..", "-o", bin, "./examples/vlanrouter").CombinedOutput(); err != nil {
		t.Fatalf("go build vlanrouter: %v\n%s", err, out)
	}
	tp := newTopo(t)
	var dst []netip.Prefix
	for i := 1; i <= 20; i++ {
		dst = append(dst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24))
	}
	routers := map[string]router{
		"kernel":        kernelRouter{tp.rtr, tp.rout},
		"afpacket":      newVLANRouter(bin, tp.rtr.Name, "afpacket", tp.rout, tp.rin),
		"afxdp":         newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin),
		"afpacket-spin": newVLANRouter(bin, tp.rtr.Name, "afpacket", tp.rout, tp.rin, "-spin"),
		"afxdp-spin":    newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin, "-spin"),
		"afpacket-v2":   newVLANRouter(bin, tp.rtr.Name, "afpacket-v2", tp.rout, tp.rin),
		// Polling through gaps shorter than 50 µs before blocking (app.Options.IdleSpin).
		"afxdp-idle":       newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin, "-idle-spin", "50us"),
		"afpacket-v2-idle": newVLANRouter(bin, tp.rtr.Name, "afpacket-v2", tp.rout, tp.rin, "-idle-spin", "50us"),
	}
	names := []string{"kernel", "afpacket", "afpacket-v2", "afxdp", "afpacket-spin", "afxdp-spin", "afxdp-idle", "afpacket-v2-idle"}
	if _, err := exec.LookPath("dpdk-testpmd"); err == nil {
		routers["testpmd-afxdp"] = newTestPMD(tp.rtr.Name, "net_af_xdp", tp.rin, tp.rout)
		routers["testpmd-afpacket"] = newTestPMD(tp.rtr.Name, "net_af_packet", tp.rin, tp.rout)
		names = append(names, "testpmd-afxdp", "testpmd-afpacket")
	} else {
		t.Log("dpdk-testpmd not found (Debian package dpdk): no testpmd rows")
	}
	if f := os.Getenv("WIRESPEED_E2E_CASES"); f != "" {
		names = slices.DeleteFunc(names, func(n string) bool {
			for _, sub := range strings.Split(f, ",") {
				if strings.Contains(n, sub) {
					return false
				}
			}
			return true
		})
	}

	// One host in the first routed /24 (not its all-zeros address, which a router need not forward).
	probeDst := []netip.Prefix{netip.MustParsePrefix("10.0.1.7/32")}
	probe, err := gen.Frames(&gen.Config{Netns: tp.gen.Name, Interface: tp.g0, DstMAC: tp.rinMAC, Dst: probeDst})
	if err != nil {
		t.Fatal(err)
	}
	bgCfg := func(rate float64) *gen.Config {
		return &gen.Config{Netns: tp.gen.Name, Interface: tp.g0, Engine: gen.EngineAFPacket, Flows: 1000,
			Dst: dst, DstMAC: tp.rinMAC, CPU: 1, Nice: nice(), Rate: rate}
	}
	loads := []float64{0, 0.1, 0.9}
	type key struct {
		fwd  string
		load float64
	}
	type result struct {
		lat          []time.Duration
		sent, lost   int
		capacity, bg float64
	}
	res := map[key]*result{}
	capacity := map[string][]float64{}
	for round := range runs {
		for _, name := range names {
			r := routers[name]
			// The capacity: what reaches the sink with the generator unpaced.
			if err := r.start(); err != nil {
				t.Errorf("round %d %s: %v", round, name, err)
				continue
			}
			g, err := gen.Open(bgCfg(0))
			if err != nil {
				r.stop()
				t.Fatal(err)
			}
			g.Start()
			time.Sleep(500 * time.Millisecond)
			s0, _ := rxPackets(tp.sink, tp.s0)
			t0 := time.Now()
			time.Sleep(time.Second)
			s1, _ := rxPackets(tp.sink, tp.s0)
			capPPS := float64(s1-s0) / time.Since(t0).Seconds()
			gr := g.Stop()
			r.stop()
			capacity[name] = append(capacity[name], capPPS)
			t.Logf("%s: capacity %.3f Mpps at the sink (sender %v)", name, capPPS/1e6, gr)

			for _, load := range loads {
				if err := r.start(); err != nil {
					t.Errorf("round %d %s: %v", round, name, err)
					continue
				}
				var bg *gen.Generator
				if load > 0 {
					if bg, err = gen.Open(bgCfg(load * capPPS)); err != nil {
						r.stop()
						t.Fatal(err)
					}
					bg.Start()
				}
				time.Sleep(300 * time.Millisecond)
				lat, sent, err := probeRun(tp, probe[0], 1000, probeTime)
				var bgr gen.Result
				if bg != nil {
					bgr = bg.Stop()
				}
				log := r.stop()
				if err != nil {
					t.Errorf("round %d %s load %.0f%%: %v; %s", round, name, 100*load, err, log)
					continue
				}
				k := key{name, load}
				if res[k] == nil {
					res[k] = &result{}
				}
				res[k].lat = append(res[k].lat, lat...)
				res[k].sent += sent
				res[k].lost += sent - len(lat)
				res[k].capacity = capPPS
				res[k].bg = bgr.PPS()
			}
		}
	}

	var md strings.Builder
	fmt.Fprintf(&md, "| forwarder | load | background Mpps | p50 µs | p99 µs | max µs | probes lost |\n|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		for _, load := range loads {
			r := res[key{name, load}]
			if r == nil || len(r.lat) == 0 {
				fmt.Fprintf(&md, "| %s | %.0f %% | | failed | | | |\n", name, 100*load)
				continue
			}
			slices.Sort(r.lat)
			q := func(p float64) float64 { return float64(r.lat[int(p*float64(len(r.lat)-1))].Nanoseconds()) / 1e3 }
			fmt.Fprintf(&md, "| %s | %.0f %% | %.3f | %.1f | %.1f | %.1f | %d of %d |\n", name, 100*load, r.bg/1e6,
				q(0.5), q(0.99), q(1), r.lost, r.sent)
		}
	}
	fmt.Fprintf(&md, "\nProbes at 1 kpps for %v per run, %d rounds pooled. Load: background sendmmsg traffic (1000 flows, 60 B) at that share of the capacity measured in the same round:", probeTime, runs)
	for _, name := range names {
		fmt.Fprintf(&md, " %s %.3f Mpps;", name, median(capacity[name])/1e6)
	}
	fmt.Fprintf(&md, " %s.\n", schedNote())
	t.Logf("\n%s", md.String())
	if out := os.Getenv("WIRESPEED_E2E_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

// probeRun sends probes at pps for d from the generator's interface and returns the latencies the
// sink saw and the number sent.
func probeRun(tp *topo, frame []byte, pps int, d time.Duration) ([]time.Duration, int, error) {
	rx, err := openProbeSink(tp.sink, tp.s0)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(rx)
	var tx int
	var addr unix.SockaddrLinklayer
	err = tp.gen.Do(func() error {
		ifi, err := net.InterfaceByName(tp.g0)
		if err != nil {
			return err
		}
		tx, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		addr = unix.SockaddrLinklayer{Ifindex: ifi.Index, Protocol: htons(unix.ETH_P_IP)}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(tx)

	n := int(d.Seconds() * float64(pps))
	lat := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		oob := make([]byte, 256)
		for {
			m, oobn, _, _, err := unix.Recvmsg(rx, buf, oob, 0)
			if err != nil {
				select {
				case <-stop:
					return
				default:
					continue // the receive timeout: look at stop again
				}
			}
			rcv, ok := rxStamp(oob[:oobn])
			if !ok {
				continue
			}
			for _, off := range []int{probeOffset, probeOffset + 4} { // untagged, or one VLAN tag
				if off+12 <= m && binary.BigEndian.Uint32(buf[off:]) == probeMagic {
					sent := int64(binary.BigEndian.Uint64(buf[off+4:]))
					lat = append(lat, time.Duration(rcv-sent))
					break
				}
			}
		}
	}()

	runtime.LockOSThread()
	f := slices.Clone(frame)
	binary.BigEndian.PutUint32(f[probeOffset:], probeMagic)
	start := time.Now()
	sent := 0
	for i := range n {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(pps))
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		binary.BigEndian.PutUint64(f[probeOffset+4:], uint64(time.Now().UnixNano()))
		if err := unix.Sendto(tx, f, 0, &addr); err == nil {
			sent++
		}
	}
	runtime.UnlockOSThread()
	time.Sleep(200 * time.Millisecond) // the last probes in flight
	close(stop)
	wg.Wait()
	return lat, sent, nil
}

// openProbeSink opens an AF_PACKET socket on ifname in ns that receives only probe frames (a
// classic BPF filter on the magic, untagged or with one VLAN tag), with kernel receive timestamps
// and a 100 ms receive timeout.
func openProbeSink(ns *nettest.NS, ifname string) (int, error) {
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		// Protocol 0 receives nothing until the filter is attached and the socket bound.
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0); err != nil {
			return err
		}
		filter := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: probeOffset},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: probeMagic},
			{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: probeOffset + 4},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: probeMagic},
			{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
			{Code: unix.BPF_RET | unix.BPF_K, K: 0},
		}
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			unix.Close(fd)
			return fmt.Errorf("SO_ATTACH_FILTER: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			unix.Close(fd)
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		tv := unix.Timeval{Usec: 100000}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			unix.Close(fd)
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index, Protocol: htons(unix.ETH_P_ALL)}); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	return fd, err
}

// rxStamp returns the SCM_TIMESTAMPNS time in a control message buffer.
func rxStamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return ts.Nano(), true
		}
	}
	return 0, false
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
