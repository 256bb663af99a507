package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// perfEvents are what WIRESPEED_E2E_PERF counts on the router's CPU over a measured window: its
// time, the scheduler's switches, and the system calls the forwarders make per batch (receive
// kicks, transmit kicks, waits; sendmmsg and recvmmsg for the AF_PACKET sender side are not on CPU
// 0), and the softirqs run there (the sink's NAPI and the completion of AF_XDP transmits).
var perfEvents = []string{
	"cpu-clock", "context-switches",
	"syscalls:sys_enter_sendto", "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_ppoll", "syscalls:sys_enter_poll",
	"syscalls:sys_enter_sendmmsg", "syscalls:sys_enter_recvmmsg", "syscalls:sys_enter_sendmsg", "syscalls:sys_enter_recvmsg",
	"irq:softirq_entry",
}

// perfRun is one window's perf stat and perf record on CPU 0, and perf record on CPU 1 (the
// sender and the router's receive NAPI, which copies frames into an AF_XDP socket's UMEM).
type perfRun struct {
	stat, data, data1 string
	done              chan error
}

var perfSeq atomic.Int64

// startPerf starts perf stat and perf record (cpu-clock samples with call graphs) on CPU 0 and
// perf record on CPU 1 for the window, writing into dir as NAME-N.stat, NAME-N.data and
// NAME-N.cpu1.data.
func startPerf(dir, name string, window time.Duration) *perfRun {
	os.MkdirAll(dir, 0o755)
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", name, perfSeq.Add(1)))
	p := &perfRun{stat: base + ".stat", data: base + ".data", data1: base + ".cpu1.data", done: make(chan error, 3)}
	secs := strconv.FormatFloat(window.Seconds(), 'f', 3, 64)
	run := func(args ...string) {
		out, err := exec.Command("perf", args...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("perf %s: %v: %s", args[0], err, bytes.TrimSpace(out))
		}
		p.done <- err
	}
	go run(append([]string{"stat", "-C", "0", "-x", ",", "-o", p.stat, "-e", strings.Join(perfEvents, ",")}, "--", "sleep", secs)...)
	go run("record", "-q", "-C", "0", "-F", "1999", "-g", "-o", p.data, "--", "sleep", secs)
	go run("record", "-q", "-C", "1", "-F", "1999", "-g", "-o", p.data1, "--", "sleep", secs)
	return p
}

// wait waits for the perf commands and summarizes them per frame that reached the sink: each
// event's count per frame (cpu-clock in ns) and the share of CPU 0's samples per binary (the
// kernel, the forwarder, libraries), then CPU 1's busiest functions.
func (p *perfRun) wait(frames uint64) string {
	var errs []string
	for range 3 {
		if err := <-p.done; err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	fr := float64(max(frames, 1))
	var sb strings.Builder
	b, _ := os.ReadFile(p.stat)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 || strings.HasPrefix(l, "#") {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || v == 0 {
			continue
		}
		ev := strings.TrimPrefix(strings.TrimPrefix(f[2], "syscalls:sys_enter_"), "irq:")
		if f[2] == "cpu-clock" { // msec
			fmt.Fprintf(&sb, "%s %.0f ns/frame, ", ev, v*1e6/fr)
		} else {
			fmt.Fprintf(&sb, "%s %.4f/frame, ", ev, v/fr)
		}
	}
	out, err := exec.Command("perf", "report", "-i", p.data, "--stdio", "--no-children", "--sort", "dso", "-q", "-g", "none").Output()
	if err != nil {
		return sb.String() + "perf report: " + err.Error()
	}
	type share struct {
		pct float64
		dso string
	}
	var sh []share
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasSuffix(f[0], "%") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err == nil && v >= 1 {
			sh = append(sh, share{v, f[len(f)-1]})
		}
	}
	sort.Slice(sh, func(i, j int) bool { return sh[i].pct > sh[j].pct })
	for _, s := range sh {
		fmt.Fprintf(&sb, "%s %.0f%% ", s.dso, s.pct)
	}
	fmt.Fprintf(&sb, "(%s); CPU 1: ", p.data)
	out, err = exec.Command("perf", "report", "-i", p.data1, "--stdio", "--no-children", "--sort", "sym", "-q", "-g", "none").Output()
	if err != nil {
		return sb.String() + "perf report: " + err.Error()
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && strings.HasSuffix(f[0], "%") && n < 6 {
			fmt.Fprintf(&sb, "%s %s, ", strings.Join(f[2:], " "), f[0])
			n++
		}
	}
	return sb.String() + "(" + p.data1 + ")"
}
