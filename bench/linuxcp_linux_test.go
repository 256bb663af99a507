package bench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/linuxcp"
	"golang.org/x/sys/unix"
)

// BenchmarkMirrorBirdTable measures how long a full table takes from BIRD's announcement to
// wirespeed's FIB, against the kernel's own time to install it, in the same run. A BIRD in a peer
// namespace holds the real table (bart's 901,899 prefixes; WIRESPEED_CP_PREFIXES=n takes the first
// n) as static routes and announces them over BGP to a BIRD in the router namespace, which
// installs them in that kernel (table main, proto bird); a linuxcp.Mirror of the router namespace
// writes them to a fib.Table. Each iteration enables the BGP session on the peer, waits until the
// kernel has every prefix (a netlink subscription of its own with a 256 MiB buffer counts them;
// after an ENOBUFS it counts by dumps) and until the FIB has every prefix, then disables the session
// and waits for both to empty again. Time 0 is the arrival of the first route in the kernel (the
// session's setup, a few seconds of BGP timers, is not counted).
//
// Metrics: kernel-s (the kernel's install time), fib-s (the time until the FIB has every prefix),
// fib/kernel (their ratio; the goal is at most 1.0), resyncs (the Mirror's dumps after a lost
// message). Run it alone on an idle machine, as root, with bird2 installed:
//
//	go -C bench test -run '^$' -bench BenchmarkMirrorBirdTable -benchtime 3x -timeout 30m
func BenchmarkMirrorBirdTable(b *testing.B) {
	nettest.RequirePriv(b)
	for _, tool := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("needs %s (apt-get install bird2)", tool)
		}
	}
	rs := realRoutes(b)
	if v := os.Getenv("WIRESPEED_CP_PREFIXES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("WIRESPEED_CP_PREFIXES=%q", v)
		}
		rs = rs[:min(n, len(rs))]
	}
	n := len(rs)
	r, p := nettest.NewNS(b, "bbr"), nettest.NewNS(b, "bbp")
	r1, p1 := nettest.Veth(b, r, p, "r", "p")
	r.Exec(b, "ip", "addr", "add", "10.1.1.1/24", "dev", r1)
	p.Exec(b, "ip", "addr", "add", "10.1.1.2/24", "dev", p1)
	// The peer's neighbour entry exists before the Mirror starts, so that its /32 (a host of the
	// connected subnet) is counted in the FIB's base.
	p1MAC := strings.TrimSpace(p.Exec(b, "cat", "/sys/class/net/"+p1+"/address"))
	r.Exec(b, "ip", "neigh", "replace", "10.1.1.2", "lladdr", p1MAC, "dev", r1, "nud", "permanent")

	var statics strings.Builder
	for _, x := range rs {
		fmt.Fprintf(&statics, "\troute %s blackhole;\n", x.p)
	}
	peer := runBird(b, p, "peer", fmt.Sprintf(`router id 10.1.1.2;
protocol device {}
protocol static full { ipv4; %s }
protocol bgp r1 { disabled; local 10.1.1.2 as 65002; neighbor 10.1.1.1 as 65001;
	ipv4 { import none; export where proto = "full"; next hop self; }; }
`, statics.String()))
	runBird(b, r, "router", `router id 10.1.1.1;
protocol device {}
protocol kernel { ipv4 { import none; export all; }; }
protocol bgp p1 { local 10.1.1.1 as 65001; neighbor 10.1.1.2 as 65002; ipv4 { import all; export none; }; }
`)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if birdRoutes(peer) >= n {
			break
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("the peer's BIRD has %d of %d routes", birdRoutes(peer), n)
		}
	}

	h, err := netns.GetFromName(r.Name)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	routes, nhs := fib.New(), new(fib.NextHops)
	m, err := linuxcp.NewMirror(&linuxcp.MirrorConfig{Source: &linuxcp.NetlinkSource{NS: h}, IfaceNames: map[string]uint16{r1: 0},
		Routes: routes, NextHops: nhs})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	<-m.Synced()
	base := routes.Len() // the connected, local and broadcast routes of r1 and the peer's /32
	kc := newKernelCounter(b, h, n)
	defer kc.close()

	var kernelS, fibS float64
	resyncs := m.Stats().Resyncs
	b.ResetTimer()
	for range b.N {
		kc.reset()
		t0 := time.Now()
		peer.ctl("enable", "r1")
		var tf time.Time
		for routes.Len() < base+n {
			time.Sleep(time.Millisecond)
			if time.Since(t0) > 10*time.Minute {
				b.Fatalf("the FIB has %d of %d prefixes", routes.Len()-base, n)
			}
		}
		tf = time.Now()
		tk := kc.wait(t0)
		kc.mu.Lock()
		t1 := kc.first // the session is up and the first route is in the kernel
		kc.mu.Unlock()
		if t1.IsZero() || t1.After(tk) {
			t1 = t0
		}
		kernelS += tk.Sub(t1).Seconds()
		fibS += tf.Sub(t1).Seconds()
		b.StopTimer()
		peer.ctl("disable", "r1")
		for routes.Len() > base || kc.dumpCount() > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		b.StartTimer()
	}
	b.ReportMetric(kernelS/float64(b.N), "kernel-s")
	b.ReportMetric(fibS/float64(b.N), "fib-s")
	b.ReportMetric(fibS/kernelS, "fib/kernel")
	b.ReportMetric(float64(m.Stats().Resyncs-resyncs), "resyncs")
	b.ReportMetric(float64(n), "prefixes")
}

