package main

import (
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// startMetrics starts the -metrics endpoint (package app's operator view: /metrics, the JSON look
// inside, /trace) of router, whose physical ports are the aggregate's members and the uplink
// (ifnames[p] opened as queues[w][p] for worker w), with the packet trace trace. Without -metrics
// it starts nothing and returns nil.
func startMetrics(cfg Config, router *trunkgen.Router, ifnames []string, queues [][]xmit.Port, trace *ops.Trace) (*app.Operator, error) {
	if cfg.Metrics == "" {
		return nil, nil
	}
	var ports []ops.Port
	for p, name := range ifnames {
		var qs []xmit.Port
		for _, wq := range queues {
			qs = append(qs, wq[p])
		}
		ports = append(ports, ops.PortOf(name, qs...))
	}
	return app.StartOperator(cfg.OperatorFlags, router.Source(ports, trace), cfg.logger())
}

// stopMetrics stops what startMetrics started (nil: nothing).
func stopMetrics(op *app.Operator) {
	if op != nil {
		op.Close()
	}
}

// rateRows are the rate table's rows: the aggregate lag0 (agg), its two members (member0, member1)
// and the uplink, read by stats[i] in that order, and the stage's interfaces (names[id]).
func rateRows(agg func() xmit.Stats, member0, member1, uplink string, stats []func() xmit.Stats, stage *fwd.Router, names []string) []monitor.Row {
	rows := []monitor.Row{monitor.PortRow("lag0", agg)}
	for i, name := range []string{member0, member1, uplink} {
		rows = append(rows, monitor.PortRow(name, stats[i]))
	}
	return append(rows, app.IfaceRows(stage, names)...)
}
