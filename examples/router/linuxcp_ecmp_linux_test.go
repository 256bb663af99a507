package main

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/wirespeed/wirespeed/internal/nettest"
	"golang.org/x/sys/unix"
)

// TestLinuxCPECMP: the router in -linuxcp mode with a BIRD on its kernel side and two BGP sessions,
// over two links, to a BIRD in a peer namespace (through the data plane and the TAP exception
// path), which announces one prefix on both. The router's BIRD installs it as a multipath route
// (merge paths), the netlink mirror makes it an ECMP group of the two next hops, and 400 flows from
// a host to it take both links, each flow one; the router's kernel forwards none of them (its IP
// ForwDatagrams counter does not move): the stage does.
func TestLinuxCPECMP(t *testing.T) {
	nettest.RequirePriv(t)
	for _, tool := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install bird2)", tool)
			}
			t.Skipf("needs %s (apt-get install bird2)", tool)
		}
	}
	h, rtr, p := nettest.NewNS(t, "eh"), nettest.NewNS(t, "ert"), nettest.NewNS(t, "ep")
	r0, e0 := nettest.Veth(t, rtr, h, "r0", "he")
	r1, p1 := nettest.Veth(t, rtr, p, "r1", "pa")
	r2, p2 := nettest.Veth(t, rtr, p, "r2", "pb")
	for _, ns := range []*nettest.NS{h, rtr, p} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	h.Exec(t, "ip", "addr", "add", "10.0.0.2/24", "dev", e0)
	h.Exec(t, "ip", "route", "add", "default", "via", "10.0.0.1")
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.1.1.2/24", "dev", p1},
		{"ip", "addr", "add", "10.1.2.2/24", "dev", p2},
		{"ip", "route", "add", "local", "10.120.0.0/16", "dev", "lo"},
		{"ip", "route", "add", "10.0.0.0/24", "via", "10.1.1.1"},
		{"sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
			"net.ipv4.conf." + p1 + ".rp_filter=0", "net.ipv4.conf." + p2 + ".rp_filter=0"},
	} {
		p.Exec(t, c...)
	}
	ifP1, ifP2 := ifindex(t, p, p1), ifindex(t, p, p2)
	sk := newIfSink(t, p)

	rt := startRouter(t, rtr, "-backend", "afpacket", "-linuxcp", "-tap-prefix", "cp", "-port", r0+",10.0.0.1/24", "-port", r1+",10.1.1.1/24", "-port", r2+",10.1.2.1/24")
	runBird(t, p, "peer", `router id 10.1.1.2;
protocol device {}
protocol static both { ipv4; route 10.120.0.0/16 blackhole; }
protocol bgp r1 { local 10.1.1.2 as 65002; neighbor 10.1.1.1 as 65001; hold time 30;
	ipv4 { import none; export where proto = "both"; next hop self; }; }
protocol bgp r2 { local 10.1.2.2 as 65002; neighbor 10.1.2.1 as 65001; hold time 30;
	ipv4 { import none; export where proto = "both"; next hop self; }; }
`)
	runBird(t, rtr, "router", `router id 10.1.1.1;
protocol device {}
protocol kernel { ipv4 { import none; export all; }; merge paths on; }
protocol bgp p1 { local 10.1.1.1 as 65001; neighbor 10.1.1.2 as 65002; hold time 30; ipv4 { import all; export none; }; }
protocol bgp p2 { local 10.1.2.1 as 65001; neighbor 10.1.2.2 as 65002; hold time 30; ipv4 { import all; export none; }; }
`)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if out := rtr.Exec(t, "ip", "-4", "route", "show", "10.120.0.0/16"); strings.Count(out, "nexthop") == 2 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no multipath route in the router's kernel:\n%s", out)
		}
	}
	// Until the mirror has the group and both next hops resolved, some flows take the kernel's
	// path; probes of 50 flows until both links carry them without the kernel.
	var flows []netip.Addr
	for i := range 400 {
		flows = append(flows, netip.AddrFrom4([4]byte{10, 120, byte(i / 200), byte(1 + i%200)}))
	}
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		f0, a0, b0 := kernelForwarded(t, rtr), sk.count(ifP1), sk.count(ifP2)
		nettest.SendUDP(t, h, 40000, flows[:50])
		nettest.Settle(sk.total)
		if kernelForwarded(t, rtr) == f0 && sk.count(ifP1) > a0 && sk.count(ifP2) > b0 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the flows do not take both links through the stage")
		}
	}
	f0, a0, b0 := kernelForwarded(t, rtr), sk.count(ifP1), sk.count(ifP2)
	nettest.SendUDP(t, h, 40000, flows)
	nettest.Settle(sk.total)
	a, b := sk.count(ifP1)-a0, sk.count(ifP2)-b0
	t.Logf("ECMP: %d of 400 flows on the first link, %d on the second", a, b)
	if a+b < 360 || a+b > 400 || a < 60 || b < 60 {
		t.Fatalf("ECMP: %d and %d of 400 flows on the two links", a, b)
	}
	if d := kernelForwarded(t, rtr) - f0; d != 0 {
		t.Fatalf("the router's kernel forwarded %d datagrams (the stage should have)", d)
	}
	// The same flows again: each on the link it took before.
	before := sk.snapshot()
	nettest.SendUDP(t, h, 40000, flows)
	nettest.Settle(sk.total)
	after := sk.snapshot()
	moved := 0
	for dst, ifc := range before {
		if a, ok := after[dst]; ok && a != ifc {
			moved++
		}
	}
	if moved != 0 {
		t.Fatalf("%d flows changed links", moved)
	}
	tally, out := rt.Stop()
	if !tally.Balanced() || !strings.Contains(out, "linux-cp accounting: ok") {
		t.Errorf("accounting mismatch: %+v\n%s", tally, out)
	}
}

