package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/wirespeed/wirespeed/bench/internal/stats"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// nice is the niceness of the sender thread, the router process and the router's NAPI thread:
// WIRESPEED_E2E_NICE, default -20. On a shared machine the kernel's softirq forwarding runs ahead of
// every task while a user-space router competes with the other tasks on its CPU; -20 gives the
// tasks of the experiment ~99 % of a CPU against nice-0 neighbours. "0" leaves them alone.
func nice() int {
	if v, err := strconv.Atoi(os.Getenv("WIRESPEED_E2E_NICE")); err == nil && v >= -20 && v <= 19 {
		return v
	}
	return -20
}

// fifo is WIRESPEED_E2E_FIFO (1-99): vlanrouter then runs SCHED_FIFO at that priority; 0 (unset):
// a normal task at nice().
func fifo() int {
	if v, err := strconv.Atoi(os.Getenv("WIRESPEED_E2E_FIFO")); err == nil && v >= 1 && v <= 99 {
		return v
	}
	return 0
}

// schedNote says how the experiment's tasks were scheduled, for the tables' footers.
func schedNote() string {
	s := fmt.Sprintf("sender (CPU 1), router (CPU 0) and NAPI thread at nice %d", nice())
	if p := fifo(); p > 0 {
		s += fmt.Sprintf(", router SCHED_FIFO %d", p)
	}
	return s
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// topo is the three-namespace topology.
type topo struct {
	gen, rtr, sink *nettest.NS
	g0, rin        string // gen → router
	rout, s0       string // router → sink
	rinMAC         [6]byte
	pass           link.Link // XDP_PASS on rin, when attached
}

func xdpProg(action int32) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, action), asm.Return()}})
}

func attach(ns *nettest.NS, ifname string, action int32) (link.Link, error) {
	var l link.Link
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		p, err := xdpProg(action)
		if err != nil {
			return err
		}
		defer p.Close()
		l, err = link.AttachXDP(link.XDPOptions{Program: p, Interface: ifi.Index, Flags: link.XDPDriverMode})
		return err
	})
	return l, err
}

func newTopo(t *testing.T) *topo { return newTopoQueues(t, 1) }

// newTopoQueues is the topology with queues receive and transmit queues on every veth.
func newTopoQueues(t *testing.T, queues int) *topo {
	tp := &topo{gen: nettest.NewNS(t, "gen"), rtr: nettest.NewNS(t, "rtr"), sink: nettest.NewNS(t, "sink")}
	for _, ns := range []*nettest.NS{tp.gen, tp.rtr, tp.sink} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	tp.g0, tp.rin = nettest.VethQueues(t, tp.gen, tp.rtr, "g", "in", queues)
	tp.rout, tp.s0 = nettest.VethQueues(t, tp.rtr, tp.sink, "out", "s", queues)
	r := tp.rtr
	r.Exec(t, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
		"net.ipv4.conf."+tp.rin+".rp_filter=0", "net.ipv4.ip_forward=0")
	r.Exec(t, "ip", "addr", "add", "192.0.2.1/24", "dev", tp.rin)
	r.Exec(t, "ip", "addr", "add", "10.255.0.1/24", "dev", tp.rout)
	// The kernel's next hop MAC is not the sink's own, so the sink's stack drops the kernel's frames
	// as early (PACKET_OTHERHOST) as vlanrouter's (tagged, to 02:68:6f:..., also not the sink's).
	r.Exec(t, "ip", "neigh", "replace", "10.255.0.2", "lladdr", "02:00:00:00:00:98", "nud", "permanent", "dev", tp.rout)
	r.Exec(t, "ip", "route", "add", "10.0.0.0/16", "via", "10.255.0.2", "dev", tp.rout)
	mac := strings.TrimSpace(r.Exec(t, "cat", "/sys/class/net/"+tp.rin+"/address"))
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatal(err)
	}
	copy(tp.rinMAC[:], hw)
	t.Cleanup(func() {
		if tp.pass != nil {
			tp.pass.Close()
		}
	})
	return tp
}

