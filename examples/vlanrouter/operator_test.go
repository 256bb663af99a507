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
// forwards (parsed with the Prometheus text parser: the ports and the VLAN interfaces show
// traffic, so the worker publishes its counters while busy), traces frames with their verdicts,
// and logs its start, its routes and its stop; its accounting holds.
func TestRunOperator(t *testing.T) {
	cfg := defaultConfig()
	cfg.Metrics, cfg.Log = "127.0.0.1:0", "json"
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
		if err := json.Unmarshal(optest.Get(t, base+"/trace?n=512&timeout=30s"), &tr); err != nil {
			t.Error(err)
		}
		metrics = optest.Until(t, base+"/metrics", `wirespeed_interface_receive_packets_total{interface="vlan120"}`)
	}
	r, err := run(ctx, cfg, io.Discard)
	if err != nil || !r.Balanced() {
		t.Fatalf("%v, balanced %v", err, r.Balanced())
	}
	if tr.Captured != 512 {
		t.Fatalf("trace: %+v", tr)
	}
	// The first frames go to the gateway before it resolves (held), then forwarded; a share are
	// bad on purpose (ttl, checksum, vlan); ARP answers are local.
	verdicts := map[string]int{}
	for _, f := range tr.Frames {
		verdicts[f.Verdict]++
		switch f.Verdict {
		case "forwarded", "held":
			if f.Egress == nil || f.Egress.Interface == "" {
				eg, _ := json.Marshal(f.Egress)
				t.Errorf("%s frame without egress: %+v, egress %s", f.Verdict, f, eg)
			}
		case "local", "ttl", "checksum", "vlan":
		default:
			t.Errorf("verdict %q", f.Verdict)
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
	labels := map[string]bool{}
	for _, name := range []string{"wirespeed_port_receive_packets_total", "wirespeed_interface_receive_packets_total"} {
		for _, m := range mfs[name].GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetValue()] = m.GetCounter().GetValue() > 0
			}
		}
	}
	for _, want := range []string{"trunk0", "uplink0", "vlan101", "vlan120"} {
		if !labels[want] {
			t.Errorf("no traffic counted for %s: %v", want, labels)
		}
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
