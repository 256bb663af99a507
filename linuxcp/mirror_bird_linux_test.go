package linuxcp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
	"golang.org/x/sys/unix"
)

// requireBird skips t (fails it under WIRESPEED_REQUIRE_PRIV=1) when BIRD 2 is not installed.
func requireBird(t *testing.T) {
	t.Helper()
	nettest.RequirePriv(t)
	for _, tool := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install bird2)", tool)
			}
			t.Skipf("needs %s (apt-get install bird2)", tool)
		}
	}
}

// bird is a BIRD daemon started in a namespace for one test.
type bird struct {
	t    *testing.T
	ns   *nettest.NS
	sock string
	cmd  *exec.Cmd
	log  string
}

// startBird runs BIRD in the foreground in ns with conf, and stops it when the test ends.
func startBird(t *testing.T, ns *nettest.NS, name, conf string) *bird {
	t.Helper()
	dir := t.TempDir()
	b := &bird{t: t, ns: ns, sock: filepath.Join(dir, name+".ctl"), log: filepath.Join(dir, name+".log")}
	cf := filepath.Join(dir, name+".conf")
	conf = fmt.Sprintf("log %q all;\n", b.log) + conf
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bird", "-p", "-c", cf).CombinedOutput(); err != nil {
		t.Fatalf("bird -p: %v\n%s\n%s", err, out, conf)
	}
	b.cmd = exec.Command("ip", "netns", "exec", ns.Name, "bird", "-f", "-c", cf, "-s", b.sock, "-P", filepath.Join(dir, name+".pid"))
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.cmd.Process.Signal(unix.SIGTERM)
		done := make(chan struct{})
		go func() { b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			b.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(b.log)
			t.Logf("%s log:\n%s", name, out)
		}
	})
	return b
}

// ctl runs a birdc command.
func (b *bird) ctl(args ...string) string {
	b.t.Helper()
	out, err := exec.Command("birdc", append([]string{"-s", b.sock}, args...)...).CombinedOutput()
	if err != nil {
		b.t.Fatalf("birdc %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// sink counts UDP datagrams to port 9999 received in a namespace, by receiving interface.
type sink struct {
	conn *net.UDPConn
	mu   sync.Mutex
	by   map[int]int
	wg   sync.WaitGroup
}

func newSink(t *testing.T, ns *nettest.NS) *sink {
	t.Helper()
	s := &sink{by: map[int]int{}}
	if err := ns.Do(func() (err error) {
		s.conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 9999})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	raw, _ := s.conn.SyscallConn()
	raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1) })
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf, oob := make([]byte, 2048), make([]byte, 256)
		for {
			_, oobn, _, _, err := s.conn.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO && len(m.Data) >= 4 {
					info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&m.Data[0]))
					s.mu.Lock()
					s.by[int(info.Ifindex)]++
					s.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { s.conn.Close(); s.wg.Wait() })
	return s
}

func (s *sink) count(ifindex int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[ifindex]
}

func (s *sink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.by {
		n += c
	}
	return n
}

