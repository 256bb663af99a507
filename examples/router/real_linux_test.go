package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestLinuxPeerAFPacket and TestLinuxPeerAFXDP run the router between two Linux hosts (network
// namespaces joined to the router's by veth pairs) and hold it to what Linux itself observes:
// pings through it and to it (answered once), ping -t 1 (time exceeded from the router's address),
// tracepath (the router is hop 1), a 3000-byte ping without DF towards a 1400-byte egress (the
// router fragments, the far host reassembles and answers) and path MTU discovery (a 1500-byte
// packet with DF gets "frag needed, mtu 1400", and the sender's route cache then holds mtu 1400).
func TestLinuxPeerAFPacket(t *testing.T) { testLinuxPeer(t, app.AFPacket) }

func TestLinuxPeerAFXDP(t *testing.T) { testLinuxPeer(t, app.AFXDP) }

func testLinuxPeer(t *testing.T, backend app.Backend) {
	nettest.RequirePriv(t)
	for _, tool := range []string{"ping", "tracepath", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
				t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install iputils-ping iputils-tracepath ethtool)", tool)
			}
			t.Skipf("needs %s (iputils-ping, iputils-tracepath, ethtool)", tool)
		}
	}
	h1, rtr, h2 := nettest.NewNS(t, "h1"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "h2")
	r0, e1 := nettest.Veth(t, rtr, h1, "r0", "h1e")
	r1, e2 := nettest.Veth(t, rtr, h2, "r1", "h2e")
	for _, ns := range []*nettest.NS{h1, rtr, h2} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	// A host's veth leaves UDP and TCP checksums for the "hardware" to fill in (CHECKSUM_PARTIAL),
	// and a packet socket or XDP on the far end sees them unfilled: the hosts compute their own.
	h1.Exec(t, "ethtool", "-K", e1, "tx", "off")
	h2.Exec(t, "ethtool", "-K", e2, "tx", "off")
	// The h1 side carries 3200-byte packets (within what XDP on veth and a 4 KiB UMEM chunk take).
	rtr.Exec(t, "ip", "link", "set", r0, "mtu", "3200")
	h1.Exec(t, "ip", "link", "set", e1, "mtu", "3200")
	mac := func(ns *nettest.NS, dev string) string {
		return strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+dev+"/address"))
	}
	r0MAC, r1MAC, e1MAC, e2MAC := mac(rtr, r0), mac(rtr, r1), mac(h1, e1), mac(h2, e2)
	h1.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	h1.Exec(t, "ip", "neigh", "replace", "10.0.1.1", "lladdr", r0MAC, "nud", "permanent", "dev", e1)
	h1.Exec(t, "ip", "route", "add", "default", "via", "10.0.1.1")
	h2.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	h2.Exec(t, "ip", "neigh", "replace", "10.0.2.1", "lladdr", r1MAC, "nud", "permanent", "dev", e2)
	h2.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")

	cfg, err := parseFlags([]string{"-backend", string(backend), "-interval", "1h",
		"-port", r0 + ",10.0.1.1/24,mtu=3200", "-port", r1 + ",10.0.2.1/24,mtu=1400",
		"-neigh", "10.0.1.2=" + e1MAC, "-neigh", "10.0.2.2=" + e2MAC}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, finished := make(chan struct{}), make(chan struct{})
	cfg.ready = func() { close(started) }
	var out bytes.Buffer
	var tally app.Tally
	var runErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(finished)
		runErr = rtr.Do(func() (err error) { tally, err = runReal(ctx, cfg, &out); return err })
	}()
	select {
	case <-started:
	case <-finished:
		t.Fatalf("router stopped at once: %v\n%s", runErr, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	defer stop()

	ping := func(args ...string) string {
		t.Helper()
		o, _ := exec.Command("ip", append([]string{"netns", "exec", h1.Name, "ping", "-n", "-W", "2"}, args...)...).CombinedOutput()
		return string(o)
	}
	received := regexp.MustCompile(`(\d+) received`)
	expectReplies := func(what, o string, n int) {
		t.Helper()
		m := received.FindStringSubmatch(o)
		if m == nil || m[1] != fmt.Sprint(n) || strings.Contains(o, "DUP!") {
			t.Errorf("%s: want %d replies, no duplicate:\n%s", what, n, o)
		}
	}
	expectReplies("ping through the router", ping("-c", "3", "-i", "0.2", "10.0.2.2"), 3)
	expectReplies("ping of the router's address", ping("-c", "3", "-i", "0.2", "10.0.1.1"), 3)
	expectReplies("ping of the router's far address", ping("-c", "2", "-i", "0.2", "10.0.2.1"), 2)
	if o := ping("-c", "1", "-t", "1", "10.0.2.2"); !strings.Contains(o, "From 10.0.1.1") || !strings.Contains(o, "Time to live exceeded") {
		t.Errorf("ping -t 1: want time exceeded from 10.0.1.1:\n%s", o)
	}
	expectReplies("3000 bytes without DF (fragmented by the router)", ping("-c", "2", "-i", "0.2", "-M", "dont", "-s", "3000", "10.0.2.2"), 2)
	o, _ := exec.Command("ip", "netns", "exec", h1.Name, "tracepath", "-n", "-m", "5", "10.0.2.2").CombinedOutput()
	if !regexp.MustCompile(`(?m)^ 1:\s+10\.0\.1\.1 `).Match(o) || !strings.Contains(string(o), "reached") {
		t.Errorf("tracepath: want hop 1 = 10.0.1.1 and the destination reached:\n%s", o)
	}
	h1.Exec(t, "ip", "route", "flush", "cache")
	if o := ping("-c", "1", "-M", "do", "-s", "1472", "10.0.2.2"); !strings.Contains(o, "mtu = 1400") {
		t.Errorf("ping -M do -s 1472: want frag needed with mtu = 1400:\n%s", o)
	}
	if o := h1.Exec(t, "ip", "route", "get", "10.0.2.2"); !strings.Contains(o, "mtu 1400") {
		t.Errorf("after frag needed, the sender's route cache lacks mtu 1400:\n%s", o)
	}
	expectReplies("ping with DF at the learnt MTU", ping("-c", "1", "-M", "do", "-s", "1372", "10.0.2.2"), 1)

	stop()
	if runErr != nil {
		t.Fatal(runErr)
	}
	c := tally.Drops
	t.Logf("router output:\n%s", out.String())
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
	if c.Echoed < 5 || c.Fragmented < 2 || c.ICMPErrors < 2 {
		t.Errorf("counters: %d echo replies (want 5), %d packets fragmented (want 2), %d ICMP errors (want 2 or more)", c.Echoed, c.Fragmented, c.ICMPErrors)
	}
}
