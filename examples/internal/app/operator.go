package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// OperatorFlags are the operator's flags every example takes: the metrics endpoint, the event
// log's format and the live rate table's shape.
type OperatorFlags struct {
	// Metrics is the address of the HTTP endpoint of metrics, the JSON look inside and the
	// packet trace ("": none); MetricsAny allows an address other than a loopback one.
	Metrics    string
	MetricsAny bool
	// Log is the event log's format on stderr: "text" (logfmt) or "json".
	Log string
	// View is the rate table's shape (monitor.Auto, Compact or Full), Top the busiest
	// interfaces a compact table shows, PerWorker adds each worker's figures.
	View      string
	Top       int
	PerWorker bool
}

// DefaultOperatorFlags are the flags' defaults: no endpoint, text events, the table's shape
// chosen by the number of interfaces.
func DefaultOperatorFlags() OperatorFlags {
	return OperatorFlags{Log: "text", View: string(monitor.Auto), Top: monitor.DefaultTop}
}

// Register adds every operator flag to fs: RegisterMetrics's, -log, -view, -top, -per-worker.
func (o *OperatorFlags) Register(fs *flag.FlagSet) {
	o.RegisterMetrics(fs)
	fs.StringVar(&o.Log, "log", o.Log, "event log format on stderr: text or json")
	fs.StringVar(&o.View, "view", o.View, "rate table: compact (one line per physical port and the -top busiest interfaces), full (every interface), auto (compact when there are many interfaces)")
	fs.IntVar(&o.Top, "top", o.Top, "compact rate table: how many of the busiest interfaces to show")
	fs.BoolVar(&o.PerWorker, "per-worker", o.PerWorker, "rate table: add each worker's figures under each port")
}

// RegisterMetrics adds -metrics and -metrics-any to fs.
func (o *OperatorFlags) RegisterMetrics(fs *flag.FlagSet) {
	fs.StringVar(&o.Metrics, "metrics", o.Metrics, "serve Prometheus metrics at http://`ADDR`/metrics and JSON at /ports, /interfaces, /neighbours, /route?addr=A, /trace?n=N (a loopback address, 127.0.0.1:9100; off by default)")
	fs.BoolVar(&o.MetricsAny, "metrics-any", o.MetricsAny, "allow -metrics on an address other than a loopback one (the endpoint has no authentication)")
}

// Check validates the flags.
func (o OperatorFlags) Check() error {
	if o.Metrics != "" {
		if err := CheckMetricsAddr(o.Metrics, o.MetricsAny); err != nil {
			return err
		}
	}
	if o.Log != "" && o.Log != "text" && o.Log != "json" {
		return fmt.Errorf("-log %q: want text or json", o.Log)
	}
	if _, err := monitor.ParseView(o.View); err != nil {
		return fmt.Errorf("-view: %w", err)
	}
	if o.Top < 0 {
		return fmt.Errorf("-top %d: want 0 or more", o.Top)
	}
	return nil
}

// Logger returns the event log: text (logfmt) or JSON lines on w (nil: stderr).
func (o OperatorFlags) Logger(w io.Writer) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	if o.Log == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// MonitorOptions is the rate table's shape the flags ask for; the total line counts the drops of
// stage (nil: none) with the ports'.
func (o OperatorFlags) MonitorOptions(stage *fwd.Router) monitor.Options {
	v, _ := monitor.ParseView(o.View)
	m := monitor.Options{View: v, Top: o.Top, PerWorker: o.PerWorker}
	if stage != nil {
		m.StageDrops = func() uint64 { return stage.Counters().Dropped() }
	}
	return m
}

// NewTrace returns the packet trace the endpoint serves, or nil without -metrics (a nil trace's
// hooks do nothing).
func (o OperatorFlags) NewTrace() *ops.Trace {
	if o.Metrics == "" {
		return nil
	}
	return ops.NewTrace(0, 0)
}

// IfaceRows are the rate table's Detail rows of the stage's interfaces, names[id] naming
// interface id: packets and bytes (vlan.Counters); the stage does not count drops per interface.
func IfaceRows(r *fwd.Router, names []string) []monitor.Row {
	var rows []monitor.Row
	for id, name := range names {
		rows = append(rows, monitor.Row{Name: name, Detail: true, NoDrops: true, Counts: func() monitor.Counts {
			s := r.IfaceStats(uint16(id))
			return monitor.Counts{RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes}
		}})
	}
	return rows
}

// CheckMetricsAddr checks a -metrics address: HOST:PORT, and a loopback host unless public is set
// (the endpoint has no authentication; it is read-only but shows the whole configuration).
func CheckMetricsAddr(addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-metrics %q: want HOST:PORT (127.0.0.1:9100)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("-metrics %q: port %q is not a number in 0-65535", addr, port)
	}
	if public || host == "localhost" {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return nil
	}
	where := host
	if host == "" {
		where = "every interface"
	}
	return fmt.Errorf("-metrics %s would serve on %s: the endpoint has no authentication; use a loopback address, or add -metrics-any", addr, where)
}

// Operator is a running example's operator view: the event watcher (ops.Watcher, once a second)
// and, with -metrics, the HTTP server of /metrics (the Source's collector, the Go runtime's and
// the process's), the look inside (ops.NewHandler) and the trace.
type Operator struct {
	Log  *slog.Logger
	Addr net.Addr // the server's address; nil without -metrics
	srv  *http.Server
	wg   sync.WaitGroup
	stop context.CancelFunc
}

