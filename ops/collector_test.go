package ops_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// knownTraffic sends what the tests count on: from host 0, 100 frames to host 1, 10 with TTL 1,
// 7 to an address without a route, 5 through the gateway that does not resolve and 3 to the
// blackhole; from host 1, 20 frames to host 0. The table sends its ARP request for the gateway.
func knownTraffic(t *testing.T, g *rig) {
	t.Helper()
	g.send(0, 100, hostAddr[1], 64)
	g.send(0, 10, hostAddr[1], 1)
	g.send(0, 7, netip.MustParseAddr("203.0.113.1"), 64)
	g.send(0, 5, netip.MustParseAddr("198.51.100.7"), 64)
	g.send(0, 3, netip.MustParseAddr("192.0.2.1"), 64)
	g.send(1, 20, hostAddr[0], 64)
	if n := g.forward(); n != 100+20+17 {
		t.Fatalf("the hosts received %d frames, want 137 (forwarded and ICMP errors)", n)
	}
	out, ready, failed := frame.NewBatch(8), frame.NewBatch(8), frame.NewBatch(8)
	g.table.Poll(out, ready, failed)
	if len(out.Frames) != 1 {
		t.Fatalf("the table sent %d ARP frames, want 1 request", len(out.Frames))
	}
	out.Free()
}

// scrape fetches the text exposition from a promhttp handler and parses it.
func scrape(t testing.TB, h http.Handler) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return mfs, body
}

func handler(src *ops.Source) http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ops.NewCollector(src))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError})
}