// kernelCounter counts the BIRD routes (proto bird, table main) the router's kernel announces.
type kernelCounter struct {
	b      *testing.B
	h      netns.NsHandle
	n      int
	done   chan struct{}
	mu     sync.Mutex
	seen   map[netip.Prefix]struct{}
	first  time.Time // the first route's arrival
	full   time.Time // when seen reached n
	broken bool      // a lost message: count by dumps
}

func newKernelCounter(b *testing.B, h netns.NsHandle, n int) *kernelCounter {
	k := &kernelCounter{b: b, h: h, n: n, done: make(chan struct{}), seen: map[netip.Prefix]struct{}{}}
	ch := make(chan netlink.RouteUpdate, 4096)
	err := netlink.RouteSubscribeWithOptions(ch, k.done, netlink.RouteSubscribeOptions{Namespace: &h,
		ReceiveBufferSize: 256 << 20, ReceiveBufferForceSize: true,
		ErrorCallback: func(error) { k.mu.Lock(); k.broken = true; k.mu.Unlock() }})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for u := range ch {
			if u.Protocol != unix.RTPROT_BIRD || u.Table != unix.RT_TABLE_MAIN || u.Dst == nil {
				continue
			}
			a, _ := netip.AddrFromSlice(u.Dst.IP)
			ones, _ := u.Dst.Mask.Size()
			pf := netip.PrefixFrom(a.Unmap(), ones)
			k.mu.Lock()
			if u.Type == unix.RTM_NEWROUTE {
				if k.first.IsZero() {
					k.first = time.Now()
				}
				k.seen[pf] = struct{}{}
				if len(k.seen) == k.n && k.full.IsZero() {
					k.full = time.Now()
				}
			} else {
				delete(k.seen, pf)
			}
			k.mu.Unlock()
		}
	}()
	return k
}

func (k *kernelCounter) close() { close(k.done) }

func (k *kernelCounter) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.seen)
	k.full, k.first = time.Time{}, time.Time{}
}

// wait returns when the kernel had every prefix.
func (k *kernelCounter) wait(t0 time.Time) time.Time {
	for {
		k.mu.Lock()
		full, broken := k.full, k.broken
		k.mu.Unlock()
		if !full.IsZero() {
			return full
		}
		if broken && k.dumpCount() >= k.n {
			k.b.Logf("the kernel counter lost messages: the kernel's time is the dump's, an upper bound")
			return time.Now()
		}
		if time.Since(t0) > 10*time.Minute {
			k.b.Fatalf("the kernel has %d of %d prefixes", k.dumpCount(), k.n)
		}
		time.Sleep(time.Millisecond)
	}
}

// dumpCount counts the kernel's BIRD routes by a dump.
func (k *kernelCounter) dumpCount() int {
	hd, err := netlink.NewHandleAt(k.h, unix.NETLINK_ROUTE)
	if err != nil {
		k.b.Fatal(err)
	}
	defer hd.Close()
	n := 0
	hd.RouteListFilteredIter(netlink.FAMILY_V4, &netlink.Route{Protocol: unix.RTPROT_BIRD}, netlink.RT_FILTER_PROTOCOL,
		func(netlink.Route) bool { n++; return true })
	return n
}

// birdProc is a BIRD daemon in a namespace.
type birdProc struct {
	tb   testing.TB
	sock string
}

func runBird(tb testing.TB, ns *nettest.NS, name, conf string) *birdProc {
	tb.Helper()
	dir := tb.TempDir()
	bp := &birdProc{tb: tb, sock: filepath.Join(dir, name+".ctl")}
	cf := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(cf, []byte(fmt.Sprintf("log %q all;\n", filepath.Join(dir, name+".log"))+conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command("bird", "-p", "-c", cf).CombinedOutput(); err != nil {
		tb.Fatalf("bird -p: %v\n%s", err, out)
	}
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "bird", "-f", "-c", cf, "-s", bp.sock, "-P", filepath.Join(dir, name+".pid"))
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for start := time.Now(); exec.Command("birdc", "-s", bp.sock, "show", "status").Run() != nil; time.Sleep(100 * time.Millisecond) {
		if time.Since(start) > 5*time.Minute {
			tb.Fatalf("BIRD %s did not start", name)
		}
	}
	return bp
}

func (bp *birdProc) ctl(args ...string) string {
	bp.tb.Helper()
	out, err := exec.Command("birdc", append([]string{"-s", bp.sock}, args...)...).CombinedOutput()
	if err != nil {
		bp.tb.Fatalf("birdc %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// birdRoutes is the number of routes in BIRD's master4 table ("N of M routes for K networks").
func birdRoutes(bp *birdProc) int {
	out, err := exec.Command("birdc", "-s", bp.sock, "show", "route", "count").CombinedOutput()
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == "of" {
			n, _ := strconv.Atoi(f[0])
			return n
		}
	}
	return 0
}
