package gen

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Generator sends one Config's traffic from one goroutine. See the package doc for the
// concurrency contract.
type Generator struct {
	cfg    Config
	frames [][]byte
	nsfd   int // the target namespace (the XDP engine runs its calls on a thread inside it)
	eng    engine

	sent    atomic.Uint64
	errs    atomic.Uint64
	lastErr atomic.Value
	stop    atomic.Bool
	done    chan struct{}
	started atomic.Bool
	once    sync.Once
	res     Result
}

// engine sends until stop; send returns frames sent in one call (a batch or one BPF_PROG_RUN).
type engine interface {
	send(n int) (int, error) // at most n frames
	close()
}

func sameNS(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Open checks cfg, opens the engine on cfg.Interface inside the namespace cfg.Netns (refusing the
// host's and this process's own namespace) and returns a stopped generator.
func Open(cfg *Config) (*Generator, error) {
	c, err := cfg.defaults()
	if err != nil {
		return nil, err
	}
	if c.Netns == "" || c.Interface == "" {
		return nil, fmt.Errorf("%w: a namespace and an interface are required", ErrBadConfig)
	}
	path := "/var/run/netns/" + c.Netns
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("gen: namespace %q: %w", c.Netns, err)
	}
	if sameNS(path, "/proc/1/ns/net") || sameNS(path, "/proc/self/ns/net") {
		return nil, ErrHostNetns
	}
	frames, err := Frames(&c)
	if err != nil {
		return nil, err
	}
	nsfd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("gen: open %s: %w", path, err)
	}
	g := &Generator{cfg: c, frames: frames, nsfd: nsfd, done: make(chan struct{})}
	err = g.inNS(func() error {
		ifi, err := net.InterfaceByName(c.Interface)
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		switch c.Engine {
		case EngineXDP:
			g.eng, err = newXDP(ifi.Index, &c, frames)
		case EngineAFXDP:
			g.eng, err = newAFXDP(c.Interface, &c, frames)
		default:
			g.eng, err = newAFPacket(ifi.Index, &c, frames)
		}
		return err
	})
	if err != nil {
		unix.Close(nsfd)
		return nil, err
	}
	return g, nil
}

// inNS runs fn on the calling goroutine's thread switched into the target namespace and back.
func (g *Generator) inNS(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(self)
	if err := unix.Setns(g.nsfd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("gen: setns: %w", err)
	}
	ferr := fn()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		runtime.LockOSThread() // the thread stays in the wrong namespace: let the runtime drop it
		return fmt.Errorf("gen: setns back: %w", err)
	}
	return ferr
}

// Config returns the generator's config with defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Start starts the sending goroutine (once).
func (g *Generator) Start() {
	if !g.started.CompareAndSwap(false, true) {
		return
	}
	go g.run()
}

func (g *Generator) run() {
	defer close(g.done)
	c := &g.cfg
	var cpu0 time.Duration
	t0 := time.Now()
	err := g.inNS(func() error {
		if c.CPU >= 0 {
			var set unix.CPUSet
			set.Set(c.CPU)
			unix.SchedSetaffinity(0, &set) // best effort
		}
		if c.Nice != 0 {
			// On Linux the niceness is per thread: who 0 is the calling (locked) thread. Put it back
			// before the thread returns to the runtime. (The raw getpriority returns 20-nice.)
			if old, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil {
				defer unix.Setpriority(unix.PRIO_PROCESS, 0, 20-old)
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, 0, c.Nice); err != nil {
				g.errs.Add(1)
				g.lastErr.Store(fmt.Errorf("gen: setpriority %d: %w", c.Nice, err))
			}
		}
		cpu0 = threadCPU()
		t0 = time.Now()
		var end time.Time
		if c.Duration > 0 {
			end = t0.Add(c.Duration)
		}
		chunk := g.chunk()
		// Let the pacer catch up two calls' worth, so a call's own overhead (the XDP engine's
		// BPF_PROG_RUN setup is ~20 ms) is made up for.
		pace := Pacer{Rate: c.Rate, Burst: max(c.Rate/100, 2*float64(chunk))}
		for !g.stop.Load() {
			now := time.Now()
			if !end.IsZero() && !now.Before(end) {
				break
			}
			if d := pace.Delay(now, chunk); d > 0 {
				time.Sleep(d)
			}
			n, err := g.eng.send(chunk)
			if err != nil {
				g.errs.Add(1)
				g.lastErr.Store(err)
				if c.Engine == EngineXDP {
					time.Sleep(10 * time.Millisecond)
				} else {
					runtime.Gosched()
				}
			}
			g.sent.Add(uint64(n))
		}
		g.res.CPU = threadCPU() - cpu0
		return nil
	})
	g.res.Elapsed = time.Since(t0)
	if err != nil {
		g.errs.Add(1)
		g.lastErr.Store(err)
	}
	runtime.KeepAlive(g.frames)
}

// chunk is how many frames one call sends: the engine's batch, shrunk at low rates to about 1 ms
// (AF_PACKET) or 200 ms (XDP, whose calls cost ~20 ms each) of traffic.
func (g *Generator) chunk() int {
	c := &g.cfg
	n := c.Batch
	if c.Engine == EngineXDP {
		n = int(c.Repeat)
	}
	if c.Rate > 0 {
		per := c.Rate / 1000
		if c.Engine == EngineXDP {
			per = c.Rate / 5
		}
		n = min(n, max(1, int(per)))
	}
	return n
}

func threadCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Done is closed when the sending goroutine has ended (Duration passed or Stop).
func (g *Generator) Done() <-chan struct{} { return g.done }

// Sent is the number of frames sent so far.
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// LastError is the last failed call's error, or nil.
func (g *Generator) LastError() error {
	e, _ := g.lastErr.Load().(error)
	return e
}

// Stop stops the goroutine (waiting for the call in progress), releases the socket or program and
// returns the result. Calling it again returns the same result.
func (g *Generator) Stop() Result {
	g.once.Do(func() {
		g.stop.Store(true)
		if g.started.Load() {
			<-g.done
		}
		g.eng.close()
		unix.Close(g.nsfd)
		g.res.Engine, g.res.Sent, g.res.Errors = g.cfg.Engine, g.sent.Load(), g.errs.Load()
	})
	return g.res
}

// Wait waits for Duration to pass (or Stop) and returns Stop's result.
func (g *Generator) Wait() Result {
	<-g.done
	return g.Stop()
}
