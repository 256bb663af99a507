package lacp

import (
	"testing"
	"time"
)

// TestEventsReentry: the Events callback may call Status, Usable, Up, SetLinkUp and HandleSlow
// (the machines' lock is not held while events are delivered); what it sees agrees with the event.
func TestEventsReentry(t *testing.T) {
	a, b := newSide(t, 0xa, 2, nil), newSide(t, 0xb, 2, nil)
	var mismatch []Event
	downed := false
	marker := make([]byte, FrameLen)
	PutMarkerFrame(marker, mac(0xb, 1), &Marker{RequesterPort: 1, RequesterSystem: mac(0xb, 0)})
	a.c.cfg.Events = func(e Event) {
		a.events = append(a.events, e)
		st := a.c.Status()
		_ = a.c.Up()
		if e.Kind == EventMember && e.Up && !a.c.Usable(e.Member) {
			mismatch = append(mismatch, e)
		}
		if e.Kind == EventAggregate && e.Up && !st.Up {
			mismatch = append(mismatch, e)
		}
		a.c.HandleSlow(e.Member&1, marker)
		if e.Kind == EventAggregate && e.Up && !downed {
			downed = true
			if err := a.c.SetLinkUp(1, false); err != nil {
				t.Error(err)
			}
		}
	}
	w := newWire(a, b)
	done := make(chan int, 1)
	go func() {
		done <- w.until(convergeTicks, func() bool {
			s := a.c.Status().Ports[1]
			return downed && !s.Link && a.c.Usable(0)
		})
	}()
	select {
	case n := <-done:
		if n < 0 {
			t.Fatalf("member 1 not taken down from the callback: %+v", a.c.Status())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the machines deadlocked on an Events callback")
	}
	if len(mismatch) > 0 {
		t.Fatalf("events the callback's Status/Usable disagree with: %v", mismatch)
	}
	if st := a.c.Status().Ports; st[0].Stats.MarkerRx+st[1].Stats.MarkerRx == 0 {
		t.Fatal("no marker the callback handed in was processed")
	}
}
