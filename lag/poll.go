package lag

import (
	"time"

	"github.com/wirespeed/wirespeed/xmit"
)

// debounce is one member's carrier filter, as bonding's miimon applies updelay and downdelay: a
// change of the observed carrier is believed only once it has lasted the delay; a change that
// reverts earlier is forgotten. It is a pure function of the observations and their times, so
// tests step it with made-up times.
type debounce struct {
	up      bool          // believed state
	pending bool          // the observed state differs from up since since
	since   time.Duration // when the difference was first seen
}

// step feeds an observation made at now and reports whether the believed state changed.
func (d *debounce) step(observed bool, now, upDelay, downDelay time.Duration) bool {
	if observed == d.up {
		d.pending = false
		return false
	}
	if !d.pending {
		d.pending, d.since = true, now
	}
	delay := downDelay
	if observed {
		delay = upDelay
	}
	if now-d.since < delay {
		return false
	}
	d.up, d.pending = observed, false
	return true
}

// carrierSource reports a member's carrier; ok false means unknown (the member is left as is).
type carrierSource func() (up, ok bool)

func (a *Aggregate) sources() []carrierSource {
	src := make([]carrierSource, len(a.ports))
	for i, p := range a.ports {
		if ls, ok := p.(xmit.LinkStater); ok {
			src[i] = func() (bool, bool) { return ls.LinkUp(), true }
			continue
		}
		name := p.Name()
		if a.cfg.Ifnames != nil && a.cfg.Ifnames[i] != "" {
			name = a.cfg.Ifnames[i]
		}
		src[i] = func() (bool, bool) { return readCarrier(name) }
	}
	return src
}

// startPoller reads every carrier once (believed as is, no delay: the state at enslavement) and
// publishes, then polls every Miimon in a goroutine until Close.
func (a *Aggregate) startPoller() {
	src := a.sources()
	deb := make([]debounce, len(a.ports))
	a.mu.Lock()
	for i, s := range src {
		if up, ok := s(); ok {
			a.carrier[i] = up
		}
		deb[i].up = a.carrier[i]
	}
	a.publish()
	a.mu.Unlock()
	a.stop = make(chan struct{})
	a.done = make(chan struct{})
	go a.poll(src, deb)
}

func (a *Aggregate) poll(src []carrierSource, deb []debounce) {
	defer close(a.done)
	t := time.NewTicker(a.cfg.Miimon)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		now := time.Since(start)
		changed := false
		for i, s := range src {
			up, ok := s()
			if ok && deb[i].step(up, now, a.cfg.UpDelay, a.cfg.DownDelay) {
				changed = true
			}
		}
		if changed {
			a.mu.Lock()
			for i := range deb {
				a.carrier[i] = deb[i].up
			}
			a.publish()
			a.mu.Unlock()
		}
	}
}
