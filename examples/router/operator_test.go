package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/ops"
)

// TestMetricsAddr: -metrics takes HOST:PORT on a loopback address, any other address only with
// -metrics-any.
func TestMetricsAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
		want   string // in the error; "" means accepted
	}{
		{"127.0.0.1:9100", false, ""},
		{"127.0.0.1:0", false, ""},
		{"[::1]:9100", false, ""},
		{"localhost:9100", false, ""},
		{":9100", false, "every interface"},
		{"0.0.0.0:9100", false, "-metrics-any"},
		{"192.0.2.1:9100", false, "-metrics-any"},
		{"[::]:9100", false, "-metrics-any"},
		{"example.com:9100", false, "-metrics-any"},
		{":9100", true, ""},
		{"192.0.2.1:9100", true, ""},
		{"127.0.0.1", false, "HOST:PORT"},
		{"127.0.0.1:http", false, "not a number"},
		{"127.0.0.1:70000", true, "not a number"},
	} {
		err := checkMetricsAddr(c.addr, c.public)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q public=%v: %v", c.addr, c.public, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q public=%v: %v, want an error saying %q", c.addr, c.public, err, c.want)
		}
	}
}

// TestMemMetrics: the in-memory router with -metrics and -log json. Scrapes while it forwards
// parse and never go backwards; the scrape once the workers stopped agrees with the run's final
// counters; the look inside answers; the event log is JSON with the start, the links and the stop.
func TestMemMetrics(t *testing.T) {
	cfg, err := parseFlags([]string{"-metrics", "127.0.0.1:0", "-log", "json", "-interval", "1h"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	cfg.logw = &logBuf
	var addr string
	cfg.metricsReady = func(a string) { addr = a }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	scrapes := 0
	cfg.ready = func() {
		wg.Add(1)
		go func() { // scrapes while the router forwards, then ends the run
			defer wg.Done()
			defer cancel()
			var last float64
			for i := 0; i < 5; i++ {
				time.Sleep(40 * time.Millisecond)
				mfs := optest.Parse(t, optest.Get(t, "http://"+addr+"/metrics"))
				v, _ := optest.Sum(mfs, "wirespeed_port_receive_packets_total")
				if v < last {
					t.Errorf("received frames went from %v to %v", last, v)
				}
				last = v
				scrapes++
			}
			if last == 0 {
				t.Error("no frame received by the time of the last scrape")
			}
		}()
	}
	var final map[string]*dto.MetricFamily
	var route ops.RouteInfo
	var ports []ops.PortInfo
	cfg.stopped = func() {
		final = optest.Parse(t, optest.Get(t, "http://"+addr+"/metrics"))
		json.Unmarshal(optest.Get(t, "http://"+addr+"/route?addr=10.0.2.2"), &route)
		json.Unmarshal(optest.Get(t, "http://"+addr+"/ports"), &ports)
	}
	var out bytes.Buffer
	r, err := runMem(ctx, cfg, &out)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() || scrapes != 5 || final == nil {
		t.Fatalf("balanced %v, %d scrapes, final %v\n%s", r.Balanced(), scrapes, final != nil, out.String())
	}

	c := r.Stage
	for _, v := range []struct {
		name   string
		labels []string
		want   uint64
	}{
		{"wirespeed_port_receive_packets_total", nil, r.RouterRx},
		{"wirespeed_port_transmit_packets_total", nil, r.RouterTx},
		{"wirespeed_port_transmit_drops_total", nil, r.TxDropped},
		{"wirespeed_fwd_frames_total", []string{"verdict", "forwarded"}, c.Forwarded},
		{"wirespeed_fwd_frames_total", []string{"verdict", "fragmented"}, c.Fragmented},
		{"wirespeed_fwd_frames_total", []string{"verdict", "echoed"}, c.Echoed},
		{"wirespeed_fwd_frames_total", []string{"verdict", "held"}, c.Held},
		{"wirespeed_fwd_frames_total", []string{"verdict", "local"}, c.Local},
		{"wirespeed_fwd_frames_total", []string{"verdict", "dropped"}, c.Dropped()},
		{"wirespeed_fwd_drops_total", []string{"reason", fwd.DropTTL.String()}, c.Drops[fwd.DropTTL]},
		{"wirespeed_fwd_drops_total", []string{"reason", fwd.DropNoRoute.String()}, c.Drops[fwd.DropNoRoute]},
		{"wirespeed_fwd_icmp_errors_total", nil, c.ICMPErrors},
		{"wirespeed_fwd_icmp_errors_suppressed_total", []string{"reason", "rate-limit"}, c.ICMPRateLimited},
		{"wirespeed_fwd_fragments_total", nil, c.Fragments},
		{"wirespeed_neigh_hold_total", []string{"result", "held"}, r.Neigh.Held},
		{"wirespeed_neigh_held_released_total", []string{"result", "ready"}, r.Neigh.Ready},
		{"wirespeed_neigh_arp_received_total", nil, r.Neigh.ARPIn},
		{"wirespeed_neigh_held_frames", nil, r.HeldLeft},
		{"wirespeed_fib_routes", nil, 2 + r.Neigh.Hosts - r.Neigh.HostsRemoved},
	} {
		got, ok := optest.Sum(final, v.name, v.labels...)
		if !ok || got != float64(v.want) {
			t.Errorf("%s%v = %v (present %v), the run counted %d", v.name, v.labels, got, ok, v.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if final[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if v, _ := optest.Sum(final, "wirespeed_port_up", "port", "port1"); v != 1 {
		t.Errorf("port1 up = %v", v)
	}

	if !route.Found || route.Interface != "port1" || route.MAC != memHostMAC(1).String() || route.Neighbour == nil ||
		route.Neighbour.State != "REACHABLE" {
		t.Errorf("/route?addr=10.0.2.2: %+v", route)
	}
	if len(ports) != 2 || ports[0].Name != "port0" || ports[0].Stats == nil || ports[0].Stats.RxPackets == 0 {
		t.Errorf("/ports: %+v", ports)
	}

	var msgs []string
	sc := bufio.NewScanner(&logBuf)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		msg, _ := e["msg"].(string)
		if p, ok := e["port"].(string); ok {
			msg += " " + p
		}
		if msg == "router started" && e["backend"] != "mem" {
			t.Errorf("start event: %v", e)
		}
		msgs = append(msgs, msg)
	}
	// The watcher's first look at the links and the start event come from two goroutines: their
	// order is not fixed, the rest is.
	want := []string{"serving metrics", "link up port0", "link up port1", "router started", "router stopped"}
	got := append([]string(nil), msgs...)
	if len(got) == len(want) {
		sort.Strings(got[1:4])
		sort.Strings(want[1:4])
	}
	if len(got) != len(want) || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q in some order of the middle three", msgs, want)
	}
}

// TestMetricsListenError: a -metrics address that cannot be listened on stops the run with an
// error that names the flag.
func TestMetricsListenError(t *testing.T) {
	cfg, err := parseFlags([]string{"-metrics", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.logw = io.Discard
	var first string
	cfg.metricsReady = func(a string) { first = a }
	ctx, cancel := context.WithCancel(context.Background())
	cfg.ready = func() {
		cfg2 := cfg
		cfg2.Metrics, cfg2.ready, cfg2.metricsReady = first, nil, nil
		_, err := runMem(context.Background(), cfg2, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-metrics") {
			t.Errorf("a second router on %s: %v, want a -metrics listen error", first, err)
		}
		cancel()
	}
	if _, err := runMem(ctx, cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
}