// StartOperator starts the watcher of src and, if f.Metrics is set, the HTTP server; the error is
// the listener's. It logs where it serves.
func StartOperator(f OperatorFlags, src *ops.Source, log *slog.Logger) (*Operator, error) {
	o := &Operator{Log: log}
	if f.Metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", MetricsHandler(src, log))
		mux.Handle("/", ops.NewHandler(src))
		ln, err := net.Listen("tcp", f.Metrics)
		if err != nil {
			return nil, fmt.Errorf("-metrics: %w", err)
		}
		o.Addr = ln.Addr()
		o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		look := []string{"/ports", "/interfaces", "/neighbours", "/route?addr=A"}
		if src.Trace != nil {
			look = append(look, "/trace?n=N")
		}
		log.Info("serving metrics", "url", "http://"+o.Addr.String()+"/metrics", "look_inside", look)
	}
	ctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	w := ops.NewWatcher(src, log)
	o.wg.Add(1)
	go func() { defer o.wg.Done(); w.Run(ctx, time.Second) }()
	return o, nil
}

// MetricsHandler serves src's metrics with the Go runtime's and the process's, in the
// Prometheus text format (or OpenMetrics, as the scraper asks).
func MetricsHandler(src *ops.Source, log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(ops.NewCollector(src), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := promhttp.HandlerOpts{EnableOpenMetrics: true}
	if log != nil {
		opts.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelError)
	}
	return promhttp.HandlerFor(reg, opts)
}

// Close stops the watcher (after a last check) and the server.
func (o *Operator) Close() {
	o.stop()
	if o.srv != nil {
		o.srv.Close()
	}
	o.wg.Wait()
}

// PortSource wraps every queue so that the errors of its calls are counted (one ops.ErrorLog per
// interface, shared by its queues) and returns the wrapped queues and the ops.Port of each
// interface. queues[w][p] is worker w's queue of interface p, names[p] the interface's name.
func PortSource(names []string, queues [][]xmit.Port) ([][]xmit.Port, []ops.Port) {
	logs := make([]*ops.ErrorLog, len(names))
	for i := range logs {
		logs[i] = new(ops.ErrorLog)
	}
	wrapped := make([][]xmit.Port, len(queues))
	for w, qs := range queues {
		for p, q := range qs {
			wrapped[w] = append(wrapped[w], ops.CountErrors(q, logs[p]))
		}
	}
	var ps []ops.Port
	for p, name := range names {
		var qs []xmit.Port
		for w := range wrapped {
			qs = append(qs, wrapped[w][p])
		}
		op := ops.PortOf(name, qs...)
		op.Errors = logs[p]
		ps = append(ps, op)
	}
	return wrapped, ps
}

// fanoutModes names afpacket.FanoutMode values.
var fanoutModes = []string{"hash", "lb", "cpu", "rollover", "random", "qm"}

// PortMode describes how a port was opened, as log attributes: the back-end, AF_XDP's copy or
// zero-copy mode and XDP attach mode (native or generic), AF_PACKET's transmit path and fanout.
func PortMode(p xmit.Port, workers int) []any {
	switch q := p.(type) {
	case *afxdp.Port:
		return []any{"backend", "afxdp", "mode", q.Mode().String(), "attach", q.AttachMode().String(), "queues", workers}
	case interface{ Config() afpacket.Config }:
		c := q.Config()
		tx := "sendmmsg"
		if c.TxRing != nil {
			tx = "tx-ring"
		}
		fanout := "none"
		if c.Fanout != nil {
			mode := strconv.Itoa(int(c.Fanout.Mode))
			if int(c.Fanout.Mode) < len(fanoutModes) {
				mode = fanoutModes[c.Fanout.Mode]
			}
			fanout = fmt.Sprintf("%s, group %d", mode, c.Fanout.Group)
		}
		rx := "tpacket-v3"
		if c.FrameRing != nil {
			rx = "tpacket-v2"
		}
		return []any{"backend", "afpacket", "rx", rx, "tx", tx, "fanout", fanout, "sockets", workers}
	case *xmit.MemPort:
		return []any{"backend", "mem"}
	}
	return nil
}

// LogPorts logs how each real port was opened (PortMode of worker 0's queue).
func LogPorts(log *slog.Logger, names []string, byWorker [][]xmit.Port) {
	if len(byWorker) == 0 {
		return
	}
	for p, name := range names {
		log.Info("port opened", append([]any{"port", name}, PortMode(byWorker[0][p], len(byWorker))...)...)
	}
}

// ErrorsOf sums the errors src's ports counted (their ops.ErrorLog), for LogStopped and the final
// report; First is the last error one of them got.
func ErrorsOf(src *ops.Source) PortErrors {
	var e PortErrors
	for _, p := range src.Ports {
		if p.Errors == nil {
			continue
		}
		c := p.Errors.Counts()
		e.Recv += c.Recv
		e.Send += c.Send
		for _, err := range []error{c.LastRecv, c.LastSend} {
			if e.First == nil && err != nil {
				e.First = err
			}
		}
	}
	return e
}

// LogStopped logs the end of forwarding, with the errors the workers' calls got.
func LogStopped(log *slog.Logger, e PortErrors) {
	if e.Recv+e.Send == 0 {
		log.Info("router stopped")
		return
	}
	log.Warn("router stopped", "recv_errors", e.Recv, "send_errors", e.Send, "first_error", e.First.Error())
}
