package main

import (
	"log/slog"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/ops"
)

// The operator's view of the router (package app's, shared by the examples): log events
// (package ops's Watcher, log/slog), and with -metrics ADDR an HTTP endpoint with Prometheus
// metrics at /metrics, the JSON look inside (/ports, /interfaces, /neighbours, /route?addr=A) and
// the packet trace (/trace?n=N).

// logger returns the router's event log: text (logfmt) or JSON lines on stderr.
func (c *Config) logger() *slog.Logger { return c.OperatorFlags.Logger(c.logw) }

// checkMetricsAddr checks a -metrics address (app.CheckMetricsAddr).
func checkMetricsAddr(addr string, public bool) error { return app.CheckMetricsAddr(addr, public) }

// startOperator starts the operator view of src (app.StartOperator) and tells the tests where it
// listens.
func startOperator(cfg Config, src *ops.Source, log *slog.Logger) (*app.Operator, error) {
	o, err := app.StartOperator(cfg.OperatorFlags, src, log)
	if err == nil && o.Addr != nil && cfg.metricsReady != nil {
		cfg.metricsReady(o.Addr.String())
	}
	return o, err
}