// rxPackets reads an interface's receive counter with ip -s -j link.
func rxPackets(ns *nettest.NS, ifname string) (uint64, error) {
	out, err := exec.Command("ip", "-n", ns.Name, "-s", "-j", "link", "show", "dev", ifname).Output()
	if err != nil {
		return 0, err
	}
	var v []struct {
		Stats64 struct {
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v) != 1 {
		return 0, fmt.Errorf("ip -s -j link: %v: %s", err, out)
	}
	return v[0].Stats64.RX.Packets, nil
}

// setThreaded sets (or clears) threaded NAPI on the router's receiving veth; it exists only while
// the veth has NAPI (an XDP program attached). Threaded, the NAPI kernel thread is pinned to CPU 0,
// the router's CPU. It returns the value read back ("" if none) and "pinned" if the pin worked.
func (tp *topo) setThreaded(on bool) string {
	v := "0"
	if on {
		v = "1"
	}
	f := "/sys/class/net/" + tp.rin + "/threaded"
	exec.Command("ip", "netns", "exec", tp.rtr.Name, "sh", "-c", "echo "+v+" > "+f).Run()
	out, _ := exec.Command("ip", "netns", "exec", tp.rtr.Name, "cat", f).Output()
	got := strings.TrimSpace(string(out))
	if got == "1" {
		// The thread is "napi/<ifname>-<id>" (comm truncated to 15 bytes); ifnames are unique here.
		want := "napi/" + tp.rin
		want = want[:min(len(want), 15)]
		comms, _ := filepath.Glob("/proc/[0-9]*/comm")
		for _, c := range comms {
			b, err := os.ReadFile(c)
			if err == nil && strings.HasPrefix(string(b), want) {
				pid := filepath.Base(filepath.Dir(c))
				if exec.Command("taskset", "-p", "-c", "0", pid).Run() == nil {
					got += " pinned"
				}
				exec.Command("renice", "-n", strconv.Itoa(nice()), "-p", pid).Run()
			}
		}
	}
	return got
}

// router is one forwarder under test, started and stopped around each run.
type router interface {
	start() error
	stop() string // returns a log line (the forwarder's final counters)
}

// kernelRouter is the router namespace's own forwarding, towards the sink through out.
type kernelRouter struct {
	ns  *nettest.NS
	out string
}

// start turns forwarding on and sets the sink's permanent neighbour entry and route again: a link
// that went down (testpmd stops its ports that way) loses even permanent entries.
func (k kernelRouter) start() error {
	if out, err := exec.Command("ip", "-n", k.ns.Name, "neigh", "replace", "10.255.0.2", "lladdr", "02:00:00:00:00:98",
		"nud", "permanent", "dev", k.out).CombinedOutput(); err != nil {
		return fmt.Errorf("ip neigh replace: %v: %s", err, out)
	}
	if out, err := exec.Command("ip", "-n", k.ns.Name, "route", "replace", "10.0.0.0/16", "via", "10.255.0.2", "dev", k.out).CombinedOutput(); err != nil {
		return fmt.Errorf("ip route replace: %v: %s", err, out)
	}
	return exec.Command("ip", "netns", "exec", k.ns.Name, "sysctl", "-qw", "net.ipv4.ip_forward=1").Run()
}

func (k kernelRouter) stop() string {
	exec.Command("ip", "netns", "exec", k.ns.Name, "sysctl", "-qw", "net.ipv4.ip_forward=0").Run()
	out, _ := exec.Command("ip", "netns", "exec", k.ns.Name, "nstat", "-az", "IpForwDatagrams", "IpOutNoRoutes", "IpExtInNoRoutes").Output()
	return strings.Join(strings.Fields(string(out)), " ")
}

// procRouter runs a forwarder as a subprocess in the router namespace, pinned to CPU 0: examples/vlanrouter
// or dpdk-testpmd. It is ready when a line of its output contains ready.
type procRouter struct {
	ns    string
	cpus  string   // taskset's CPU list ("" : 0)
	args  []string // the command and its arguments
	ready string
	keep  func(line string) bool // the lines of its output that stop reports
	after func()                 // run once the process has ended, if set
	cmd   *exec.Cmd
	out   bytes.Buffer
	mu    sync.Mutex
	done  chan error
}

// newVLANRouter runs vlanrouter on backend with static next hops (the generator and the sink answer
// no ARP) and the extra flags given.
func newVLANRouter(bin, ns, backend, trunk, uplink string, extra ...string) *procRouter {
	return &procRouter{ns: ns, ready: "worker(s)",
		args: append([]string{bin, "-backend", backend, "-trunk", trunk, "-uplink", uplink, "-workers", "1", "-duration", "0", "-interval", "1h",
			"-nexthop", "trunk=02:68:6f:00:00:02,uplink=02:67:77:00:00:01"}, extra...),
		keep: func(l string) bool {
			return strings.Contains(l, "total") || strings.Contains(l, "drop") || strings.Contains(l, "accounting") || strings.Contains(l, "forwarded")
		}}
}

// newTestPMD runs dpdk-testpmd in mac forward mode on DPDK's driver drv (net_af_xdp or net_af_packet)
// over the two router interfaces: frames from uplink leave on trunk with their source MAC set to
// trunk's and their destination to the next hop vlanrouter uses, and back. No hugepages, no PCI
// probing; two lcores both on CPU 0 (the main one only waits); bursts of 64, vlanrouter's batch
// (testpmd's default of 32 halves its rate here).
func newTestPMD(ns, drv, uplink, trunk string) *procRouter {
	prefix := fmt.Sprintf("wse2e%d%s", os.Getpid(), drv)
	// net_af_xdp attaches its XDP programs through netlink, so they outlive a process that was
	// killed, and both drivers leave the interfaces promiscuous: undo both once testpmd has ended.
	after := func() {
		for _, ifname := range []string{uplink, trunk} {
			exec.Command("ip", "-n", ns, "link", "set", "dev", ifname, "xdp", "off").Run()
			exec.Command("ip", "-n", ns, "link", "set", "dev", ifname, "promisc", "off").Run()
		}
	}
	return &procRouter{ns: ns, ready: "start packet forwarding", after: after,
		// stdbuf: testpmd's stdout is a pipe here, which C buffers fully; the ready line must not wait.
		args: []string{"stdbuf", "-oL", "dpdk-testpmd", "--no-huge", "-m", "1536", "--no-pci", "--lcores", "0@0,1@0", "--file-prefix", prefix,
			"--vdev", drv + "0,iface=" + uplink, "--vdev", drv + "1,iface=" + trunk, "--",
			"--forward-mode=mac", "--burst=64", "--disable-link-check", "--eth-peer=1,02:68:6f:00:00:02", "--eth-peer=0,02:67:77:00:00:01",
			"--stats-period", "100000"},
		keep: func(l string) bool {
			return strings.Contains(l, "RX-packets") || strings.Contains(l, "TX-packets") || strings.Contains(l, "RX-missed")
		}}
}

func (v *procRouter) start() error {
	v.mu.Lock()
	v.out.Reset()
	v.mu.Unlock()
	cpus := v.cpus
	if cpus == "" {
		cpus = "0"
	}
	args := []string{"netns", "exec", v.ns, "nice", "-n", strconv.Itoa(nice()), "taskset", "-c", cpus}
	if prio := fifo(); prio > 0 {
		args = append(args, "chrt", "-f", strconv.Itoa(prio))
	}
	args = append(args, v.args...)
	v.cmd = exec.Command("ip", args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	v.cmd.Stdout, v.cmd.Stderr = pw, pw
	if err := v.cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return err
	}
	pw.Close()
	ready, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			v.mu.Lock()
			v.out.WriteString(sc.Text() + "\n")
			v.mu.Unlock()
			if strings.Contains(sc.Text(), v.ready) {
				once.Do(func() { close(ready) })
			}
		}
		pr.Close()
	}()
	v.done = make(chan error, 1)
	go func() {
		err := v.cmd.Wait()
		if v.after != nil {
			v.after()
		}
		v.done <- err
	}()
	select {
	case <-ready:
		return nil
	case err := <-v.done:
		drained(read)
		return fmt.Errorf("%s exited: %v\n%s", v.name(), err, v.log())
	case <-time.After(15 * time.Second):
		v.cmd.Process.Kill()
		<-v.done
		drained(read)
		return fmt.Errorf("%s not ready after 15 s\n%s", v.name(), v.log())
	}
}

