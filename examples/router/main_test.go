package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

func memMACs(n int) []frame.MAC {
	var m []frame.MAC
	for i := range n {
		m = append(m, memRouterMAC(i))
	}
	return m
}

// TestMemRun: the in-memory network for a short while (longer where a loaded machine needs it for
// every kind of frame to come back): every kind of frame the hosts send comes back as the router
// should answer it, checked frame by frame, and the accounting adds up.
func TestMemRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.everyKind = true
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	r, err := runMem(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() {
		t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
	}
	s := r.Sink
	if s.UDP == 0 || s.Fragments == 0 || s.TimeExceeded == 0 || s.Unreachable == 0 || s.EchoReplies == 0 || s.ARP == 0 || s.ARPReplies == 0 {
		t.Fatalf("a kind of frame never came back: %+v", s)
	}
	if n := r.Neigh; n.Held == 0 || n.Ready == 0 || n.ARPIn == 0 {
		t.Fatalf("neighbours not resolved by ARP: %+v", n)
	}
	if !strings.Contains(out.String(), "accounting: ok") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestFlags: bad command lines are errors that name the problem, never a panic; good ones parse.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the error output; "" means the line is good
	}{
		{nil, ""},
		{[]string{"-duration", "1s", "-rate", "1000"}, ""},
		{[]string{"-backend", "afpacket", "-port", "a,10.0.1.1/24", "-port", "b,10.0.2.1/24,mtu=1400", "-neigh", "10.0.2.2=02:00:00:00:00:01", "-route", "0.0.0.0/0,via=10.0.2.2"}, ""},
		{[]string{"-interval", "0"}, "-interval"},
		{[]string{"-duration", "-1s"}, "-duration"},
		{[]string{"-batch", "0"}, "-batch"},
		{[]string{"-batch", "100000"}, "-batch"},
		{[]string{"-workers", "0"}, "-workers"},
		{[]string{"-rate", "-5"}, "-rate"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"-backend", "dpdk"}, "unknown backend"},
		{[]string{"-backend", "afpacket"}, "two -port"},
		{[]string{"-backend", "afpacket", "-port", "a,10.0.1.1/24", "-port", "a,10.0.2.1/24"}, "given twice"},
		{[]string{"-port", "a,10.0.1.1/24"}, "in-memory network is fixed"},
		{[]string{"-backend", "afpacket", "-port", "a"}, "NAME,ADDR/LEN"},
		{[]string{"-backend", "afpacket", "-port", "a,10.0.1.1"}, "prefix length"},
		{[]string{"-backend", "afpacket", "-port", "a,10.0.1.1/24,mtu=20"}, "mtu=N"},
		{[]string{"-backend", "afpacket", "-neigh", "10.0.1.2"}, "IP=MAC"},
		{[]string{"-backend", "afpacket", "-neigh", "10.0.1.2=zz"}, "not a MAC"},
		{[]string{"-backend", "afpacket", "-route", "10.1.2.3/16,via=10.0.1.2"}, "host bits"},
		{[]string{"-backend", "afpacket", "-route", "10.0.0.0/8"}, "via="},
		{[]string{"-metrics", "127.0.0.1:9100", "-log", "json"}, ""},
		{[]string{"-metrics", "0.0.0.0:9100", "-metrics-any"}, ""},
		{[]string{"-metrics", ":9100"}, "-metrics-any"},
		{[]string{"-metrics", "9100"}, "HOST:PORT"},
		{[]string{"-log", "xml"}, "-log"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(c.args, &stderr)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && err == nil:
			t.Errorf("%q accepted", c.args)
		case c.want != "" && !strings.Contains(stderr.String(), c.want):
			t.Errorf("%q: error output does not say %q:\n%s", c.args, c.want, stderr.String())
		}
	}
}

// TestBuildErrors: configurations the router cannot serve are refused with a reason.
func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-neigh", "192.168.9.9=02:00:00:00:00:01"}, "none of the ports' subnets"},
		{[]string{"-neigh", "10.0.2.2=02:00:00:00:00:01", "-neigh", "10.0.2.2=02:00:00:00:00:02"}, "given twice"},
		{[]string{"-route", "0.0.0.0/0,via=192.168.7.7"}, "on none of the ports' subnets"},
	} {
		args := append([]string{"-backend", "afpacket", "-port", "a,10.0.1.1/24", "-port", "b,10.0.2.1/24"}, c.args...)
		cfg, err := parseFlags(args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if _, err := build(cfg, memMACs(2), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