// value returns the value of the series of family name whose labels are the pairs given.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range mf.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i < len(labels); i += 2 {
			if v, ok := have[labels[i]]; !ok || v != labels[i+1] {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.Counter.GetValue()
		case dto.MetricType_GAUGE:
			return m.Gauge.GetValue()
		}
		t.Fatalf("%s: type %v", name, mf.GetType())
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// TestMetricsAfterKnownTraffic: after known traffic, the scraped exposition parses with the
// Prometheus text parser and its values are what was sent, and what the ports', the stage's and
// the table's own counters say.
func TestMetricsAfterKnownTraffic(t *testing.T) {
	g := newRig(t)
	knownTraffic(t, g)
	g.mems[1].SetLinkUp(false) // the link's two ends share it: a scrape sees it down
	src := g.source()
	mfs, body := scrape(t, handler(src))

	// What the traffic was.
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"wirespeed_fwd_frames_total", []string{"verdict", "forwarded"}, 120},
		{"wirespeed_fwd_frames_total", []string{"verdict", "dropped"}, 25},
		{"wirespeed_fwd_frames_total", []string{"verdict", "echoed"}, 0},
		{"wirespeed_fwd_drops_total", []string{"reason", "ttl"}, 10},
		{"wirespeed_fwd_drops_total", []string{"reason", "no-route"}, 7},
		{"wirespeed_fwd_drops_total", []string{"reason", "unresolved"}, 5},
		{"wirespeed_fwd_drops_total", []string{"reason", "blackhole"}, 3},
		{"wirespeed_fwd_drops_total", []string{"reason", "checksum"}, 0},
		{"wirespeed_fwd_icmp_errors_total", nil, 17},
		{"wirespeed_port_receive_packets_total", []string{"port", "port0"}, 125},
		{"wirespeed_port_receive_packets_total", []string{"port", "port1"}, 20},
		{"wirespeed_port_receive_bytes_total", []string{"port", "port0"}, 125 * 60},
		{"wirespeed_port_transmit_packets_total", []string{"port", "port1"}, 100},
		{"wirespeed_port_transmit_packets_total", []string{"port", "port0"}, 20 + 17},
		{"wirespeed_port_transmit_drops_total", []string{"port", "port0"}, 0},
		{"wirespeed_port_call_errors_total", []string{"port", "port0", "call", "recv"}, 0},
		{"wirespeed_port_up", []string{"port", "port0"}, 1},
		{"wirespeed_port_up", []string{"port", "port1"}, 0},
		{"wirespeed_interface_receive_packets_total", []string{"interface", "port0"}, 125},
		{"wirespeed_interface_transmit_packets_total", []string{"interface", "port1"}, 100},
		{"wirespeed_interface_mtu_bytes", []string{"interface", "port1"}, 1500},
		{"wirespeed_fib_routes", nil, 4},
		{"wirespeed_neigh_entries", []string{"interface", "port0", "state", "permanent"}, 1},
		{"wirespeed_neigh_entries", []string{"interface", "port1", "state", "permanent"}, 1},
		{"wirespeed_neigh_entries", []string{"interface", "port1", "state", "incomplete"}, 1},
		{"wirespeed_neigh_entries", []string{"interface", "port0", "state", "reachable"}, 0},
		{"wirespeed_neigh_arp_sent_total", []string{"type", "request"}, 1},
		{"wirespeed_neigh_entries_created_total", nil, 3},
	} {
		if got := value(t, mfs, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// The sources' own counters, field by field.
	for _, p := range src.Ports {
		s := p.Stats()
		for name, v := range map[string]uint64{
			"receive_packets": s.RxPackets, "receive_bytes": s.RxBytes, "receive_drops": s.RxDropped,
			"transmit_packets": s.TxPackets, "transmit_bytes": s.TxBytes, "transmit_drops": s.TxDropped,
			"transmit_copies": s.TxCopied, "transmit_lost": s.TxLost, "errors": s.Errors,
			"kernel_receive_drops": s.KernelRxDropped, "kernel_receive_errors": s.KernelRxErrors,
			"kernel_transmit_drops": s.KernelTxDropped, "kernel_transmit_errors": s.KernelTxErrors,
		} {
			if got := value(t, mfs, "wirespeed_port_"+name+"_total", "port", p.Name); got != float64(v) {
				t.Errorf("port %s %s = %v, Stats says %d", p.Name, name, got, v)
			}
		}
	}
	k := g.router.Counters()
	for r := fwd.Reason(0); r < fwd.NumReasons; r++ {
		if got := value(t, mfs, "wirespeed_fwd_drops_total", "reason", r.String()); got != float64(k.Drops[r]) {
			t.Errorf("drops %v = %v, Counters says %d", r, got, k.Drops[r])
		}
	}
	var verdicts float64
	for _, v := range []string{"forwarded", "fragmented", "local", "echoed", "held", "dropped"} {
		verdicts += value(t, mfs, "wirespeed_fwd_frames_total", "verdict", v)
	}
	if verdicts != float64(k.Received()) {
		t.Errorf("the verdicts add up to %v, the stage received %d", verdicts, k.Received())
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   uint64
	}{
		{"wirespeed_fwd_fragments_total", nil, k.Fragments},
		{"wirespeed_fwd_icmp_errors_total", nil, k.ICMPErrors},
		{"wirespeed_fwd_icmp_errors_suppressed_total", []string{"reason", "rate-limit"}, k.ICMPRateLimited},
		{"wirespeed_fwd_icmp_errors_suppressed_total", []string{"reason", "no-buffer"}, k.ICMPNoBuffer},
		{"wirespeed_fwd_icmp_errors_suppressed_total", []string{"reason", "no-address"}, k.ICMPNoAddress},
		{"wirespeed_fwd_discarded_total", nil, k.Discarded},
	} {
		if got := value(t, mfs, c.name, c.labels...); got != float64(c.want) {
			t.Errorf("%s%v = %v, Counters says %d", c.name, c.labels, got, c.want)
		}
	}
	for i, name := range []string{"port0", "port1"} {
		s := g.router.IfaceStats(uint16(i))
		for m, v := range map[string]uint64{"receive_packets": s.RxPackets, "receive_bytes": s.RxBytes,
			"transmit_packets": s.TxPackets, "transmit_bytes": s.TxBytes} {
			if got := value(t, mfs, "wirespeed_interface_"+m+"_total", "interface", name); got != float64(v) {
				t.Errorf("interface %s %s = %v, IfaceStats says %d", name, m, got, v)
			}
		}
	}
	n := g.table.Counters()
	for _, c := range []struct {
		name   string
		labels []string
		want   uint64
	}{
		{"wirespeed_neigh_arp_received_total", []string{"result", "request"}, n.Requests},
		{"wirespeed_neigh_arp_sent_total", []string{"type", "request"}, n.RequestsSent},
		{"wirespeed_neigh_hold_total", []string{"result", "held"}, n.Held},
		{"wirespeed_neigh_held_released_total", []string{"result", "failed"}, n.Failed},
		{"wirespeed_neigh_entries_created_total", nil, n.Created},
		{"wirespeed_neigh_resolution_failures_total", nil, n.Failures},
	} {
		if got := value(t, mfs, c.name, c.labels...); got != float64(c.want) {
			t.Errorf("%s%v = %v, Counters says %d", c.name, c.labels, got, c.want)
		}
	}
	states := map[neigh.State]int{}
	for _, e := range g.table.Entries() {
		states[e.State]++
	}
	for s, want := range states {
		var got float64
		for _, ifc := range []string{"port0", "port1"} {
			got += value(t, mfs, "wirespeed_neigh_entries", "interface", ifc, "state", strings.ToLower(s.String()))
		}
		if got != float64(want) {
			t.Errorf("entries %v = %v, Entries lists %d", s, got, want)
		}
	}

	// Conventions: every family has help, counters end in _total, nothing else does.
	var names []string
	for name, mf := range mfs {
		names = append(names, name)
		if mf.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		if !strings.HasPrefix(name, "wirespeed_") {
			t.Errorf("%s: not wirespeed_", name)
		}
		if isCounter := mf.GetType() == dto.MetricType_COUNTER; isCounter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %v", name, mf.GetType())
		}
	}
	sort.Strings(names)
	if len(names) < 40 {
		t.Errorf("only %d families: %v\n%s", len(names), names, body)
	}
}

