package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
)

// Config is the example's configuration.
type Config struct {
	Duration time.Duration
	Interval time.Duration
	VLANs    int
	Batch    int
	Rate     int
	Bad      float64

	// The aggregate.
	LAG     string        // rr (balance-rr), xor (balance-xor) or 802.3ad (alias lacp: balance-xor under LACP)
	Hash    string        // xor: bonding hash policy (layer2, layer2+3, layer3+4, encap2+3, encap3+4, vlan+srcmac)
	FailAt  time.Duration // mem: take member 1's link down after this long (0: never)
	FailFor time.Duration // mem: and bring it back after this long (0: stays down)
	Miimon  time.Duration // carrier polling interval of the aggregate

	// LACP (-lag 802.3ad).
	LACPRate   string // fast (LACPDUs every second, partner timed out after 3 s) or slow (30 s, 90 s)
	LACPActive bool   // send LACPDUs unasked (bonding's lacp_active); off: only answer an active partner
	MinLinks   int    // the aggregate is up only with at least this many members distributing

	logw io.Writer // the event log's destination (nil: stderr)

	// Real interfaces (Backend other than mem).
	Backend    app.Backend
	Members    []string       // the aggregate's two member interfaces (the VLAN trunk)
	Uplink     string         // the untagged uplink
	Routes     string         // routes file (fib.Load format; IPRoute: `ip -4 route show` output)
	IPRoute    bool           //
	Workers    int            // workers (sockets or queues per interface)
	Spin       bool           // workers poll idle ports instead of blocking (afpacket, afxdp)
	IdleSpin   time.Duration  // workers poll idle ports this long before they block (app.Options.IdleSpin)
	Gateway    netip.Addr     // the uplink's gateway, resolved by ARP
	Neighbours app.Neighbours // static next-hop MACs by interface name ("uplink", "vlan101", "trunk": every VLAN); no ARP there
	Pcap       string         // pcapng file of forwarded and dropped frames
	PcapSample int            // capture every nth frame
	// The operator's flags: -metrics, -metrics-any (the endpoint; operator.go), -log (the event log:
	// members, LACP, aggregate, ports), -view, -top, -per-worker (the rate table).
	app.OperatorFlags

	ready  func()                             // called once the ports are open and the workers (and generator) started (tests)
	settle bool                               // mem: the generator runs past ctx until the run shows what the tests check (trunkgen.Router.Settled; tests)
	onLACP func(*lacp.Controller)             // called with the LACP controller once it is made (tests)
	onMems func([]*xmit.MemPort)              // mem: called with the router's ends (member 0, member 1, uplink) once made (tests)
	onOpen func(*app.Ports, []*lag.Aggregate) // called with the real interfaces and the workers' aggregates once made (tests)
}

