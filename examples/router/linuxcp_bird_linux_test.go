package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestLinuxCPBGP: the router with -linuxcp between a BGP peer and a host; a BIRD in the router's
// namespace, on the router's TAP, speaks BGP with a BIRD in the peer's namespace over the
// exception path and the data plane (the router's address lives on the TAP; the peer's TCP
// segments are delivered locally by the stage and go up the TAP, BIRD's go down). The peer
// announces 1,000 prefixes; the router's BIRD installs them in the router namespace's kernel, the
// netlink mirror puts them in the stage's FIB, and a datagram from the host to each prefix reaches
// the peer forwarded by the stage (the kernel forwards none: it receives none). When the peer
// withdraws them, the kernel, then the FIB lose them, and datagrams no longer get through.
func TestLinuxCPBGP(t *testing.T) {
	nettest.RequirePriv(t)
	for _, tool := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install bird2)", tool)
			}
			t.Skipf("needs %s (apt-get install bird2)", tool)
		}
	}
	peer, rtr, host := nettest.NewNS(t, "peer"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "host")
	r0, e1 := nettest.Veth(t, rtr, peer, "r0", "pe")
	r1, e2 := nettest.Veth(t, rtr, host, "r1", "he")
	for _, ns := range []*nettest.NS{peer, rtr, host} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	peer.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	// The peer takes every datagram to the prefixes it announces.
	peer.Exec(t, "ip", "route", "add", "local", "10.96.0.0/11", "dev", "lo")
	host.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	host.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")

	rt := startRouter(t, rtr, "-backend", "afpacket", "-linuxcp", "-tap-prefix", "cp", "-port", r0+",10.0.1.1/24", "-port", r1+",10.0.2.1/24")

	const n = 1000
	var statics strings.Builder
	for i := range n {
		fmt.Fprintf(&statics, "\troute 10.%d.%d.0/24 blackhole;\n", 100+i/256, i%256)
	}
	peerBird := runBird(t, peer, "peer", fmt.Sprintf(`router id 10.0.1.2;
protocol device {}
protocol static announced { ipv4; %s }
protocol bgp rtr { local 10.0.1.2 as 65002; neighbor 10.0.1.1 as 65001; hold time 30;
	ipv4 { import none; export where proto = "announced"; next hop self; }; }
`, statics.String()))
	runBird(t, rtr, "router", `router id 10.0.1.1;
protocol device {}
protocol kernel { ipv4 { import none; export all; }; }
protocol bgp peer { local 10.0.1.1 as 65001; neighbor 10.0.1.2 as 65002; hold time 30; ipv4 { import all; export none; }; }
`)
	kernelRoutes := func() int {
		return strings.Count(rtr.Exec(t, "ip", "-4", "route", "show", "proto", "bird"), "\n")
	}
	deadline := time.Now().Add(60 * time.Second)
	for kernelRoutes() < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := kernelRoutes(); got != n {
		t.Fatalf("the router's kernel has %d of the %d announced routes (BGP over the TAP)", got, n)
	}

	// A datagram from the host to each prefix, until the peer has one for each (the first may
	// wait for the mirror).
	sink := listenUDP(t, peer)
	send := func() {
		if err := host.Do(func() error {
			c, err := net.ListenUDP("udp4", nil)
			if err != nil {
				return err
			}
			defer c.Close()
			for i := range n {
				if i%100 == 99 {
					time.Sleep(5 * time.Millisecond) // within the peer's socket buffer
				}
				c.WriteToUDP([]byte("wirespeed"), &net.UDPAddr{IP: net.IPv4(10, byte(100+i/256), byte(i%256), 1), Port: 9999})
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); sink.distinct() < n && time.Now().Before(deadline); {
		send()
		time.Sleep(200 * time.Millisecond)
	}
	if got := sink.distinct(); got != n {
		t.Errorf("the peer received datagrams for %d of the %d prefixes", got, n)
	}

	// Withdrawn: gone from the kernel, then the stage has no route.
	peerBird.ctl("disable", "announced")
	for deadline := time.Now().Add(30 * time.Second); kernelRoutes() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if got := kernelRoutes(); got != 0 {
		t.Fatalf("after the withdrawal the kernel still has %d routes", got)
	}
	// The mirror follows the kernel a batch later: send a datagram to each prefix until a round
	// reaches the peer not at all (its frames are the stage's no-route drops counted below).
	for deadline := time.Now().Add(20 * time.Second); ; {
		before := sink.total()
		send()
		time.Sleep(500 * time.Millisecond)
		got := sink.total() - before
		if got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("20 s after the withdrawal the peer still received %d datagrams a round", got)
			break
		}
	}

	tally, out := rt.Stop()
	t.Logf("router output:\n%s", out)
	c := tally.Drops
	if c.Forwarded < n {
		t.Errorf("the stage forwarded %d frames, want a datagram for each of the %d prefixes", c.Forwarded, n)
	}
	t.Logf("the stage forwarded %d frames and handed %d to the kernel to forward", c.Forwarded, c.Held)
	if d := c.Drops[fwd.DropNoRoute]; d < n {
		t.Errorf("the stage dropped %d frames without a route after the withdrawal, want %d", d, n)
	}
	if !tally.Balanced() || !strings.Contains(out, "linux-cp accounting: ok") {
		t.Errorf("accounting mismatch: %+v", tally)
	}
}

// birdd is a BIRD daemon run in a namespace for one test.
type birdd struct {
	t    *testing.T
	sock string
}

// runBird starts BIRD in ns with conf, in the foreground, and stops it when the test ends.
func runBird(t *testing.T, ns *nettest.NS, name, conf string) *birdd {
	t.Helper()
	dir := t.TempDir()
	b := &birdd{t: t, sock: filepath.Join(dir, name+".ctl")}
	logf := filepath.Join(dir, name+".log")
	cf := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(cf, []byte(fmt.Sprintf("log %q all;\n", logf)+conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "bird", "-f", "-c", cf, "-s", b.sock, "-P", filepath.Join(dir, name+".pid"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			o, _ := os.ReadFile(logf)
			t.Logf("%s's log:\n%s", name, o)
		}
	})
	return b
}

// ctl runs a birdc command.
func (b *birdd) ctl(args ...string) string {
	b.t.Helper()
	o, err := exec.Command("birdc", append([]string{"-s", b.sock}, args...)...).CombinedOutput()
	if err != nil {
		b.t.Fatalf("birdc %v: %v\n%s", args, err, o)
	}
	return string(o)
}

// udpSink counts the datagrams a namespace receives on port 9999, by destination address.
type udpSink struct {
	mu  sync.Mutex
	by  map[string]int
	all int
}

func listenUDP(t *testing.T, ns *nettest.NS) *udpSink {
	t.Helper()
	s := &udpSink{by: map[string]int{}}
	var c *net.UDPConn
	if err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 9999})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The destination of each datagram: IP_PKTINFO.
	raw, _ := c.SyscallConn()
	raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_PKTINFO, 1) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, oob := make([]byte, 2048), make([]byte, 256)
		for {
			_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			msgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				if m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == syscall.IP_PKTINFO && len(m.Data) >= 12 {
					dst := net.IP(m.Data[8:12]).String() // in_pktinfo: ifindex, spec_dst, addr
					s.mu.Lock()
					s.by[dst]++
					s.all++
					s.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return s
}

func (s *udpSink) distinct() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.by) }
func (s *udpSink) total() int    { s.mu.Lock(); defer s.mu.Unlock(); return s.all }