// drained waits (up to 2 s: a child that kept the pipe would hold it open) for the reader of an
// ended process's output to finish, so that a next start's log holds only its own lines.
func drained(read <-chan struct{}) {
	select {
	case <-read:
	case <-time.After(2 * time.Second):
	}
}

// name is the forwarder's program, past the stdbuf that wraps testpmd.
func (v *procRouter) name() string {
	a := v.args
	if len(a) > 2 && a[0] == "stdbuf" {
		a = a[2:]
	}
	return filepath.Base(a[0])
}

func (v *procRouter) log() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.String()
}

func (v *procRouter) stop() string {
	v.cmd.Process.Signal(os.Interrupt)
	select {
	case <-v.done:
	case <-time.After(10 * time.Second):
		v.cmd.Process.Kill()
		<-v.done
	}
	time.Sleep(100 * time.Millisecond) // let the reader drain the pipe
	lines := strings.Split(strings.TrimSpace(v.log()), "\n")
	var keep []string
	for _, l := range lines {
		if v.keep(l) {
			keep = append(keep, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(keep, " | ")
}

type caseKey struct {
	sender gen.Engine
	napi   string // softirq, threaded, or "-" (no NAPI on the router's receiving veth)
	fwd    string // kernel, afpacket, afxdp, testpmd-afxdp, testpmd-afpacket; or tx-afxdp, tx-afpacket (transmit-only ceilings, no sender)
}

type sample struct {
	mpps, offered float64
	threaded      string
	busy          [2]float64 // per CPU, percent busy over the measured window
}

// cpuTimes reads the busy and total jiffies of CPUs 0 and 1 from /proc/stat.
func cpuTimes() (busy, total [2]uint64) {
	b, t := cpuTimesAll(2)
	copy(busy[:], b)
	copy(total[:], t)
	return
}

func TestE2E(t *testing.T) {
	if os.Getenv("WIRESPEED_E2E") != "1" {
		t.Skip("end-to-end experiments run only with WIRESPEED_E2E=1 (root, ~1 min per round)")
	}
	nettest.RequirePriv(t)
	runs := envInt("WIRESPEED_E2E_RUNS", 3)
	window := time.Duration(envInt("WIRESPEED_E2E_SECONDS", 2)) * time.Second
	warm := 700 * time.Millisecond

	bin := filepath.Join(t.TempDir(), "vlanrouter")
	if out, err := exec.Command("go", "build", "-C", "../..", "-o", bin, "./examples/vlanrouter").CombinedOutput(); err != nil {
		t.Fatalf("go build vlanrouter: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "-h").CombinedOutput(); !bytes.Contains(out, []byte("-backend")) {
		t.Fatalf("vlanrouter has no -backend flag:\n%s", out)
	}

	tp := newTopo(t)
	var dst []netip.Prefix
	for i := 1; i <= 20; i++ {
		dst = append(dst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24))
	}
	routers := map[string]router{
		"kernel":   kernelRouter{tp.rtr, tp.rout},
		"afpacket": newVLANRouter(bin, tp.rtr.Name, "afpacket", tp.rout, tp.rin),
		"afxdp":    newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin),
		// -spin: the worker polls its idle ports, as testpmd does.
		"afpacket-spin": newVLANRouter(bin, tp.rtr.Name, "afpacket", tp.rout, tp.rin, "-spin"),
		"afxdp-spin":    newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin, "-spin"),
		// Preferred busy polling (afxdp.Config.BusyPoll), as DPDK's net_af_xdp by default.
		"afxdp-busy": newVLANRouter(bin, tp.rtr.Name, "afxdp", tp.rout, tp.rin, "-busy-poll", "64"),
		// A TPACKET_V2 receive ring (afpacket.Config.FrameRing).
		"afpacket-v2": newVLANRouter(bin, tp.rtr.Name, "afpacket-v2", tp.rout, tp.rin),
	}
	// DPDK's testpmd in mac mode on the same two veths, when installed (Debian package dpdk).
	forwarders := []string{"kernel", "afpacket", "afpacket-v2", "afxdp", "afpacket-spin", "afxdp-spin", "afxdp-busy"}
	if _, err := exec.LookPath("dpdk-testpmd"); err == nil {
		routers["testpmd-afxdp"] = newTestPMD(tp.rtr.Name, "net_af_xdp", tp.rin, tp.rout)
		routers["testpmd-afpacket"] = newTestPMD(tp.rtr.Name, "net_af_packet", tp.rin, tp.rout)
		forwarders = append(forwarders, "testpmd-afxdp", "testpmd-afpacket")
	} else {
		t.Log("dpdk-testpmd not found (Debian package dpdk): no testpmd rows")
	}
	// WIRESPEED_E2E_PIPELINE=1: vlanrouter -pipeline too (one receive and one transmit worker, both
	// on CPU 0 like the rest of the router: the handoff's cost against run to completion).
	if os.Getenv("WIRESPEED_E2E_PIPELINE") == "1" {
		for _, b := range []string{"afpacket", "afxdp"} {
			routers[b+"-pipeline"] = newVLANRouter(bin, tp.rtr.Name, b, tp.rout, tp.rin, "-pipeline")
			forwarders = append(forwarders, b+"-pipeline")
		}
	}
	var cases []caseKey
	for _, s := range []gen.Engine{gen.EngineXDP, gen.EngineAFPacket} {
		napis := []string{"softirq", "threaded"}
		if s == gen.EngineAFPacket {
			napis = []string{"-"}
		}
		for _, n := range napis {
			for _, f := range forwarders {
				cases = append(cases, caseKey{s, n, f})
			}
			if s == gen.EngineXDP && n == "softirq" {
				// The ceilings: how fast CPU 0 alone can transmit through each back-end on the
				// router's outgoing veth, with nothing to receive or forward.
				cases = append(cases, caseKey{s, n, "tx-afxdp"}, caseKey{s, n, "tx-afpacket"})
			}
		}
	}
	if f := os.Getenv("WIRESPEED_E2E_CASES"); f != "" { // e.g. "/xdp/threaded/,/afxdp/": a subset
		cases = slices.DeleteFunc(cases, func(c caseKey) bool {
			key := fmt.Sprintf("/%s/%s/%s/", c.sender, c.napi, c.fwd)
			for _, sub := range strings.Split(f, ",") {
				if strings.Contains(key, sub) {
					return false
				}
			}
			return true
		})
	}

	res := map[caseKey][]sample{}
	// measure starts g, waits out the warm-up, counts what reaches the sink over the window, stops g
	// and returns the sink's rate in Mpps and the generator's result.
	var busy [2]float64 // of the last measure
	perfDir := os.Getenv("WIRESPEED_E2E_PERF")
	measure := func(g *gen.Generator, name string) (float64, gen.Result, error) {
		g.Start()
		time.Sleep(warm)
		s0, _ := rxPackets(tp.sink, tp.s0)
		b0, n0 := cpuTimes()
		t0 := time.Now()
		var pf *perfRun
		if perfDir != "" {
			pf = startPerf(perfDir, name, window)
		}
		time.Sleep(window)
		s1, err := rxPackets(tp.sink, tp.s0)
		el := time.Since(t0)
		b1, n1 := cpuTimes()
		if pf != nil {
			t.Logf("%s: perf: CPU 0: %s", name, pf.wait(s1-s0))
		}
		for i := range busy {
			busy[i] = 100 * float64(b1[i]-b0[i]) / float64(max(1, n1[i]-n0[i]))
		}
		gr := g.Stop()
		if err == nil && s1 == s0 {
			err = fmt.Errorf("nothing reached the sink (gen: %v, last error %v)", gr, g.LastError())
		}
		return float64(s1-s0) / el.Seconds() / 1e6, gr, err
	}
	txOnly := func(c caseKey) (sample, error) {
		eng := gen.EngineAFXDP
		if c.fwd == "tx-afpacket" {
			eng = gen.EngineAFPacket
		}
		g, err := gen.Open(&gen.Config{Netns: tp.rtr.Name, Interface: tp.rout, Engine: eng, Flows: 1000,
			Dst: dst, DstMAC: [6]byte{2, 0, 0, 0, 0, 0x98}, CPU: 0, Nice: nice(), Batch: envInt("WIRESPEED_E2E_TX_BATCH", 64)})
		if err != nil {
			return sample{}, err
		}
		mpps, gr, err := measure(g, fmt.Sprintf("%s-%s-%s", c.sender, c.napi, c.fwd))
		if err != nil {
			return sample{}, err
		}
		smp := sample{mpps: mpps, offered: gr.PPS() / 1e6, busy: busy}
		t.Logf("%s: %.3f Mpps at the sink, %.3f taken by the sender; gen %v", c.fwd, smp.mpps, smp.offered, gr)
		return smp, nil
	}
	runOne := func(c caseKey) (sample, error) {
		if strings.HasPrefix(c.fwd, "tx-") {
			if tp.pass != nil {
				tp.pass.Close()
				tp.pass = nil
			}
			return txOnly(c)
		}
		// The router's receiving veth needs NAPI for the XDP sender's frames: an XDP_PASS program
		// unless AF_XDP attaches its own; with the sendmmsg sender it gets none (plain netif_rx).
		wantPass := c.sender == gen.EngineXDP && !strings.HasPrefix(c.fwd, "afxdp") && c.fwd != "testpmd-afxdp"
		if wantPass && tp.pass == nil {
			l, err := attach(tp.rtr, tp.rin, 2)
			if err != nil {
				return sample{}, err
			}
			tp.pass = l
		} else if !wantPass && tp.pass != nil {
			tp.pass.Close()
			tp.pass = nil
		}
		r := routers[c.fwd]
		if err := r.start(); err != nil {
			// testpmd sometimes hangs starting its ports right after another forwarder's
			// AF_XDP sockets closed on the same interfaces: one more try.
			t.Logf("%s: %v; starting it again", c.fwd, err)
			if err := r.start(); err != nil {
				return sample{}, err
			}
		}
		threaded := tp.setThreaded(c.napi == "threaded")
		g, err := gen.Open(&gen.Config{Netns: tp.gen.Name, Interface: tp.g0, Engine: c.sender, Flows: 1000,
			Dst: dst, DstMAC: tp.rinMAC, CPU: 1, Nice: nice(), Repeat: 1 << 20})
		if err != nil {
			t.Log(r.stop())
			return sample{}, err
		}
		mpps, gr, err := measure(g, fmt.Sprintf("%s-%s-%s", c.sender, c.napi, c.fwd))
		log := r.stop()
		if err != nil {
			return sample{}, fmt.Errorf("%w; %s", err, log)
		}
		// Offered: the generator's own average (the XDP engine counts a whole BPF_PROG_RUN call at once).
		smp := sample{mpps: mpps, offered: gr.PPS() / 1e6, threaded: threaded, busy: busy}
		t.Logf("%s/%s/%s: %.3f Mpps at the sink, %.3f offered (threaded=%q); gen %v; %s", c.sender, c.napi, c.fwd,
			smp.mpps, smp.offered, threaded, gr, log)
		return smp, nil
	}
	load0, _ := os.ReadFile("/proc/loadavg")
	start := time.Now()
	for round := range runs {
		for _, c := range cases {
			s, err := runOne(c)
			if err != nil {
				t.Errorf("round %d %s/%s/%s: %v", round, c.sender, c.napi, c.fwd, err)
				continue
			}
			res[c] = append(res[c], s)
		}
	}
	load1, _ := os.ReadFile("/proc/loadavg")

	var md strings.Builder
	fmt.Fprintf(&md, "| sender | router RX NAPI | forwarder | Mpps at sink, median | min - max | x kernel | x testpmd, same driver | offered Mpps | CPU 0 / CPU 1 busy %% |\n")
	fmt.Fprintf(&md, "|---|---|---|---|---|---|---|---|---|\n")
	median := func(c caseKey) float64 {
		var v []float64
		for _, s := range res[c] {
			v = append(v, s.mpps)
		}
		if len(v) == 0 {
			return 0
		}
		return stats.Median(v)
	}
	for _, c := range cases {
		var v, off, b0, b1 []float64
		for _, s := range res[c] {
			v = append(v, s.mpps)
			off = append(off, s.offered)
			b0 = append(b0, s.busy[0])
			b1 = append(b1, s.busy[1])
		}
		if len(v) == 0 {
			fmt.Fprintf(&md, "| %s | %s | %s | failed | | | | | |\n", c.sender, c.napi, c.fwd)
			continue
		}
		vsPMD := ""
		if drv, ok := strings.CutPrefix(strings.TrimSuffix(strings.TrimSuffix(c.fwd, "-spin"), "-busy"), "af"); ok {
			if m := median(caseKey{c.sender, c.napi, "testpmd-af" + drv}); m > 0 {
				vsPMD = fmt.Sprintf("%.2f", stats.Median(v)/m)
			}
		}
		ratio := ""
		if k := res[caseKey{c.sender, c.napi, "kernel"}]; len(k) > 0 && c.fwd != "kernel" {
			var kv []float64
			for _, s := range k {
				kv = append(kv, s.mpps)
			}
			ratio = fmt.Sprintf("%.2f", stats.Median(v)/stats.Median(kv))
		}
		fwd := map[string]string{"kernel": "kernel ip_forward", "afpacket": "vlanrouter, AF_PACKET", "afxdp": "vlanrouter, AF_XDP",
			"afpacket-spin": "vlanrouter -spin, AF_PACKET", "afxdp-spin": "vlanrouter -spin, AF_XDP",
			"afxdp-busy":        "vlanrouter -busy-poll 64, AF_XDP",
			"afpacket-v2":       "vlanrouter, AF_PACKET TPACKET_V2",
			"afpacket-pipeline": "vlanrouter -pipeline, AF_PACKET", "afxdp-pipeline": "vlanrouter -pipeline, AF_XDP",
			"testpmd-afxdp": "dpdk-testpmd mac, net_af_xdp", "testpmd-afpacket": "dpdk-testpmd mac, net_af_packet",
			"tx-afxdp": "transmit only (ceiling), AF_XDP", "tx-afpacket": "transmit only (ceiling), AF_PACKET sendmmsg"}[c.fwd]
		sender := map[gen.Engine]string{gen.EngineXDP: "XDP live frames", gen.EngineAFPacket: "sendmmsg"}[c.sender]
		if strings.HasPrefix(c.fwd, "tx-") {
			sender = "none (the router's CPU 0 sends)"
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %.3f | %.3f - %.3f | %s | %s | %.2f | %.0f / %.0f |\n", sender, c.napi, fwd, stats.Median(v),
			slices.Min(v), slices.Max(v), ratio, vsPMD, stats.Median(off), stats.Median(b0), stats.Median(b1))
	}
	fmt.Fprintf(&md, "\n%d rounds, each case once per round in the order listed, %v measured per run after %v warm-up, %s; %v in all. Load average before: %s, after: %s.\n",
		runs, window, warm, schedNote(), time.Since(start).Round(time.Second), strings.TrimSpace(string(load0)), strings.TrimSpace(string(load1)))
	t.Logf("\n%s", md.String())
	if out := os.Getenv("WIRESPEED_E2E_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
