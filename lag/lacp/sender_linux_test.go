package lacp

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
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

type slowRec struct {
	mu     sync.Mutex
	frames [][]byte
	member []int
}

func (r *slowRec) HandleSlow(m int, f []byte) {
	r.mu.Lock()
	r.frames = append(r.frames, append([]byte(nil), f...))
	r.member = append(r.member, m)
	r.mu.Unlock()
}

func (r *slowRec) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.frames) }

// TestSenderReceive: an AF_PACKET data port with NoSlowFilter on one end of a veth receives the
// other end's IPv4 frames but not its LACPDUs; a Sender on the same interface hands those, and
// only those, to the handler (Receive) under the member number given; Receive returns once the
// Sender is closed.
func TestSenderReceive(t *testing.T) {
	nettest.RequirePriv(t)
	nsA, nsB := nettest.NewNS(t, "rcvA"), nettest.NewNS(t, "rcvB")
	a, b := nettest.Veth(t, nsA, nsB, "a", "b")
	var s *Sender
	var data, peer *afpacket.Port
	if err := nsA.Do(func() (err error) {
		if s, err = OpenSender(a); err != nil {
			return err
		}
		if err = s.Listen(); err != nil {
			return err
		}
		data, err = afpacket.Open(a, &afpacket.Config{Filter: NoSlowFilter, RetireTimeout: time.Millisecond})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer data.Close()
	if err := nsB.Do(func() (err error) { peer, err = afpacket.Open(b, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for deadline := time.Now().Add(5 * time.Second); !peer.LinkUp() || !s.LinkUp(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("carrier not up")
		}
	}
	rec := &slowRec{}
	done := make(chan error, 1)
	go func() { done <- s.Receive(context.Background(), rec, 3) }()

	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	// The kernel takes a moment after the carrier comes up before the device transmits (the
	// first frames are dropped): probe with a frame of the local experimental EtherType until one
	// goes out.
	probe := frame.NewBatch(1)
	for deadline := time.Now().Add(5 * time.Second); peer.Stats().TxPackets == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the peer sends nothing")
		}
		pool.Alloc(probe, 1)
		probe.Frames[0].Resize(60)
		d := probe.Bytes(0)
		clear(d)
		d[0], d[12], d[13] = 0xff, 0x88, 0xb5
		peer.Send(probe)
	}
	tx := frame.NewBatch(4)
	pool.Alloc(tx, 4)
	for i := range tx.Frames {
		tx.Frames[i].Resize(FrameLen)
		d := tx.Bytes(i)
		if i%2 == 0 {
			PutLACPFrame(d, frame.MAC{2, 0, 0, 0, 0, 0xb}, &LACPDU{Actor: Info{System: frame.MAC{2, 0, 0, 0, 0, 0xb}, Port: uint16(i + 1)}})
		} else {
			clear(d)
			copy(d, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0xb, 0x08, 0x00})
			d[20] = byte(i)
		}
	}
	if n, err := peer.Send(tx); n != 4 || err != nil {
		t.Fatalf("send: %d %v %+v", n, err, peer.Stats())
	}
	rx := frame.NewBatch(8)
	var ip, slow int
	for deadline := time.Now().Add(5 * time.Second); (ip < 2 || rec.count() < 2) && time.Now().Before(deadline); {
		data.Wait(int64(50 * time.Millisecond))
		n, _ := data.Recv(rx)
		for i := 0; i < n; i++ {
			switch binary.BigEndian.Uint16(rx.Bytes(i)[12:]) {
			case 0x0800:
				ip++
			case EtherType:
				slow++
			}
		}
		rx.Free()
	}
	time.Sleep(50 * time.Millisecond) // anything more would come now
	if ip != 2 || slow != 0 || rec.count() != 2 || s.Received() != 2 {
		t.Fatalf("data port: %d IPv4, %d slow; handler %d, Received %d", ip, slow, rec.count(), s.Received())
	}
	var pdu PDU
	for i, f := range rec.frames {
		if err := DecodeFrame(f, &pdu); err != nil || pdu.LACP.Actor.Port != uint16(2*i+1) || rec.member[i] != 3 {
			t.Fatalf("handler frame %d (member %d): %v %+v", i, rec.member[i], err, pdu.LACP.Actor)
		}
	}
	s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after Close")
	}
}