// dataPlane is a wirespeed forwarder over AF_PACKET ports on the router namespace's links, routed
// by a Mirror of that namespace's kernel.
type dataPlane struct {
	r      *fwd.Router
	ports  []xmit.Port
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startDataPlane(t *testing.T, ns *nettest.NS, names []string, addrs []netip.Prefix, routes *fib.Table, nhs *fib.NextHops) *dataPlane {
	t.Helper()
	d := vlan.NewDemux(len(names), vlan.Parser{})
	var ifaces []fwd.Iface
	dp := &dataPlane{}
	for i, n := range names {
		d.Add(vlan.Interface{ID: uint16(i), Port: uint16(i)})
		out := ns.Exec(t, "cat", "/sys/class/net/"+n+"/address")
		mac, err := net.ParseMAC(strings.TrimSpace(out))
		if err != nil {
			t.Fatal(err)
		}
		ifaces = append(ifaces, fwd.Iface{Name: n, MAC: frame.MAC(mac), Addrs: []netip.Prefix{addrs[i]}})
	}
	if err := ns.Do(func() error {
		for i, n := range names {
			p, err := afpacket.Open(n, &afpacket.Config{PortID: uint16(i)})
			if err != nil {
				return err
			}
			dp.ports = append(dp.ports, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var err error
	if dp.r, err = fwd.New(d, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nhs}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dp.cancel = cancel
	w := dp.r.NewWorker(64)
	dp.wg.Add(1)
	go func() {
		defer dp.wg.Done()
		in := frame.NewBatch(64)
		for ctx.Err() == nil {
			got := false
			for p, port := range dp.ports {
				if n, _ := port.Recv(in); n > 0 {
					w.Forward(uint16(p), in, dp.ports)
					got = true
				}
			}
			if !got {
				w.Flush()
				if wt, ok := dp.ports[0].(xmit.Waiter); ok {
					wt.Wait(100_000)
				}
			}
		}
		w.Flush()
	}()
	t.Cleanup(func() {
		cancel()
		dp.wg.Wait()
		for _, p := range dp.ports {
			p.Close()
		}
	})
	return dp
}

// TestBirdBGP: a BIRD in a peer namespace announces 1,000 prefixes over BGP to a BIRD in the router
// namespace, which installs them in that kernel; the Mirror puts them in wirespeed's FIB, and
// wirespeed (AF_PACKET ports on the router's links; the router's kernel does not forward,
// ip_forward=0) forwards traffic to them to the sink in the peer namespace. A prefix announced over
// both BGP sessions becomes a multipath route (BIRD's merge paths) and an ECMP group: its flows take
// both links. A withdrawal removes the prefixes and the traffic stops. BGP runs over the data links
// and is the kernel's: the frames reach it beside the AF_PACKET sockets, and wirespeed delivers
// them locally (to nothing: this test has no exception path).
func TestBirdBGP(t *testing.T) {
	requireBird(t)
	s, r, p := nettest.NewNS(t, "bgs"), nettest.NewNS(t, "bgr"), nettest.NewNS(t, "bgp")
	s0, rs := nettest.Veth(t, s, r, "s", "rs")
	rp1, p1 := nettest.Veth(t, r, p, "ra", "pa")
	rp2, p2 := nettest.Veth(t, r, p, "rb", "pb")
	s.Exec(t, "ip", "addr", "add", "10.0.0.2/24", "dev", s0)
	s.Exec(t, "ip", "route", "add", "default", "via", "10.0.0.1")
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.0.0.1/24", "dev", rs},
		{"ip", "addr", "add", "10.1.1.1/24", "dev", rp1},
		{"ip", "addr", "add", "10.1.2.1/24", "dev", rp2},
		{"sysctl", "-qw", "net.ipv4.ip_forward=0"},
	} {
		r.Exec(t, c...)
	}
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.1.1.2/24", "dev", p1},
		{"ip", "addr", "add", "10.1.2.2/24", "dev", p2},
		{"ip", "route", "add", "local", "10.64.0.0/10", "dev", "lo"},
		{"ip", "route", "add", "10.0.0.0/24", "via", "10.1.1.1"},
		{"sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"},
		{"sysctl", "-qw", "net.ipv4.conf.default.rp_filter=0"},
		{"sysctl", "-qw", "net.ipv4.conf." + p1 + ".rp_filter=0"},
		{"sysctl", "-qw", "net.ipv4.conf." + p2 + ".rp_filter=0"},
	} {
		p.Exec(t, c...)
	}
	ifP1, ifP2 := ifindexIn(t, p, p1), ifindexIn(t, p, p2)
	sk := newSink(t, p)

	// The mirror and the data plane in R.
	h, err := netns.GetFromName(r.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	routes, nhs := fib.New(), new(fib.NextHops)
	m, err := NewMirror(&MirrorConfig{Source: &NetlinkSource{NS: h}, IfaceNames: map[string]uint16{rs: 0, rp1: 1, rp2: 2},
		Routes: routes, NextHops: nhs, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mdone := make(chan error, 1)
	go func() { mdone <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-mdone })
	<-m.Synced()
	dp := startDataPlane(t, r, []string{rs, rp1, rp2},
		[]netip.Prefix{netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("10.1.1.1/24"), netip.MustParsePrefix("10.1.2.1/24")}, routes, nhs)

	// BIRD: P announces 10.100.0.0/24 ... (1,000 /24s) on the first session and 10.120.0.0/16 on
	// both.
	const n = 1000
	var statics strings.Builder
	var dsts []netip.Addr
	for i := range n {
		fmt.Fprintf(&statics, "\troute 10.%d.%d.0/24 blackhole;\n", 100+i/256, i%256)
		dsts = append(dsts, netip.AddrFrom4([4]byte{10, byte(100 + i/256), byte(i % 256), 1}))
	}
	peer := startBird(t, p, "peer", fmt.Sprintf(`router id 10.1.1.2;
protocol device {}
protocol static many { ipv4; %s }
protocol static both { ipv4; route 10.120.0.0/16 blackhole; }
protocol bgp r1 { local 10.1.1.2 as 65002; neighbor 10.1.1.1 as 65001; hold time 30;
	ipv4 { import none; export where proto = "many" || proto = "both"; next hop self; }; }
protocol bgp r2 { local 10.1.2.2 as 65002; neighbor 10.1.2.1 as 65001; hold time 30;
	ipv4 { import none; export where proto = "both"; next hop self; }; }
`, statics.String()))
	startBird(t, r, "router", `router id 10.1.1.1;
protocol device {}
protocol kernel { ipv4 { import none; export all; }; merge paths on; }
protocol bgp p1 { local 10.1.1.1 as 65001; neighbor 10.1.1.2 as 65002; hold time 30; ipv4 { import all; export none; }; }
protocol bgp p2 { local 10.1.2.1 as 65001; neighbor 10.1.2.2 as 65002; hold time 30; ipv4 { import all; export none; }; }
`)
	waitFor(t, m, "the 1,000 prefixes and the ECMP group in the FIB", func() bool {
		for _, a := range dsts {
			if idx, ok := routes.Lookup(a); !ok || nhs.View().At(idx) == nil {
				return false
			}
		}
		idx, ok := routes.Lookup(netip.MustParseAddr("10.120.1.1"))
		return ok && len(nhs.View().Group(idx)) == 2 && routes.Len() >= n+1
	})
	// The next hops resolve from the kernel's neighbour table (the BGP sessions made the entries).
	waitFor(t, m, "resolved next hops", func() bool {
		for _, a := range []netip.Addr{dsts[0], netip.MustParseAddr("10.1.2.2")} {
			idx, _ := routes.Lookup(a)
			if e := nhs.View().At(idx); e == nil || e.Flags != 0 {
				return false
			}
		}
		return true
	})
	kernel := r.Exec(t, "ip", "-4", "route", "show", "proto", "bird")
	if got := strings.Count(kernel, "\n"); got < n+1 {
		t.Fatalf("the router's kernel has %d BIRD routes, want %d", got, n+1)
	}

	// Traffic to every prefix reaches the sink on the first link, once (the kernel does not forward
	// it too), through wirespeed.
	before := dp.r.Counters().Forwarded
	nettest.SendUDP(t, s, 0, dsts)
	got := nettest.Settle(func() int { return sk.count(ifP1) })
	if got < n*9/10 || got > n { // a loaded machine may lose a few on the way; none comes twice
		t.Fatalf("the sink received %d of %d datagrams on the first link (%d on the second)", got, n, sk.count(ifP2))
	}
	if fw := dp.r.Counters().Forwarded - before; fw < uint64(got) {
		t.Fatalf("wirespeed forwarded %d, the sink received %d", fw, got)
	}

	// ECMP: 400 flows to 10.120/16 take both links.
	var flows []netip.Addr
	for i := range 400 {
		flows = append(flows, netip.AddrFrom4([4]byte{10, 120, byte(i / 200), byte(1 + i%200)}))
	}
	a0, b0 := sk.count(ifP1), sk.count(ifP2)
	nettest.SendUDP(t, s, 0, flows)
	nettest.Settle(sk.total)
	a, b := sk.count(ifP1)-a0, sk.count(ifP2)-b0
	t.Logf("ECMP: %d flows on the first link, %d on the second", a, b)
	if a+b < 360 || a < 60 || b < 60 {
		t.Fatalf("ECMP: %d and %d of 400 flows on the two links", a, b)
	}

	// Withdrawal: P stops announcing the 1,000; they leave the kernel and the FIB, and traffic to
	// them stops.
	peer.ctl("disable", "many")
	waitFor(t, m, "the withdrawal", func() bool { // of every prefix: the kernel may withdraw them in several messages
		for _, d := range dsts {
			if _, ok := routes.Lookup(d); ok {
				return false
			}
		}
		return true
	})
	total := sk.total()
	noRoute := dp.r.Counters().Drops[fwd.DropNoRoute]
	nettest.SendUDP(t, s, 0, dsts)
	nettest.Settle(func() int { return int(dp.r.Counters().Drops[fwd.DropNoRoute]) })
	if got := sk.total() - total; got != 0 {
		t.Fatalf("the sink received %d datagrams to withdrawn prefixes", got)
	}
	if d := dp.r.Counters().Drops[fwd.DropNoRoute] - noRoute; d < n*9/10 {
		t.Fatalf("wirespeed dropped %d frames without a route after the withdrawal, want about %d", d, n)
	}
	t.Logf("mirror %+v", m.Stats())
}

func ifindexIn(t *testing.T, ns *nettest.NS, name string) int {
	t.Helper()
	var idx int
	fmt.Sscan(strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+name+"/ifindex")), &idx)
	return idx
}

func waitFor(t *testing.T, m *Mirror, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("%s: timed out; mirror %+v", what, m.Stats())
		}
	}
}
