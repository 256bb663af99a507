package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// netnsScript runs ./netns.sh with PREFIX=prefix and fails t if it fails.
func netnsScript(t *testing.T, prefix, cmd string) {
	t.Helper()
	c := exec.Command("sh", "./netns.sh", cmd)
	c.Env = append(os.Environ(), "PREFIX="+prefix)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("PREFIX=%s ./netns.sh %s: %v\n%s", prefix, cmd, err, out)
	}
}

// TestNetnsScript: netns.sh with a prefix of its own sets up twice in a row, the setup it describes
// works (lagrouter in the router namespace answers a ping from the upstream namespace to
// 192.0.2.1, sends time exceeded from it for TTL 1 and host unreachable for a VLAN host nobody
// plays; the upstream namespace resolved 192.0.2.1 by ARP, the router its gateway 192.0.2.2: no
// static neighbour entry), and teardown leaves nothing of it.
func TestNetnsScript(t *testing.T) {
	nettest.RequirePriv(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping")
	}
	p := fmt.Sprintf("u%04x", os.Getpid()&0xffff)
	t.Cleanup(func() {
		netnsScript(t, p, "teardown")
		if out, _ := exec.Command("ip", "netns", "list").Output(); bytes.Contains(out, []byte(p+"-")) {
			t.Errorf("teardown left namespaces:\n%s", out)
		}
	})
	netnsScript(t, p, "setup")
	netnsScript(t, p, "setup") // again: what the first made is replaced

	rtr, wan := &nettest.NS{Name: p + "-rtr"}, &nettest.NS{Name: p + "-wan"}
	cfg := defaultConfig()
	cfg.Backend, cfg.Members, cfg.Uplink = app.AFPacket, []string{p + "-m0", p + "-m1"}, p+"-up"
	cfg.Interval = time.Hour
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
	echo := wan.Exec(t, "ping", "-c", "1", "-W", "2", "192.0.2.1")
	ttl, _ := exec.Command("ip", "netns", "exec", wan.Name, "ping", "-c", "1", "-W", "2", "-t", "1", "10.0.1.2").CombinedOutput()
	unreach, _ := exec.Command("ip", "netns", "exec", wan.Name, "ping", "-c", "1", "-W", "8", "10.0.1.2").CombinedOutput()
	neigh := wan.Exec(t, "ip", "neigh", "show", "192.0.2.1")
	tally, out := rt.Stop()
	if rt.Err() != nil {
		t.FailNow()
	}
	if !strings.Contains(echo, "1 received") {
		t.Errorf("ping 192.0.2.1:\n%s", echo)
	}
	if !strings.Contains(string(ttl), "From 192.0.2.1") || !strings.Contains(string(ttl), "Time to live exceeded") {
		t.Errorf("ping -t 1 10.0.1.2:\n%s", ttl)
	}
	if !strings.Contains(string(unreach), "From 192.0.2.1") || !strings.Contains(string(unreach), "Destination Host Unreachable") {
		t.Errorf("ping 10.0.1.2 (nobody answers ARP for it):\n%s", unreach)
	}
	if !strings.Contains(neigh, "lladdr") || strings.Contains(neigh, "PERMANENT") {
		t.Errorf("ip neigh show 192.0.2.1 in %s: want an entry learnt by ARP:\n%s", wan.Name, neigh)
	}
	if !strings.Contains(out, "192.0.2.2 dev "+p+"-up lladdr ") {
		t.Errorf("the router did not resolve its gateway 192.0.2.2:\n%s", out)
	}
	if !tally.Balanced() || tally.Drops.Echoed == 0 || tally.Drops.ICMPErrors < 2 || tally.Neigh == nil || tally.Neigh.Failed == 0 {
		t.Errorf("counters: %+v\n%s", tally, out)
	}
}
