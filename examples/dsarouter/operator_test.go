package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/ops"
)

// TestRunOperator: the in-memory router with -metrics and -log json serves its metrics while it
// forwards (the conduit's counters, parsed with the Prometheus text parser), traces frames with
// their verdicts (the frames as fwd judged them: the switch tag already stripped), and logs its
// start and its stop; its accounting holds.
func TestRunOperator(t *testing.T) {
	cfg := defaultConfig()
	cfg.Metrics, cfg.Log = "127.0.0.1:0", "json"
	cfg.Interval = 0
	var logs app.LogBuffer
	cfg.logw = &logs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var metrics []byte
	var tr ops.TraceResult
	cfg.ready = func() {
		defer cancel()
		base := logs.MetricsURL()
		if base == "" {
			t.Error("no serving metrics event")
			return
		}
		if err := json.Unmarshal(optest.Get(t, base+"/trace?n=256&timeout=30s"), &tr); err != nil {
			t.Error(err)
		}
		metrics = optest.Until(t, base+"/metrics", `wirespeed_fwd_frames_total{verdict="forwarded"}`)
	}
	r, err := run(ctx, cfg, io.Discard)
	if err != nil || !r.Balanced() {
		t.Fatalf("%v, balanced %v", err, r.Balanced())
	}
	if tr.Captured != 256 {
		t.Fatalf("trace: %+v", tr)
	}
	verdicts := map[string]int{}
	for _, f := range tr.Frames {
		verdicts[f.Verdict]++
		if f.Verdict == "forwarded" && (f.Egress == nil || f.Egress.Interface == "") {
			t.Errorf("forwarded frame without egress: %+v", f)
		}
	}
	if verdicts["forwarded"]+verdicts["held"] == 0 {
		t.Errorf("verdicts %v", verdicts)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if m := mfs["wirespeed_port_receive_packets_total"].GetMetric(); len(m) != 1 || m[0].GetLabel()[0].GetValue() != "eth0" || m[0].GetCounter().GetValue() == 0 {
		t.Errorf("port metrics: %v", m)
	}
	msgs := map[string]bool{}
	for _, e := range logs.Events() {
		msgs[e["msg"].(string)] = true
	}
	for _, want := range []string{"serving metrics", "router started", "routes loaded", "link up", "router stopped"} {
		if !msgs[want] {
			t.Errorf("no %q event: %v", want, msgs)
		}
	}
}
