package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestLinuxCPAFPacket and TestLinuxCPAFXDP run the router with -linuxcp between two Linux hosts
// (namespaces joined to the router's by veth pairs): the router's addresses live on its TAPs in
// the kernel, and the hosts reach them through the exception path. A host pings the router's
// address (answered once, by the kernel: the stage answers none itself; the host's ARP was answered
// by the kernel through the TAP, so its `ip neigh` has the port's MAC, which the TAP shares) and
// the router's far address, opens a TCP connection to a listener on the router's address in the
// router's namespace and exchanges a line with it, and pings the far host: the first packets the
// kernel forwards through the TAPs and resolves the host, then the netlink mirror has the kernel's
// neighbours in the stage's next hops and the stage forwards the rest. When the router stops, the TAPs are gone and the
// physical interfaces are as they were; the exception path's accounting balances.
func TestLinuxCPAFPacket(t *testing.T) { testLinuxCP(t, app.AFPacket) }

func TestLinuxCPAFXDP(t *testing.T) { testLinuxCP(t, app.AFXDP) }

// TestLinuxCPWorkers: the same with two workers (AF_PACKET sockets in a fanout group per port):
// each TAP's frames go down through the worker that owns it.
func TestLinuxCPWorkers(t *testing.T) { testLinuxCP(t, app.AFPacket, "-workers", "2") }

func testLinuxCP(t *testing.T, backend app.Backend, extra ...string) {
	nettest.RequirePriv(t)
	for _, tool := range []string{"ping", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install iputils-ping ethtool)", tool)
			}
			t.Skipf("needs %s (iputils-ping, ethtool)", tool)
		}
	}
	h1, rtr, h2 := nettest.NewNS(t, "h1"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "h2")
	r0, e1 := nettest.Veth(t, rtr, h1, "r0", "h1e")
	r1, e2 := nettest.Veth(t, rtr, h2, "r1", "h2e")
	for _, ns := range []*nettest.NS{h1, rtr, h2} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	if backend == app.AFXDP { // see testLinuxPeer: AF_XDP on veth does not complete checksums
		h1.Exec(t, "ethtool", "-K", e1, "tx", "off")
		h2.Exec(t, "ethtool", "-K", e2, "tx", "off")
	}
	r0MAC := strings.TrimSpace(rtr.Exec(t, "cat", "/sys/class/net/"+r0+"/address"))
	h1.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	h1.Exec(t, "ip", "route", "add", "default", "via", "10.0.1.1")
	h2.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	h2.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")

	rt := startRouter(t, rtr, append([]string{"-backend", string(backend), "-linuxcp", "-tap-prefix", "cp", "-port", r0 + ",10.0.1.1/24", "-port", r1 + ",10.0.2.1/24"}, extra...)...)
	if o := rtr.Exec(t, "ip", "-4", "addr", "show", "dev", "cp0"); !strings.Contains(o, "10.0.1.1/24") {
		t.Errorf("the TAP lacks the router's address:\n%s", o)
	}
	if o := rtr.Exec(t, "ip", "link", "show", "dev", "cp0"); !strings.Contains(o, r0MAC) {
		t.Errorf("the TAP lacks the port's MAC %s:\n%s", r0MAC, o)
	}

	received := regexp.MustCompile(`(\d+) received`)
	expectReplies := func(what string, n int, args ...string) {
		t.Helper()
		o, _ := exec.Command("ip", append([]string{"netns", "exec", h1.Name, "ping", "-n", "-W", "2", "-i", "0.2", "-c", fmt.Sprint(n)}, args...)...).CombinedOutput()
		if m := received.FindStringSubmatch(string(o)); m == nil || m[1] != fmt.Sprint(n) || strings.Contains(string(o), "DUP!") {
			t.Errorf("%s: want %d replies, no duplicate:\n%s", what, n, o)
		}
	}
	expectReplies("ping of the router's address", 3, "10.0.1.1")
	if o := h1.Exec(t, "ip", "neigh", "show", "10.0.1.1", "dev", e1); !strings.Contains(o, r0MAC) {
		t.Errorf("the host did not learn the router's MAC %s from the kernel's ARP:\n%s", r0MAC, o)
	}
	expectReplies("ping of the router's far address", 2, "10.0.2.1")

	// TCP to a listener on the router's address, in the router's namespace.
	var ln net.Listener
	if err := rtr.Do(func() (err error) { ln, err = net.Listen("tcp4", "10.0.1.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			fmt.Fprintf(c, "router got %s", line)
		}
	}()
	var reply string
	if err := h1.Do(func() error {
		c, err := net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "hello from h1\n"); err != nil {
			return err
		}
		reply, err = bufio.NewReader(c).ReadString('\n')
		return err
	}); err != nil || reply != "router got hello from h1\n" {
		t.Errorf("TCP to the router's address: %q, %v", reply, err)
	}

	// The far host: the first packets go through the kernel (the mirror has no neighbour for it
	// yet), which resolves it by ARP through the TAP; the mirror then gives the stage the
	// neighbour's MAC, and the stage forwards the rest itself.
	expectReplies("ping of the far host", 3, "10.0.2.2")
	if o := rtr.Exec(t, "ip", "neigh", "show", "10.0.2.2", "dev", "cp1"); !strings.Contains(o, "lladdr") {
		t.Errorf("the kernel did not resolve the far host:\n%s", o)
	}
	expectReplies("ping of the far host, again", 5, "10.0.2.2")

	tally, out := rt.Stop()
	t.Logf("router output:\n%s", out)
	c := tally.Drops
	if c.Echoed != 0 || c.Local < 6 {
		t.Errorf("stage: %d echo requests answered by the stage (want 0: the kernel answers), %d frames delivered locally (want 6 or more)", c.Echoed, c.Local)
	}
	if c.Forwarded < 8 {
		t.Errorf("stage: forwarded %d frames, want the 5 later echo requests and their replies (8 or more) once the mirror has the neighbours", c.Forwarded)
	}
	if !tally.Balanced() || !strings.Contains(out, "linux-cp accounting: ok") {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if o, err := exec.Command("ip", "netns", "exec", rtr.Name, "ip", "link", "show", "dev", "cp0").CombinedOutput(); err == nil {
		t.Errorf("the TAP is still there after the router stopped:\n%s", o)
	}
	if o := rtr.Exec(t, "ip", "link", "show", "dev", r0); strings.Contains(o, "NOARP") {
		t.Errorf("the physical interface was not given back to the kernel:\n%s", o)
	}
}
