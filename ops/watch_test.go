package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
)

// events returns the JSON log lines written since the last call, and empties buf.
func events(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		delete(m, "time")
		out = append(out, m)
	}
	buf.Reset()
	return out
}

func wantEvents(t *testing.T, step string, got []map[string]any, want ...map[string]any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if want == nil {
		w = []byte("null")
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", step, g, w)
	}
}

// TestWatcher: each Check logs what changed since the last one, once: links, port errors with
// the last error's text, neighbours that failed and resolved again.
func TestWatcher(t *testing.T) {
	g := newRig(t)
	knownTraffic(t, g)
	var buf bytes.Buffer
	w := ops.NewWatcher(g.source(), slog.New(slog.NewJSONHandler(&buf, nil)))

	w.Check()
	wantEvents(t, "first check", events(t, &buf),
		map[string]any{"level": "INFO", "msg": "link up", "port": "port0"},
		map[string]any{"level": "INFO", "msg": "link up", "port": "port1"})
	w.Check()
	wantEvents(t, "nothing changed", events(t, &buf))

	g.mems[1].SetLinkUp(false)
	w.Check()
	wantEvents(t, "link down", events(t, &buf), map[string]any{"level": "WARN", "msg": "link down", "port": "port1"})
	w.Check()
	wantEvents(t, "still down", events(t, &buf))
	g.mems[1].SetLinkUp(true)
	w.Check()
	wantEvents(t, "link up again", events(t, &buf), map[string]any{"level": "INFO", "msg": "link up", "port": "port1"})

	// The gateway never answers: after the table's retries it is FAILED.
	out, ready, failed := frame.NewBatch(8), frame.NewBatch(8), frame.NewBatch(8)
	for i := 0; i < 20 && g.table.Counters().Failures == 0; i++ {
		g.now.Add(int64(time.Second))
		g.table.Poll(out, ready, failed)
		out.Free()
	}
	w.Check()
	wantEvents(t, "gateway failed", events(t, &buf), map[string]any{"level": "WARN", "msg": "neighbours failed to resolve",
		"failures": 1.0, "neighbours": []any{"port1/10.0.2.254"}})
	w.Check()
	wantEvents(t, "still failed", events(t, &buf))
	if err := g.table.AddStatic(1, gateway, frame.MAC{2, 0x67, 0x77, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	w.Check()
	wantEvents(t, "gateway resolved", events(t, &buf), map[string]any{"level": "INFO", "msg": "failed neighbours resolved",
		"neighbours": []any{"port1/10.0.2.254"}})

	g.mems[0].Close()
	for range 3 {
		g.ports[0].Recv(g.in)
	}
	w.Check()
	wantEvents(t, "port errors", events(t, &buf),
		map[string]any{"level": "WARN", "msg": "port errors", "port": "port0", "recv": 3.0, "send": 0.0, "system": 0.0,
			"last_recv_error": "xmit: port closed"})

	// Run checks once at the start and once when ctx ends.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Run(ctx, time.Hour)
	wantEvents(t, "Run", events(t, &buf))
}

// TestWatcherListsAtMost: a Check names at most MaxListed neighbours and counts the others.
func TestWatcherListsAtMost(t *testing.T) {
	g := newRig(t)
	var buf bytes.Buffer
	w := ops.NewWatcher(&ops.Source{Stage: g.router, Neigh: g.table}, slog.New(slog.NewJSONHandler(&buf, nil)))
	w.Check()
	events(t, &buf)
	n := ops.MaxListed + 3
	for i := range n {
		a := hostAddr[0]
		for range 10 + i {
			a = a.Next()
		}
		if err := g.table.AddNextHop(uint32(200+i), 0, a); err != nil {
			t.Fatal(err)
		}
	}
	out, ready, failed := frame.NewBatch(64), frame.NewBatch(8), frame.NewBatch(8)
	for i := 0; i < 20; i++ {
		g.now.Add(int64(time.Second))
		g.table.Poll(out, ready, failed)
		out.Free()
	}
	fails := 0
	for _, e := range g.table.Entries() {
		if e.State == neigh.StateFailed {
			fails++
		}
	}
	w.Check()
	ev := events(t, &buf)
	if len(ev) != 1 || ev[0]["msg"] != "neighbours failed to resolve" || len(ev[0]["neighbours"].([]any)) != ops.MaxListed ||
		ev[0]["more"] != float64(fails-ops.MaxListed) || ev[0]["failures"] != float64(fails) {
		t.Fatalf("%d failed: %v", fails, ev)
	}
}
