package lacp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestSender: a Sender on one end of a veth sends an LACPDU the other end receives, receives
// nothing itself, reports the carrier and the interface's MAC, and joins the slow-protocols
// multicast group while open.
func TestSender(t *testing.T) {
	nettest.RequirePriv(t)
	nsA, nsB := nettest.NewNS(t, "sndA"), nettest.NewNS(t, "sndB")
	a, b := nettest.Veth(t, nsA, nsB, "a", "b")
	var s *Sender
	var peer *afpacket.Port
	if err := nsA.Do(func() (err error) { s, err = OpenSender(a); return err }); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := nsB.Do(func() (err error) { peer, err = afpacket.Open(b, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if out := nsA.Exec(t, "ip", "maddr", "show", "dev", a); !strings.Contains(out, "01:80:c2:00:00:02") {
		t.Fatalf("multicast address not joined:\n%s", out)
	}
	for deadline := time.Now().Add(5 * time.Second); !s.LinkUp(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("carrier not up")
		}
	}
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8})
	tx := frame.NewBatch(1)
	pool.Alloc(tx, 1)
	tx.Frames[0].Resize(FrameLen)
	PutLACPFrame(tx.Bytes(0), s.MAC(), &LACPDU{Actor: Info{System: s.MAC(), Port: 1, State: StateActivity}})
	if n, err := s.Send(tx); n != 1 || err != nil {
		t.Fatalf("send: %d %v", n, err)
	}
	rx := frame.NewBatch(8)
	var got PDU
	for deadline := time.Now().Add(5 * time.Second); ; {
		peer.Wait(int64(100 * time.Millisecond))
		n, _ := peer.Recv(rx)
		for i := 0; i < n; i++ {
			if DecodeFrame(rx.Bytes(i), &got) == nil {
				break
			}
		}
		rx.Free()
		if got.Subtype == SubtypeLACP || time.Now().After(deadline) {
			break
		}
	}
	if got.Subtype != SubtypeLACP || got.Src != s.MAC() || got.LACP.Actor.Port != 1 {
		t.Fatalf("peer got %+v", got)
	}
	if n, err := s.Recv(rx); n != 0 || err != nil {
		t.Fatalf("Recv: %d %v", n, err)
	}
	if st := s.Stats(); st.TxPackets != 1 || st.TxBytes != FrameLen {
		t.Fatalf("stats %+v", st)
	}
	nsA.Exec(t, "ip", "link", "set", a, "down")
	if s.LinkUp() {
		t.Fatal("carrier up with the link down")
	}
	s.Close()
	if _, err := s.Recv(rx); !errors.Is(err, xmit.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := OpenSender("wsnosuchif0"); !errors.Is(err, xmit.ErrNoInterface) {
		t.Fatalf("missing interface: %v", err)
	}
}
