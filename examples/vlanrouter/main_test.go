package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fwd"
)

func TestRunAccounts(t *testing.T) {
	cfg := defaultConfig()
	cfg.Interval = 100 * time.Millisecond
	cfg.Bad = 0.05
	cfg.settle = true // however slow the machine, the checks below have something to see
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.ready = func() { time.AfterFunc(350*time.Millisecond, cancel) } // setup time not counted
	var out bytes.Buffer
	r, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() {
		t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
	}
	if r.Generated == 0 || r.Forwarded == 0 {
		t.Fatalf("nothing moved: %+v", r)
	}
	// The far ends checked every frame: forwarded ones and time exceeded for the TTL-1 ones.
	if r.Errors.Recv+r.Errors.Send != 0 {
		t.Errorf("%v", r.Errors)
	}
	if s := r.Sink; s.Forwarded == 0 || s.TimeExceeded == 0 || s.Bad != 0 {
		t.Errorf("far ends: %+v", s)
	}
	// The router resolved the gateway and the VLAN hosts by ARP (tagged requests on the trunk,
	// checked by the far ends) and the hosts answered: the gateway and at least one host (how many
	// depends on how fast the machine is).
	if s, n := r.Sink, r.Neigh; s.ARP == 0 || s.ARPReplies == 0 || n.Hosts == 0 || n.Resolved < 2 || n.Ready == 0 || n.AnnouncesSent != uint64(cfg.VLANs+1) {
		t.Errorf("neighbours: %+v, far ends %+v", n, s)
	}
	// The generator's bad frames show up under their reasons.
	for _, reason := range []fwd.Reason{fwd.DropVLAN, fwd.DropTTL, fwd.DropChecksum} {
		if r.Drops.Drops[reason] == 0 {
			t.Errorf("no %v drops counted: %+v", reason, r.Drops)
		}
	}
	for _, want := range []string{"vlan101", "uplink", "total", "accounting: ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunPipeline: in memory with -pipeline (one receive worker handing its frames to one
// transmit worker for both ports, or to one per port), every frame is accounted for end to end and
// in the pipeline's own counters, every frame the router sent went through the rings and the
// transmit workers' TxQueues, and traffic flows both ways on every interface.
func TestRunPipeline(t *testing.T) {
	for _, tx := range []int{1, 2} {
		t.Run(fmt.Sprintf("tx-workers=%d", tx), func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Interval = time.Hour
			cfg.Pipeline, cfg.TxWorkers = true, tx
			cfg.settle = true // the generator runs until the neighbours resolved, however slow the machine
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.ready = func() { time.AfterFunc(300*time.Millisecond, cancel) }
			var out bytes.Buffer
			r, err := run(ctx, cfg, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Balanced() || !strings.Contains(out.String(), "accounting: ok") {
				t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
			}
			p := r.Pipeline
			if p == nil || r.Forwarded == 0 || p.Handed != r.Forwarded || p.Taken != r.Forwarded || p.TxQueue.Sent != r.RouterTx {
				t.Fatalf("the router sent %d, queued %d; pipeline %+v", r.Forwarded, r.RouterTx, p)
			}
			if p.TxQueue.Sends == 0 || p.TxQueue.Sends >= p.TxQueue.Sent {
				t.Errorf("%d frames in %d sends: want batches", p.TxQueue.Sent, p.TxQueue.Sends)
			}
			if r.Errors.Recv+r.Errors.Send != 0 || r.Sink.Bad != 0 || r.Sink.Forwarded == 0 {
				t.Errorf("%v; far ends %+v", r.Errors, r.Sink)
			}
			if len(r.Ifaces) != cfg.VLANs+1 {
				t.Fatalf("%d interfaces' counters, want %d", len(r.Ifaces), cfg.VLANs+1)
			}
			for id, c := range r.Ifaces {
				if c.RxPackets == 0 || c.TxPackets == 0 {
					t.Errorf("interface %d: %+v: want traffic both ways", id, c)
				}
			}
			for _, want := range []string{"pipeline: handed over", "; balanced", fmt.Sprintf("%d transmit worker(s)", tx), "throughput: "} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestRunOwnRoutes: in memory with a routes file (upstream traffic to VLAN 7, nothing for
// 198.19.0.0/16, downstream traffic back up) and -nexthop MACs (no ARP), every frame the far ends
// get is still checked and the accounting adds up, network unreachables included (time exceeded
// may be crowded out of the ICMP rate limit by them, so it is not required).
func TestRunOwnRoutes(t *testing.T) {
	cfg := defaultConfig()
	cfg.Interval = time.Hour
	cfg.Routes = filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(cfg.Routes, []byte("198.18.0.0/16 7\n10.0.0.0/12 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Neighbours = app.Neighbours{"trunk": {2, 0, 0, 0, 0, 7}, "uplink": {2, 0, 0, 0, 0, 1}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.ready = func() { time.AfterFunc(200*time.Millisecond, cancel) }
	var out bytes.Buffer
	r, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() {
		t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
	}
	if s := r.Sink; s.Forwarded == 0 || s.Unreachable == 0 || s.Bad != 0 {
		t.Errorf("far ends: %+v\n%s", s, out.String())
	}
	// -nexthop MACs on every interface: no ARP request, only the announcements.
	if n := r.Neigh; n.RequestsSent+n.ProbesSent != 0 || n.Held != 0 || r.Sink.ARP != n.AnnouncesSent {
		t.Errorf("ARP with static next hops: %+v", n)
	}
}

func TestBadConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.VLANs = 0
	if _, err := run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
		t.Fatal("-vlans 0 accepted")
	}
}
