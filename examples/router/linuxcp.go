package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/linuxcp"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// The -linuxcp mode: the Linux kernel is the control plane (package linuxcp). Each port has a TAP
// (cfg.TapPrefix + its index: ws0, ws1, ...) with the port's MAC and MTU, and the router's
// addresses live on the TAPs. The stage delivers locally what is for the router (its addresses,
// ARP, broadcasts, anything not forwarded) and the exception path takes it up the TAP; what the
// kernel sends on a TAP goes out the port. ARP is the kernel's, on the TAPs: the router answers
// none itself, and has no neighbour table of its own. The physical interfaces are isolated from the
// kernel's stack (linuxcp.IsolatePhysical), so that only the router handles their frames.
//
// Routes and neighbours come from the kernel through the netlink mirror (startMirror,
// linuxcp.Mirror): the kernel's routes of the TAPs become the stage's routes, its neighbours the
// next hops' MACs. Until a next hop is resolved there, the frames routed to it go up the TAP they
// came in on, and the kernel forwards them (forwarding is turned on for the TAPs) and resolves the
// neighbour: the kernel is the slow path, the mirror moves the traffic to the fast one.

// cpRouter is the kernel side of a -linuxcp router.
type cpRouter struct {
	taps    []*linuxcp.TAP
	x       *linuxcp.Exception
	restore []func() error
	addrs   [][]netip.Prefix // per port: the router's addresses, as its TAP has them
	mirror  io.Closer        // stops the netlink mirror (nil: none)
	stats   func() string    // the mirror's counters, for the final report (nil: none)
}

// tapName is the TAP of port i.
func tapName(prefix string, i int) string { return fmt.Sprintf("%s%d", prefix, i) }

// openCP isolates every physical port from the kernel's stack, opens its TAP, gives the TAP the
// -port address (if any), turns on forwarding on it and reads its addresses. It runs on the thread
// whose network namespace holds the ports. On error everything it did is undone.
func openCP(cfg Config, macs []frame.MAC) (c *cpRouter, err error) {
	c = &cpRouter{}
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	for i, p := range cfg.Ports {
		restore, err := linuxcp.IsolatePhysical(p.Name)
		if err != nil {
			return nil, fmt.Errorf("-port %s: %w", p.Name, err)
		}
		c.restore = append(c.restore, restore)
		tap, err := linuxcp.OpenTAP(tapName(cfg.TapPrefix, i), macs[i], p.MTU)
		if err != nil {
			return nil, fmt.Errorf("-port %s: %w", p.Name, err)
		}
		c.taps = append(c.taps, tap)
		if p.Addr.IsValid() {
			if err := tap.AddAddr(p.Addr); err != nil {
				return nil, fmt.Errorf("-port %s: %w", p.Name, err)
			}
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+tap.Name()+"/forwarding", []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("-port %s: TAP %s: turn on forwarding: %w", p.Name, tap.Name(), err)
		}
		as, err := tap.Addrs()
		if err != nil {
			return nil, fmt.Errorf("-port %s: %w", p.Name, err)
		}
		c.addrs = append(c.addrs, as)
	}
	return c, nil
}

// start builds the exception path over the TAPs for workers workers and starts it.
func (c *cpRouter) start(demux *vlan.Demux, workers, batch int) error {
	devs := make([]linuxcp.Device, len(c.taps))
	for i, t := range c.taps {
		devs[i] = t
	}
	x, err := linuxcp.New(&linuxcp.Config{Demux: demux, Devices: devs, Workers: workers, Batch: batch})
	if err != nil {
		return err
	}
	c.x = x
	x.Start()
	return nil
}

// close stops the mirror and the exception path, closes the TAPs (they go away with their
// addresses) and gives the physical interfaces back to the kernel as they were.
func (c *cpRouter) close() error {
	var errs []error
	if c.mirror != nil {
		errs = append(errs, c.mirror.Close())
	}
	if c.x != nil {
		errs = append(errs, c.x.Close())
	} else {
		for _, t := range c.taps {
			errs = append(errs, t.Close())
		}
	}
	for i := len(c.restore) - 1; i >= 0; i-- {
		errs = append(errs, c.restore[i]())
	}
	return errors.Join(errs...)
}

// buildCP makes the router of the -linuxcp mode: interface i is port i, untagged, with the
// addresses of its TAP; each connected subnet has next hop i, unresolved, until the mirror
// replaces the routes with the kernel's (and its next hops, from index len(c.Ports) on, resolve
// hosts from the kernel's neighbours). The stage answers no echo request itself: the kernel does.
func buildCP(c Config, macs []frame.MAC, addrs [][]netip.Prefix, pool *frame.Pool) (*parts, error) {
	n := len(c.Ports)
	demux := vlan.NewDemux(n, vlan.Parser{})
	ifaces := make([]fwd.Iface, n)
	nh := new(fib.NextHops)
	routes := fib.New()
	for i, p := range c.Ports {
		if err := demux.Add(vlan.Interface{ID: uint16(i), Port: uint16(i)}); err != nil {
			return nil, err
		}
		ifaces[i] = fwd.Iface{Name: p.Name, MAC: macs[i], MTU: p.MTU, Addrs: addrs[i]}
		if err := nh.Set(uint32(i), fib.NextHop{Ifindex: uint16(i), Flags: fib.NextHopUnresolved}); err != nil {
			return nil, err
		}
		for _, a := range addrs[i] {
			if err := routes.Insert(a.Masked(), uint32(i)); err != nil {
				return nil, err
			}
		}
	}
	router, err := fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nh, Pool: pool, HoldUnresolved: true, NoEcho: true})
	if err != nil {
		return nil, err
	}
	return &parts{router: router, demux: demux, routes: routes}, nil
}

