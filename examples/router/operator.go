package main

import (
	"context"
	"errors"
	"fmt"

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
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// The operator's view of the router: log events (package ops's Watcher, log/slog), and with
// -metrics ADDR an HTTP endpoint with Prometheus metrics at /metrics and the JSON look inside
// (/ports, /interfaces, /neighbours, /route?addr=A).

// logger returns the router's event log: text (logfmt) or JSON lines on stderr.
func (c *Config) logger() *slog.Logger {
	w := c.logw
	if w == nil {
		w = os.Stderr
	}
	if c.Log == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// checkMetricsAddr checks a -metrics address: HOST:PORT, and a loopback host unless public is
// set (the endpoint has no authentication; it is read-only but shows the whole configuration).
func checkMetricsAddr(addr string, public bool) error {
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

// operator runs the router's operator view beside the workers: the watcher (events once a
// second) and, with -metrics, the HTTP server.
type operator struct {
	log  *slog.Logger
	srv  *http.Server
	addr net.Addr
	wg   sync.WaitGroup
	stop context.CancelFunc
}

// startOperator starts the watcher of src and, if cfg.Metrics is set, the HTTP server; the
// error is the listener's.
func startOperator(cfg Config, src *ops.Source, log *slog.Logger) (*operator, error) {
	o := &operator{log: log}
	if cfg.Metrics != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(ops.NewCollector(src), collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
		mux.Handle("/", ops.NewHandler(src))
		ln, err := net.Listen("tcp", cfg.Metrics)
		if err != nil {
			return nil, fmt.Errorf("-metrics: %w", err)
		}
		o.addr = ln.Addr()
		o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		log.Info("serving metrics", "url", "http://"+o.addr.String()+"/metrics", "look_inside", []string{"/ports", "/interfaces", "/neighbours", "/route?addr=A"})
		if cfg.metricsReady != nil {
			cfg.metricsReady(o.addr.String())
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	w := ops.NewWatcher(src, log)
	o.wg.Add(1)
	go func() { defer o.wg.Done(); w.Run(ctx, time.Second) }()
	return o, nil
}

// close stops the watcher (after a last check) and the server.
func (o *operator) close() {
	o.stop()
	if o.srv != nil {
		o.srv.Close()
	}
	o.wg.Wait()
}

// portSource returns the ports of src: each wrapped so that the errors of its calls are counted
// (one ErrorLog per interface, shared by its queues), and the ops.Port of each interface.
// queues[w][p] is worker w's queue of interface p.
func portSource(names []string, queues [][]xmit.Port) ([][]xmit.Port, []ops.Port) {
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

// logStopped logs the end of forwarding, with the errors the workers' calls got.
func logStopped(log *slog.Logger, e app.PortErrors) {
	if e.Recv+e.Send == 0 {
		log.Info("router stopped")
		return
	}
	log.Warn("router stopped", "recv_errors", e.Recv, "send_errors", e.Send, "first_error", e.First.Error())
}
