package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fwd"
)

func TestRunAccounts(t *testing.T) {
	cfg := defaultConfig()
	cfg.Interval = 100 * time.Millisecond
	cfg.Bad = 0.05
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

func TestBadConfig(t *testing.T) {
	cfg := defaultConfig()
	cfg.VLANs = 0
	if _, err := run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
		t.Fatal("-vlans 0 accepted")
	}
}
