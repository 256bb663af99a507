package app

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestOperatorFlags: the flags parse into OperatorFlags and Check refuses what the examples cannot
// run with, saying which flag.
func TestOperatorFlags(t *testing.T) {
	o := DefaultOperatorFlags()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse([]string{"-metrics", "127.0.0.1:9100", "-log", "json", "-view", "full", "-top", "3", "-per-worker"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Check(); err != nil || o.Metrics != "127.0.0.1:9100" || o.Log != "json" || o.Top != 3 || !o.PerWorker {
		t.Fatalf("%+v: %v", o, err)
	}
	if m := o.MonitorOptions(nil); m.View != monitor.Full || m.Top != 3 || !m.PerWorker || m.StageDrops != nil {
		t.Fatalf("%+v", m)
	}
	if o.NewTrace() == nil || (OperatorFlags{}).NewTrace() != nil {
		t.Fatal("a trace exactly with -metrics")
	}
	for _, c := range []struct {
		o    OperatorFlags
		flag string
	}{{OperatorFlags{Metrics: "0.0.0.0:9100"}, "-metrics-any"}, {OperatorFlags{Metrics: "9100"}, "-metrics"},
		{OperatorFlags{Log: "xml"}, "-log"}, {OperatorFlags{View: "wide"}, "-view"}, {OperatorFlags{Top: -1}, "-top"}} {
		if err := c.o.Check(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: %v, want an error naming %s", c.o, err, c.flag)
		}
	}
	if err := (OperatorFlags{Metrics: "0.0.0.0:9100", MetricsAny: true}).Check(); err != nil {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func metricValue(t *testing.T, b []byte, name string, labels ...string) float64 {
	t.Helper()
	v, ok := optest.Sum(optest.Parse(t, b), name, labels...)
	if !ok {
		t.Fatalf("no %s%v", name, labels)
	}
	return v
}

// TestOperatorServes: an example's operator view as the examples start it: the worker loop
// (RunTraced) forwards known traffic, /metrics reports what the ports and the stage counted
// (parsed with the Prometheus text parser), /ports agrees, and /trace returns the next frames
// the worker judged.
func TestOperatorServes(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	a, farA := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"a", "far-a"}})
	b, farB := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"b", "far-b"}})
	r := twoPortRouter(t)
	wrapped, ports := PortSource([]string{"a", "b"}, [][]xmit.Port{{a, b}})
	src := &ops.Source{Ports: ports, Stage: r, Trace: ops.NewTrace(8, 0)}
	var logs syncBuffer
	f := OperatorFlags{Metrics: "127.0.0.1:0"}
	op, err := StartOperator(f, src, f.Logger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + op.Addr.String()
	w := r.NewWorker(8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan PortErrors)
	go func() { done <- RunTraced(ctx, w, nil, src.Trace.Hook(0, w, nil, 1), wrapped[0], 8, 4) }()

	// sink takes what the router sent to far-b until it has n frames.
	got := 0
	sink := func(n int) {
		in := frame.NewBatch(8)
		for deadline := time.Now().Add(time.Minute); got < n && time.Now().Before(deadline); {
			k, _ := farB.Recv(in)
			got += k
			in.Free()
			if k == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		if got != n {
			t.Fatalf("far end got %d of %d frames", got, n)
		}
	}
	for range 10 {
		queueUDP(t, pool, farA, 8)
	}
	sink(80)
	// The worker publishes its counters when idle: wait for the stage to show every frame.
	for deadline := time.Now().Add(time.Minute); r.Counters().Forwarded < 80 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	m := optest.Get(t, base+"/metrics")
	for _, c := range []struct {
		name, port string
		want       uint64
	}{{"wirespeed_port_receive_packets_total", "a", a.Stats().RxPackets}, {"wirespeed_port_transmit_packets_total", "b", b.Stats().TxPackets},
		{"wirespeed_port_transmit_bytes_total", "b", b.Stats().TxBytes}} {
		if v := metricValue(t, m, c.name, "port", c.port); v != float64(c.want) || c.want == 0 {
			t.Errorf("%s{port=%s} = %v, the port counted %d (80 sent)", c.name, c.port, v, c.want)
		}
	}
	if v := metricValue(t, m, "wirespeed_fwd_frames_total", "verdict", "forwarded"); v != 80 {
		t.Errorf("forwarded %v, want 80", v)
	}
	var pi []ops.PortInfo
	if err := json.Unmarshal(optest.Get(t, base+"/ports"), &pi); err != nil || len(pi) != 2 || pi[0].Stats.RxPackets != 80 {
		t.Fatalf("/ports: %+v %v", pi, err)
	}

	traced := make(chan []byte)
	go func() {
		resp, err := http.Get(base + "/trace?n=3&timeout=30s")
		if err != nil {
			t.Error(err)
			close(traced)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		traced <- b
	}()
	for !src.Trace.Armed() {
		select {
		case b := <-traced:
			t.Fatalf("/trace answered before it armed the trace: %s", b)
		default:
		}
		time.Sleep(100 * time.Microsecond)
	}
	// The worker turns its tap on at its next poll of the trace: keep traffic coming until the
	// request has its frames.
	var body []byte
	for n := 80; body == nil; {
		queueUDP(t, pool, farA, 1)
		n++
		sink(n)
		select {
		case body = <-traced:
		case <-time.After(time.Millisecond):
		}
	}
	var tr ops.TraceResult
	if err := json.Unmarshal(body, &tr); err != nil || tr.Captured != 3 {
		t.Fatalf("/trace: %+v %v", tr, err)
	}
	for _, fr := range tr.Frames {
		if fr.Verdict != "forwarded" || fr.Dst.String() != "198.18.0.1" || fr.DstMAC != "02:00:00:00:00:02" || fr.Ingress != "a" {
			t.Errorf("traced %+v", fr)
		}
	}
	cancel()
	if e := <-done; e.Recv+e.Send != 0 {
		t.Errorf("port errors %+v", e)
	}
	op.Close()
	if !strings.Contains(logs.String(), "serving metrics") || !strings.Contains(logs.String(), "link up") {
		t.Errorf("log:\n%s", logs.String())
	}
}
