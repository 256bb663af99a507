package syserr

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestHint(t *testing.T) {
	want := []Cap{NetAdmin, BPF, NetRaw}
	for _, c := range []struct {
		eff      uint64
		known    bool
		contains []string
		not      []string
	}{
		{0, true, []string{"x needs CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW, which this process lacks: run it as root or grant them", "setcap cap_net_admin,cap_bpf,cap_net_raw+ep"}, []string{"then"}},
		{1 << NetRaw, true, []string{"of which this process lacks CAP_NET_ADMIN, CAP_BPF:", "grant them", "setcap cap_net_admin,cap_bpf+ep"}, []string{"lacks CAP_NET_RAW", "then"}},
		{1<<NetRaw | 1<<NetAdmin, true, []string{"of which this process lacks CAP_BPF:", "grant it,", "setcap cap_bpf+ep"}, []string{"then"}},
		{1<<NetRaw | 1<<NetAdmin | 1<<SysAdmin, true, []string{"which this process has: then"}, []string{"lacks", "setcap"}},
		{1<<NetRaw | 1<<NetAdmin | 1<<BPF, true, []string{"which this process has: then"}, []string{"lacks"}},
		{0, false, []string{"x needs CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW: run as root or grant them"}, []string{"lacks", "then"}},
	} {
		h := hint("x", want, missingFrom(c.eff, want), c.known, "then")
		for _, s := range c.contains {
			if !strings.Contains(h, s) {
				t.Errorf("eff %#x known %v: %q lacks %q", c.eff, c.known, h, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(h, s) {
				t.Errorf("eff %#x known %v: %q has %q", c.eff, c.known, h, s)
			}
		}
	}
	if h := hint("y", []Cap{NetRaw}, []Cap{NetRaw}, true, ""); h != "y needs CAP_NET_RAW, which this process lacks: run it as root or grant it, e.g. setcap cap_net_raw+ep on its binary" {
		t.Errorf("one capability: %q", h)
	}
}

// TestMissing checks capget against the CapEff line of /proc/self/status (the main thread's; the
// process sets no per-thread capabilities).
func TestMissing(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	var eff uint64
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			if eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Skip("no CapEff in /proc/self/status")
	}
	all := []Cap{NetAdmin, NetRaw, IPCLock, SysAdmin, BPF}
	got, ok := Missing(all...)
	if !ok {
		t.Fatal("capget failed")
	}
	if want := missingFrom(eff, all); strings.Join(str(got), ",") != strings.Join(str(want), ",") {
		t.Fatalf("Missing = %v, /proc says %v (CapEff %#x)", got, want, eff)
	}
}

func str(cs []Cap) []string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return s
}

func TestMemlockHint(t *testing.T) {
	h := memlockHint("the UMEM", 8<<20, 8<<20, false, false)
	for _, s := range []string{"the UMEM pins 8192 KiB", "RLIMIT_MEMLOCK (8192 KiB", "CAP_IPC_LOCK", "ulimit -l", "LimitMEMLOCK"} {
		if !strings.Contains(h, s) {
			t.Errorf("%q lacks %q", h, s)
		}
	}
	if memlockHint("x", 1, 0, false, true) != "" || memlockHint("x", 1, 0, true, false) != "" {
		t.Error("a hint for a process that the limit does not bind")
	}
}
