package afpacket

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// TestFilter: a port with Config.Filter receives only what the classic BPF program accepts (here:
// everything but EtherType testType+1), the rejected frames never reach its ring or its counters.
func TestFilter(t *testing.T) {
	l := newLink(t)
	drop := uint32(testType + 1)
	rx := openIn(t, l.nsB, l.ifB, &Config{RetireTimeout: time.Millisecond, Filter: []BPF{
		{Code: 0x28, K: 12}, {Code: 0x15, Jt: 0, Jf: 1, K: drop}, {Code: 0x06, K: 0}, {Code: 0x06, K: 0xffffffff},
	}})
	tx := openIn(t, l.nsA, l.ifA, nil)
	pool, _ := frame.NewPool(nil)
	var frames []txFrame
	for i := 0; i < 20; i++ {
		d := testFrame(uint32(i), 64)
		if i%2 == 1 {
			d[13]++ // testType+1: filtered out
		}
		frames = append(frames, txFrame{data: d})
	}
	waitSends(t, tx, pool)
	sendFrames(t, tx, pool, frames)
	var got []uint32
	for deadline := time.Now().Add(2 * time.Second); len(got) < 10 && time.Now().Before(deadline); {
		for _, f := range recvFrames(t, rx, 1, 50*time.Millisecond) {
			if s, _ := seqOf(f.data); s != 1<<31 { // not a probe
				got = append(got, s)
			}
		}
	}
	for _, f := range recvFrames(t, rx, 1, 50*time.Millisecond) { // anything more would come now
		if s, _ := seqOf(f.data); s != 1<<31 {
			got = append(got, s)
		}
	}
	if len(got) != 10 {
		t.Fatalf("received %v, want the 10 even frames the filter accepts", got)
	}
	for _, s := range got {
		if s%2 != 0 {
			t.Fatalf("frame %d passed the filter", s)
		}
	}
	if _, err := Open(l.ifB, &Config{Filter: []BPF{{Code: 0xff}}}); err == nil {
		t.Fatal("an invalid program was accepted")
	}
}

// TestSendAfterFlap: the first batch sent after the link went down and came back leaves (the
// socket's pending ENETDOWN from the flap is read past, not taken for the link being down).
func TestSendAfterFlap(t *testing.T) {
	l := newLink(t)
	rx := openIn(t, l.nsB, l.ifB, &Config{RetireTimeout: time.Millisecond})
	tx := openIn(t, l.nsA, l.ifA, nil)
	pool, _ := frame.NewPool(nil)
	waitSends(t, tx, pool)
	l.nsA.Exec(t, "ip", "link", "set", l.ifA, "down")
	l.nsA.Exec(t, "ip", "link", "set", l.ifA, "up")
	for deadline := time.Now().Add(5 * time.Second); !tx.LinkUp(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("carrier not back")
		}
	}
	time.Sleep(100 * time.Millisecond)           // the device transmitting again (qdisc active)
	recvFrames(t, rx, 1000, 20*time.Millisecond) // drop what the probes left
	before := tx.Stats().TxDropped
	if n := sendFrames(t, tx, pool, []txFrame{{data: testFrame(1, 64)}, {data: testFrame(2, 64)}}); n != 2 {
		t.Fatalf("sent %d of 2 after the flap (dropped %d)", n, tx.Stats().TxDropped-before)
	}
	if got := recvFrames(t, rx, 2, 2*time.Second); len(got) != 2 {
		t.Fatalf("received %d of 2", len(got))
	}
}

// waitSends probes with test frames (sequence 1<<31) until the device transmits: right after
// the carrier comes up the kernel drops what is sent for a moment.
func waitSends(t *testing.T, p *Port, pool *frame.Pool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); p.Stats().TxPackets == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the port sends nothing")
		}
		sendFrames(t, p, pool, []txFrame{{data: testFrame(1<<31, 64)}})
	}
}