// TestPromtoolCheckMetrics: promtool finds no problem with the names, types and help texts.
func TestPromtoolCheckMetrics(t *testing.T) {
	tool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install -y prometheus)")
	}
	g := newRig(t)
	knownTraffic(t, g)
	_, body := scrape(t, handler(g.source()))
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestCollectorEmptySource: a Source with nothing in it, or only ports, scrapes without error.
func TestCollectorEmptySource(t *testing.T) {
	for _, src := range []*ops.Source{nil, {}, {Ports: []ops.Port{{Name: "p"}}},
		{Ports: []ops.Port{ops.PortOf("q", statsPort{xmit.Stats{RxPackets: 7}})}}} {
		mfs, _ := scrape(t, handler(src))
		if src != nil && len(src.Ports) == 1 && src.Ports[0].Name == "q" {
			if got := value(t, mfs, "wirespeed_port_receive_packets_total", "port", "q"); got != 7 {
				t.Errorf("q rx = %v", got)
			}
		}
	}
}

// statsPort is a port that only has counters.
type statsPort struct{ s xmit.Stats }

func (p statsPort) Name() string                     { return "stats" }
func (p statsPort) Recv(b *frame.Batch) (int, error) { return 0, nil }
func (p statsPort) Send(b *frame.Batch) (int, error) { b.Free(); return 0, nil }
func (p statsPort) Stats() xmit.Stats                { return p.s }
func (p statsPort) Close() error                     { return nil }

// TestPortOfQueues: one interface opened per worker adds up the queues' counters but not the
// kernel's, which every queue reports for the whole interface.
func TestPortOfQueues(t *testing.T) {
	a := statsPort{xmit.Stats{RxPackets: 3, TxBytes: 100, TxLost: 1, KernelRxDropped: 9, KernelTxErrors: 4}}
	b := statsPort{xmit.Stats{RxPackets: 5, TxBytes: 50, TxLost: 2, KernelRxDropped: 10, KernelTxErrors: 3}}
	got := ops.PortOf("eth0", a, b).Stats()
	want := xmit.Stats{RxPackets: 8, TxBytes: 150, TxLost: 3, KernelRxDropped: 10, KernelTxErrors: 4}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if ops.PortOf("eth0", a).LinkUp != nil {
		t.Fatal("LinkUp set for a port that does not know its link")
	}
}
