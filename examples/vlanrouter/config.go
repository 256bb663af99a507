package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
)

// Config is the example's configuration.
type Config struct {
	Duration time.Duration
	Interval time.Duration
	VLANs    int
	Batch    int
	Rate     int
	Bad      float64

	// Pipeline: the workers receive and route, and hand each egress port's frames over rings to
	// TxWorkers transmit workers, each the only sender on the ports it owns (app.Pipeline);
	// otherwise every worker runs to completion, sending on its own queues.
	Pipeline  bool
	TxWorkers int

	// Real interfaces (Backend other than mem).
	Backend    app.Backend
	Trunk      string         // the trunk interface (VLANs 101..)
	Uplink     string         // the untagged uplink
	Routes     string         // routes file (fib.Load format; IPRoute: `ip -4 route show` output)
	IPRoute    bool           //
	Workers    int            // workers (sockets or queues per interface)
	Spin       bool           // workers poll idle ports instead of blocking (afpacket, afxdp)
	IdleSpin   time.Duration  // workers poll idle ports this long before they block (app.Options.IdleSpin)
	BusyPoll   int            // afxdp: preferred busy polling, frames per poll (0: off)
	Gateway    netip.Addr     // the uplink's gateway, resolved by ARP
	Neighbours app.Neighbours // static next-hop MACs by interface name ("uplink", "vlan101", "trunk": every VLAN); no ARP there
	Pcap       string         // pcapng file of forwarded and dropped frames
	PcapSample int            // capture every nth frame

	// The operator's flags: -metrics, -metrics-any, -log, -view, -top, -per-worker.
	app.OperatorFlags

	ready  func()    // called once the ports are open and the workers (and generator) started (tests)
	settle bool      // mem: the generator runs past ctx until the run shows what the tests check (trunkgen.Router.Settled; tests)
	logw   io.Writer // the event log's destination (nil: stderr)
}

func defaultConfig() Config {
	return Config{Duration: 5 * time.Second, Interval: time.Second, VLANs: 20, Batch: 64, Bad: 0.01,
		Backend: app.Mem, Workers: 1, TxWorkers: 1, Gateway: trunkgen.DefaultGateway, Neighbours: app.Neighbours{}, PcapSample: 1,
		OperatorFlags: app.DefaultOperatorFlags()}
}

// Limits of the flags.
const (
	maxWorkers  = 64
	maxBatch    = 1024
	maxMemBatch = 512 // the in-memory generator keeps at most 1536 frames in flight, two batches at a time
)