func defaultConfig() Config {
	return Config{Duration: 5 * time.Second, Interval: time.Second, VLANs: 20, Batch: 64, Bad: 0.01,
		LAG: "rr", Hash: "layer3+4", Miimon: 10 * time.Millisecond, LACPRate: "fast", LACPActive: true, OperatorFlags: app.DefaultOperatorFlags(),
		Backend: app.Mem, Workers: 1, Gateway: trunkgen.DefaultGateway, Neighbours: app.Neighbours{}, PcapSample: 1}
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
	fs := flag.NewFlagSet("lagrouter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := string(cfg.Backend)
	fs.StringVar(&backend, "backend", backend, "I/O back-end: mem (in-memory ports, built-in generator), "+app.BackendHelp)
	var members string
	fs.StringVar(&members, "members", "", "the aggregate's two member interfaces, IF1,IF2 (afpacket, afxdp)")
	fs.StringVar(&cfg.LAG, "lag", cfg.LAG, "aggregate mode: rr (balance-rr), xor (balance-xor) or 802.3ad (alias lacp: balance-xor with LACP)")
	fs.StringVar(&cfg.LACPRate, "lacp-rate", cfg.LACPRate, "802.3ad: the LACPDU rate asked of the partner: fast (every second, timeout 3 s) or slow (30 s, 90 s)")
	fs.BoolVar(&cfg.LACPActive, "lacp-active", cfg.LACPActive, "802.3ad: send LACPDUs unasked (false: passive, only answering an active partner)")
	fs.IntVar(&cfg.MinLinks, "min-links", cfg.MinLinks, "802.3ad: members that must be distributing for the aggregate to be up (0-2)")
	fs.StringVar(&cfg.Hash, "hash", cfg.Hash, "xor hash policy: layer2, layer2+3, layer3+4, encap2+3, encap3+4, vlan+srcmac")
	fs.DurationVar(&cfg.Miimon, "miimon", cfg.Miimon, "carrier polling interval of the aggregate (0: no polling, a member never leaves)")
	fs.DurationVar(&cfg.FailAt, "fail-at", 0, "mem: take member 1's link down after this long (0: never)")
	fs.DurationVar(&cfg.FailFor, "fail-for", 0, "mem: bring member 1 back after this long down (0: never; needs -fail-at)")
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
	fs.DurationVar(&cfg.IdleSpin, "idle-spin", cfg.IdleSpin, app.IdleSpinUsage)
	fs.BoolVar(&cfg.Spin, "spin", false, "afpacket, afxdp: workers keep polling idle ports (a core each, the lowest latency) instead of blocking")
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
		fmt.Fprintln(stderr, "lagrouter:", err)
		fs.Usage()
		return cfg, err
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if members != "" {
		cfg.Members = strings.Split(members, ",")
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
	case app.CheckIdleSpin(c.IdleSpin) != nil:
		return app.CheckIdleSpin(c.IdleSpin)
	case c.Workers < 1 || c.Workers > maxWorkers:
		return fmt.Errorf("-workers %d: want 1-%d", c.Workers, maxWorkers)
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
	case c.IPRoute && c.Routes == "":
		return errors.New("-iproute: says how to read the -routes file, and there is none")
	case c.Miimon < 0:
		return fmt.Errorf("-miimon %v: want 0 (no carrier polling) or more", c.Miimon)
	case c.FailAt < 0:
		return fmt.Errorf("-fail-at %v: want 0 (never) or more", c.FailAt)
	case c.FailFor < 0:
		return fmt.Errorf("-fail-for %v: want 0 (stays down) or more", c.FailFor)
	case c.FailFor > 0 && c.FailAt == 0:
		return fmt.Errorf("-fail-for %v: brings member 1 back after -fail-at took it down, and there is no -fail-at", c.FailFor)
	case c.LACPRate != "fast" && c.LACPRate != "slow":
		return fmt.Errorf("-lacp-rate %q: fast or slow", c.LACPRate)
	case c.MinLinks < 0 || c.MinLinks > numMembers:
		return fmt.Errorf("-min-links %d: want 0-%d", c.MinLinks, numMembers)
	}
	if _, err := lagConfig(*c); err != nil {
		return err
	}
	if err := c.OperatorFlags.Check(); err != nil {
		return err
	}
	if c.Backend == app.Mem {
		switch {
		case len(c.Members) > 0 || c.Uplink != "":
			return errors.New("-members and -uplink are for -backend afpacket or afxdp; the in-memory ports are fixed")
		case c.Workers != 1:
			return fmt.Errorf("-workers %d: the in-memory network has one worker", c.Workers)
		case c.Batch > maxMemBatch:
			return fmt.Errorf("-batch %d: want 1-%d in memory (the generator keeps at most %d frames in flight)", c.Batch, maxMemBatch, 3*maxMemBatch)
		}
	} else {
		if err := c.checkInterfaces(); err != nil {
			return err
		}
		if c.FailAt > 0 {
			return fmt.Errorf("-fail-at is for -backend mem; on real links take a member down (ip link set %s down)", c.Members[1])
		}
	}
	_, err := buildRouter(*c, routerMAC, c.devNames(), nil)
	return err
}

// checkInterfaces checks -members and -uplink: exactly two members and an uplink, three distinct
// interfaces.
func (c *Config) checkInterfaces() error {
	m := strings.Join(c.Members, ",")
	switch {
	case len(c.Members) != numMembers:
		return fmt.Errorf("-members %q: want exactly %d interfaces, IF1,IF2 (-backend %s needs -members and -uplink)", m, numMembers, c.Backend)
	case c.Members[0] == "" || c.Members[1] == "":
		return fmt.Errorf("-members %q: an empty interface name", m)
	case c.Members[0] == c.Members[1]:
		return fmt.Errorf("-members %s: the same interface twice; an aggregate has two distinct members", m)
	case c.Uplink == "":
		return fmt.Errorf("-backend %s needs -uplink", c.Backend)
	case c.Uplink == c.Members[0] || c.Uplink == c.Members[1]:
		return fmt.Errorf("-uplink %s is also in -members %s: the uplink is an interface of its own", c.Uplink, m)
	}
	return nil
}

// devNames are the device names an `ip route` file may use besides uplink and vlanNNN: the
// uplink's real name.
func (c *Config) devNames() map[string]uint32 {
	if c.Uplink == "" {
		return nil
	}
	return map[string]uint32{c.Uplink: 0}
}