// runCPWorker is one worker of the -linuxcp mode, app.Run's loop with the exception path beside
// the stage: what arrives on a port is processed, its egress and generated batches sent, its local
// and unresolved frames handed up (xw.Up, which never waits); what the kernel sent for a port is
// taken (xw.Take) and sent on it. opt's Spin and IdleSpin act as in app.RunWith. It allocates
// nothing per batch.
func runCPWorker(ctx context.Context, w *fwd.Worker, xw *linuxcp.Worker, trace *ops.TraceHook, ports []xmit.Port, batch, drain int, opt app.Options) app.PortErrors {
	var errs app.PortErrors
	out := app.CountSends(ports, &errs)
	in, down := frame.NewBatch(batch), frame.NewBatch(batch)
	waiters := make([]xmit.Waiter, len(ports))
	for i, p := range ports {
		waiters[i], _ = p.(xmit.Waiter)
	}
	step := func(p int, in *frame.Batch) {
		trace.Ingress(p)
		o := w.Process(uint16(p), in)
		trace.Ingress(-1)
		for q := range o.Egress {
			if len(o.Egress[q].Frames) > 0 {
				out[q].Send(o.Egress[q])
			}
			if len(o.Generated[q].Frames) > 0 {
				out[q].Send(o.Generated[q])
			}
		}
		if len(o.Local.Frames) > 0 {
			xw.Up(o.Local)
		}
		if len(o.Unresolved.Frames) > 0 {
			xw.Up(o.Unresolved)
		}
	}
	poll := func() bool {
		got := false
		for p, port := range ports {
			n, err := port.Recv(in)
			if err != nil {
				errs.RecvError(err)
			}
			if n > 0 {
				step(p, in)
				got = true
			}
			if xw.Take(uint16(p), down) > 0 {
				out[p].Send(down)
				got = true
			}
		}
		return got
	}
	batches, turn := 0, 0
	idle := app.Idle{Options: opt}
	done := ctx.Done()
	for {
		trace.Poll() // one atomic load while the trace's state is unchanged
		got := poll()
		if batches++; batches&63 == 0 {
			w.Flush()
			xw.Flush()
		}
		select {
		case <-done:
			for range drain {
				if !poll() {
					break
				}
			}
			w.Flush()
			xw.Flush()
			return errs
		default:
		}
		if got {
			idle.Reset()
			continue
		}
		if idle.Chores() {
			w.Flush()
			xw.Flush()
		}
		if idle.Empty() {
			turn = (turn + 1) % len(ports)
			if wt := waiters[turn]; wt != nil {
				wt.Wait(app.IdleWait / int64(len(ports)))
			}
		}
	}
}

// reportCP prints the exception path's counters and checks its accounting: every frame the stage
// delivered locally or held went up or was dropped for a reason, every frame queued up was written,
// refused or released at the end, every frame read from a TAP was queued down or dropped, and every
// frame queued down was sent or released.
func reportCP(out io.Writer, c linuxcp.Counters, stage fwd.Counters, taps []*linuxcp.TAP, mirror func() string) bool {
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	upDrops := c.UpNoDevice + c.UpNoBuffer + c.UpOversize + c.UpMalformed + c.UpQueueFull
	downDrops := c.DownNoBuffer + c.DownOversize + c.DownMalformed + c.DownQueueFull
	fmt.Fprintf(out, "  linux-cp: up %s (written %s, refused %s; dropped %s: queue full %s, no buffer %s, too big %s)\n",
		g(c.Up), g(c.Written), g(c.WriteErrors), g(upDrops), g(c.UpQueueFull), g(c.UpNoBuffer+c.UpNoDevice), g(c.UpOversize+c.UpMalformed))
	fmt.Fprintf(out, "  linux-cp: read %s from the kernel (sent %s; dropped %s: queue full %s, no buffer %s, too big or short %s); read errors %s; released at the end %s\n",
		g(c.Read), g(c.Taken), g(downDrops), g(c.DownQueueFull), g(c.DownNoBuffer), g(c.DownOversize+c.DownMalformed), g(c.ReadErrors), g(c.Closed))
	for _, t := range taps {
		fmt.Fprintf(out, "  linux-cp: %s (ifindex %d): neighbours and routes are the kernel's: ip neigh show dev %s\n", t.Name(), t.Ifindex(), t.Name())
	}
	if mirror != nil {
		fmt.Fprintf(out, "  linux-cp mirror: %s\n", mirror())
	}
	ok := stage.Local+stage.Held == c.Up+upDrops && c.Up == c.Written+c.WriteErrors+closedUp(c) &&
		c.Read == c.Down+downDrops && c.Down >= c.Taken
	if ok {
		fmt.Fprintln(out, "  linux-cp accounting: ok (local + held = up + dropped; read = down + dropped)")
	} else {
		fmt.Fprintln(out, "  linux-cp accounting: MISMATCH")
	}
	return ok
}

// closedUp is the part of Counters.Closed that was queued up: what Up queued and the TAP writers
// did not write. (Closed counts both directions; the down part is Down - Taken.)
func closedUp(c linuxcp.Counters) uint64 { return c.Closed - (c.Down - c.Taken) }