// parseFlags parses and checks the command line; on error it has printed the reason and the usage.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("vlanrouter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := string(cfg.Backend)
	fs.StringVar(&backend, "backend", backend, "I/O back-end: mem (in-memory ports, built-in generator), "+app.BackendHelp)
	fs.StringVar(&cfg.Trunk, "trunk", "", "trunk interface carrying the VLANs (afpacket, afxdp)")
	fs.StringVar(&cfg.Uplink, "uplink", "", "untagged uplink interface (afpacket, afxdp)")
	fs.StringVar(&cfg.Routes, "routes", "", "routes file: `a.b.c.d/len nexthop` lines (fib.Load; next hop 0 = the uplink's gateway, i = host 10.0.i.2 on VLAN 100+i); default: 10.0.i.0/24 on VLAN 100+i, 192.0.2.0/24 on the uplink, 0.0.0.0/0 via the gateway")
	fs.BoolVar(&cfg.IPRoute, "iproute", false, "the -routes file is `ip -4 route show` output (dev uplink|<uplink ifname>|vlanNNN; every gateway resolved by ARP)")
	fs.Func("gateway", "the uplink's gateway, resolved by ARP (default "+trunkgen.DefaultGateway.String()+")", func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return fmt.Errorf("%q: not an IPv4 address", v)
		}
		cfg.Gateway = a
		return nil
	})
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers (1-64): AF_PACKET sockets per interface in a PACKET_FANOUT group, or AF_XDP queues 0..N-1")
	fs.IntVar(&cfg.BusyPoll, "busy-poll", cfg.BusyPoll, "afxdp: the kernel's preferred busy polling with this budget in frames (SO_PREFER_BUSY_POLL; 0: off): the worker runs the receive NAPI itself")
	fs.DurationVar(&cfg.IdleSpin, "idle-spin", cfg.IdleSpin, app.IdleSpinUsage)
	fs.BoolVar(&cfg.Spin, "spin", false, "afpacket, afxdp: workers keep polling idle ports (a core each, the lowest latency) instead of blocking")
	fs.BoolVar(&cfg.Pipeline, "pipeline", false, "pipeline instead of run to completion: the -workers receive and route, and hand each port's frames over rings to the -tx-workers transmit workers that own the ports")
	fs.IntVar(&cfg.TxWorkers, "tx-workers", cfg.TxWorkers, "-pipeline: transmit workers (1: one sends on both ports; 2: one per port)")
	fs.Var(cfg.Neighbours, "nexthop", "static next-hop MACs, no ARP on those interfaces: NAME=MAC[,...] with NAME uplink, vlanNNN, or trunk (every VLAN): everything routed out of NAME goes to MAC")
	fs.StringVar(&cfg.Pcap, "pcap", "", "write forwarded and dropped frames to this pcapng file (verdict in each packet's comment)")
	fs.IntVar(&cfg.PcapSample, "pcap-sample", cfg.PcapSample, "capture every nth frame (1 or more)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	fs.IntVar(&cfg.VLANs, "vlans", cfg.VLANs, "VLAN sub-interfaces on the trunk (1-200)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "frames per batch (1-1024; in memory 1-512)")
	fs.IntVar(&cfg.Rate, "rate", cfg.Rate, "mem: generator rate limit in frames/s per direction (0: as fast as the router takes them)")
	fs.Float64Var(&cfg.Bad, "bad", cfg.Bad, "mem: share of generated frames the router must drop, 0-1 (TTL 1, unknown VLAN, bad checksum)")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval (more than 0)")
	cfg.OperatorFlags.Register(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	fail := func(err error) (Config, error) {
		fmt.Fprintln(stderr, "vlanrouter:", err)
		fs.Usage()
		return cfg, err
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	var err error
	if cfg.Backend, err = app.ParseBackend(backend); err != nil {
		return fail(err)
	}
	if err := cfg.check(); err != nil {
		return fail(err)
	}
	return cfg, nil
}

// check validates the whole configuration, the routes file and the neighbours included.
func (c *Config) check() error {
	switch {
	case c.Workers < 1 || c.Workers > maxWorkers:
		return fmt.Errorf("-workers %d: want 1-%d", c.Workers, maxWorkers)
	case app.CheckIdleSpin(c.IdleSpin) != nil:
		return app.CheckIdleSpin(c.IdleSpin)
	case c.BusyPoll < 0 || c.BusyPoll > 0xffff:
		return fmt.Errorf("-busy-poll %d: want 0 (off) to 65535 frames", c.BusyPoll)
	case c.Batch < 1 || c.Batch > maxBatch:
		return fmt.Errorf("-batch %d: want 1-%d", c.Batch, maxBatch)
	case c.Duration < 0:
		return fmt.Errorf("-duration %v: want 0 (until Ctrl-C) or more", c.Duration)
	case c.Interval <= 0:
		return fmt.Errorf("-interval %v: want more than 0", c.Interval)
	case c.VLANs < 1 || c.VLANs > 200:
		return fmt.Errorf("-vlans %d: want 1-200", c.VLANs)
	case c.Rate < 0:
		return fmt.Errorf("-rate %d: want 0 (no limit) or more", c.Rate)
	case !(c.Bad >= 0 && c.Bad <= 1): // NaN too
		return fmt.Errorf("-bad %v: want a share from 0 to 1", c.Bad)
	case c.PcapSample < 1:
		return fmt.Errorf("-pcap-sample %d: want 1 (every frame) or more", c.PcapSample)
	case c.TxWorkers < 1 || c.TxWorkers > numPorts:
		return fmt.Errorf("-tx-workers %d: want 1-%d (a transmit worker owns one port at least)", c.TxWorkers, numPorts)
	case c.TxWorkers != 1 && !c.Pipeline:
		return fmt.Errorf("-tx-workers %d: transmit workers are for -pipeline; without it every worker sends on its own queues", c.TxWorkers)
	case c.IPRoute && c.Routes == "":
		return errors.New("-iproute: says how to read the -routes file, and there is none")
	}
	if err := c.OperatorFlags.Check(); err != nil {
		return err
	}
	if c.Backend == app.Mem {
		switch {
		case c.Trunk != "" || c.Uplink != "":
			return errors.New("-trunk and -uplink are for -backend afpacket or afxdp; the in-memory ports are fixed")
		case c.Workers != 1:
			return fmt.Errorf("-workers %d: the in-memory network has one worker (with -pipeline: one receive worker, and -tx-workers)", c.Workers)
		case c.Batch > maxMemBatch:
			return fmt.Errorf("-batch %d: want 1-%d in memory (the generator keeps at most %d frames in flight)", c.Batch, maxMemBatch, 3*maxMemBatch)
		}
	} else {
		switch {
		case c.Trunk == "" || c.Uplink == "":
			return fmt.Errorf("-backend %s needs -trunk and -uplink", c.Backend)
		case c.Trunk == c.Uplink:
			return fmt.Errorf("-trunk %s -uplink %s: the same interface twice; the trunk and the uplink are two interfaces", c.Trunk, c.Uplink)
		}
	}
	_, err := buildRouter(*c, routerMAC, c.devNames(), nil)
	return err
}

// devNames are the device names an `ip route` file may use besides uplink and vlanNNN: the
// uplink's real name.
func (c *Config) devNames() map[string]uint32 {
	if c.Uplink == "" {
		return nil
	}
	return map[string]uint32{c.Uplink: 0}
}
