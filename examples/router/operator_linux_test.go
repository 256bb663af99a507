package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/ops"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader at a time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// events returns the JSON events logged so far.
func (s *syncBuffer) events(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		e := map[string]any{}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// getIn fetches a URL of the router's endpoint from inside its namespace, where it listens.
func getIn(t *testing.T, ns *nettest.NS, addr, path string) []byte {
	t.Helper()
	body, err := tryGetIn(ns, addr, path)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func tryGetIn(ns *nettest.NS, addr, path string) ([]byte, error) {
	var body []byte
	err := ns.Do(func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		body, err = io.ReadAll(resp.Body)
		return err
	})
	return body, err
}

// TestRealOperator: the router on AF_PACKET between two Linux hosts, with -metrics and -log json.
// The log names the back-end and each port's mode, reports the far link going down and up and a
// neighbour that does not answer ARP; the metrics show the link state and the kernel counters and,
// scraped once the workers stopped, agree with the run's final accounting; /route follows an
// address to the far host's MAC.
func TestRealOperator(t *testing.T) {
	nettest.RequirePriv(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	h1, rtr, h2 := nettest.NewNS(t, "h1"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "h2")
	r0, e1 := nettest.Veth(t, rtr, h1, "r0", "h1e")
	r1, e2 := nettest.Veth(t, rtr, h2, "r1", "h2e")
	for _, ns := range []*nettest.NS{h1, rtr, h2} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	e2MAC := strings.TrimSpace(h2.Exec(t, "cat", "/sys/class/net/"+e2+"/address"))
	h1.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	h1.Exec(t, "ip", "route", "add", "default", "via", "10.0.1.1")
	h2.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	h2.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")

	cfg, err := parseFlags([]string{"-backend", "afpacket", "-interval", "1h", "-metrics", "127.0.0.1:0", "-log", "json",
		"-port", r0 + ",10.0.1.1/24", "-port", r1 + ",10.0.2.1/24"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cfg.logw = &logs
	addrc := make(chan string, 1)
	cfg.metricsReady = func(a string) { addrc <- a }
	var final []byte
	var finalErr error
	var addr string
	cfg.stopped = func() { final, finalErr = tryGetIn(rtr, addr, "/metrics") }
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
	addr = <-addrc

	// waitEvent waits (10 s at most) for an event with msg and the attributes given.
	waitEvent := func(msg string, attrs ...string) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		next:
			for _, e := range logs.events(t) {
				if e["msg"] != msg {
					continue
				}
				for i := 0; i < len(attrs); i += 2 {
					if fmt.Sprint(e[attrs[i]]) != attrs[i+1] {
						continue next
					}
				}
				return e
			}
		}
		t.Fatalf("no event %q %v in:\n%s", msg, attrs, logs.b.String())
		return nil
	}
	waitEvent("router started", "backend", "afpacket", "workers", "1")
	for _, p := range []string{r0, r1} {
		waitEvent("port opened", "port", p, "tx", "sendmmsg", "fanout", "none")
		waitEvent("link up", "port", p)
	}

	if o, err := exec.Command("ip", "netns", "exec", h1.Name, "ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", "10.0.2.2").CombinedOutput(); err != nil {
		t.Fatalf("ping through the router: %v\n%s", err, o)
	}
	var route ops.RouteInfo
	if err := json.Unmarshal(getIn(t, rtr, addr, "/route?addr=10.0.2.2"), &route); err != nil {
		t.Fatal(err)
	}
	if route.Interface != r1 || route.MAC != e2MAC || route.Neighbour == nil || !strings.Contains("REACHABLE STALE DELAY PROBE", route.Neighbour.State) {
		t.Errorf("/route?addr=10.0.2.2: %+v, want %s and %s", route, r1, e2MAC)
	}

	h2.Exec(t, "ip", "link", "set", e2, "down")
	waitEvent("link down", "port", r1)
	mfs := optest.Parse(t, getIn(t, rtr, addr, "/metrics"))
	if v, ok := optest.Sum(mfs, "wirespeed_port_up", "port", r1); !ok || v != 0 {
		t.Errorf("%s up = %v (present %v) with its peer down", r1, v, ok)
	}
	if v, ok := optest.Sum(mfs, "wirespeed_port_up", "port", r0); !ok || v != 1 {
		t.Errorf("%s up = %v (present %v)", r0, v, ok)
	}
	for _, name := range []string{"wirespeed_port_kernel_receive_drops_total", "wirespeed_port_kernel_transmit_errors_total", "wirespeed_port_transmit_lost_total"} {
		if _, ok := optest.Sum(mfs, name, "port", r0); !ok {
			t.Errorf("no %s for %s", name, r0)
		}
	}
	h2.Exec(t, "ip", "link", "set", e2, "up")
	waitEvent("link up", "port", r1)

	exec.Command("ip", "netns", "exec", h1.Name, "ping", "-n", "-c", "1", "-W", "6", "10.0.2.77").Run()
	e := waitEvent("neighbours failed to resolve")
	if fmt.Sprint(e["neighbours"]) != "["+r1+"/10.0.2.77]" {
		t.Errorf("failed neighbours %v, want %s/10.0.2.77", e["neighbours"], r1)
	}

	tally, out := rt.Stop()
	if rt.Err() != nil {
		t.FailNow()
	}
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v\n%s", tally, out)
	}
	waitEvent("router stopped")
	if finalErr != nil {
		t.Fatal(finalErr)
	}
	fm := optest.Parse(t, final)
	c := tally.Drops
	for _, v := range []struct {
		name   string
		labels []string
		want   uint64
	}{
		{"wirespeed_port_receive_packets_total", nil, tally.Rx},
		{"wirespeed_port_transmit_packets_total", nil, tally.Tx},
		{"wirespeed_port_transmit_drops_total", nil, tally.TxDropped},
		{"wirespeed_fwd_frames_total", []string{"verdict", "forwarded"}, c.Forwarded},
		{"wirespeed_fwd_frames_total", []string{"verdict", "held"}, c.Held},
		{"wirespeed_fwd_frames_total", []string{"verdict", "dropped"}, c.Dropped()},
		{"wirespeed_fwd_icmp_errors_total", nil, c.ICMPErrors},
		{"wirespeed_neigh_resolution_failures_total", nil, tally.Neigh.Failures},
		{"wirespeed_neigh_arp_received_total", nil, tally.Neigh.ARPIn},
	} {
		got, ok := optest.Sum(fm, v.name, v.labels...)
		if !ok || got != float64(v.want) {
			t.Errorf("%s%v = %v (present %v), the run counted %d", v.name, v.labels, got, ok, v.want)
		}
	}
}
