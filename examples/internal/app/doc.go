// Package app holds what the wirespeed examples share beyond the forwarding step: the I/O back-end
// choice and opening real interfaces once per worker (Backend, Open), the worker loop (Run,
// RunTraced), the pipeline of receive workers handing frames to transmit workers (Pipeline),
// static neighbour MACs (ParseNeighbours), the pcap tap (Pcap), the final accounting report
// (Tally), and the operator's view every example serves the same way: the flags
// (OperatorFlags: -metrics, -metrics-any, -log, -view, -top, -per-worker), the event log and the
// HTTP endpoint of metrics, look inside and packet trace (StartOperator, package ops), the ports'
// error counting and modes (PortSource, PortMode, LogPorts) and the rate table's rows (Ports.Rows,
// IfaceRows).
//
// It is internal to the examples: small, readable, and changed with them.
package app