// kernelForwarded reads the IP ForwDatagrams counter of the namespace's kernel.
func kernelForwarded(t *testing.T, ns *nettest.NS) uint64 {
	t.Helper()
	lines := strings.Split(ns.Exec(t, "cat", "/proc/net/snmp"), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "Ip: ") && strings.HasPrefix(lines[i+1], "Ip: ") {
			names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			for k, nm := range names {
				if nm == "ForwDatagrams" && k < len(vals) {
					v, _ := strconv.ParseUint(vals[k], 10, 64)
					return v
				}
			}
		}
	}
	t.Fatal("no ForwDatagrams in /proc/net/snmp")
	return 0
}

func ifindex(t *testing.T, ns *nettest.NS, name string) int {
	t.Helper()
	v, err := strconv.Atoi(strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+name+"/ifindex")))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ifSink counts UDP datagrams to port 9999 received in a namespace, by receiving interface, and
// remembers the interface each destination last came in on.
type ifSink struct {
	conn *net.UDPConn
	mu   sync.Mutex
	by   map[int]int
	last map[netip.Addr]int
	wg   sync.WaitGroup
}

func newIfSink(t *testing.T, ns *nettest.NS) *ifSink {
	t.Helper()
	s := &ifSink{by: map[int]int{}, last: map[netip.Addr]int{}}
	if err := ns.Do(func() (err error) { s.conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 9999}); return err }); err != nil {
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
				if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO && len(m.Data) >= int(unsafe.Sizeof(unix.Inet4Pktinfo{})) {
					info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&m.Data[0]))
					s.mu.Lock()
					s.by[int(info.Ifindex)]++
					s.last[netip.AddrFrom4(info.Addr)] = int(info.Ifindex)
					s.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { s.conn.Close(); s.wg.Wait() })
	return s
}

func (s *ifSink) count(ifindex int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[ifindex]
}

// snapshot returns, per destination, the interface it last came in on.
func (s *ifSink) snapshot() map[netip.Addr]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[netip.Addr]int, len(s.last))
	for k, v := range s.last {
		m[k] = v
	}
	return m
}

func (s *ifSink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.by {
		n += c
	}
	return n
}
