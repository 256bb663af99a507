package afxdp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
	"github.com/wirespeed/wirespeed/xmit/afxdp"
)

// TestExampleForward runs Example's code, openForward and forward, between two veths of a
// namespace of its own: a --ri [forward] ro-- c, with AF_PACKET ports at a and c. Every frame sent
// on a arrives at c unchanged and without a copy, closing the ingress port ends forward with
// xmit.ErrClosed, and every chunk of the UMEM comes back.
func TestExampleForward(t *testing.T) {
	nettest.RequirePriv(t)
	a, r, c := nettest.NewNS(t, "ea"), nettest.NewNS(t, "er"), nettest.NewNS(t, "ec")
	for _, ns := range []*nettest.NS{a, r, c} { // no IPv6: no frame but the test's
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	va, ri := nettest.Veth(t, a, r, "va", "ri")
	ro, vc := nettest.Veth(t, r, c, "ro", "vc")
	u, err := afxdp.NewUMEM(&afxdp.UMEMConfig{Frames: 8192})
	if err != nil {
		t.Fatal(err)
	}
	var in, out *afxdp.Port
	var src, dst *afpacket.Port
	open := func(ns *nettest.NS, fn func() error) {
		t.Helper()
		if err := ns.Do(fn); err != nil {
			t.Fatal(err)
		}
	}
	open(r, func() (err error) { in, out, err = openForward(u, ri, ro); return err })
	open(a, func() (err error) { src, err = afpacket.Open(va, nil); return err })
	defer src.Close()
	open(c, func() (err error) { dst, err = afpacket.Open(vc, nil); return err })
	defer dst.Close()
	for start := time.Now(); !(src.LinkUp() && out.LinkUp()) && time.Since(start) < 3*time.Second; {
		time.Sleep(5 * time.Millisecond) // carrier reaches the operstate through linkwatch
	}
	done := make(chan error, 1)
	go func() { done <- forward(in, out) }()

	const n = 200
	frameOf := func(i int) []byte {
		f := make([]byte, 60+i)
		copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
		binary.BigEndian.PutUint32(f[14:], uint32(i))
		for j := 18; j < len(f); j++ {
			f[j] = byte(i + j)
		}
		return f
	}
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(50)
	for i := 0; i < n; i += 50 {
		pool.Alloc(b, 50)
		for j := range b.Frames {
			f := frameOf(i + j)
			b.Frames[j].Resize(len(f))
			copy(b.Bytes(j), f)
		}
		if k, err := src.Send(b); k != 50 || err != nil {
			t.Fatalf("Send = %d, %v", k, err)
		}
	}
	got := 0
	rb := frame.NewBatch(64)
	for deadline := time.Now().Add(3 * time.Second); got < n && time.Now().Before(deadline); {
		k, err := dst.Recv(rb)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			dst.Wait(int64(10 * time.Millisecond))
			continue
		}
		for i := range rb.Frames {
			if want := frameOf(got); !bytes.Equal(rb.Bytes(i), want) {
				t.Fatalf("frame %d: %x\nwant %x", got, rb.Bytes(i), want)
			}
			got++
		}
		rb.Free()
	}
	if got != n {
		t.Fatalf("%d of %d frames forwarded (in %+v, out %+v)", got, n, in.Stats(), out.Stats())
	}
	in.Close()
	select {
	case err := <-done:
		if !errors.Is(err, xmit.ErrClosed) {
			t.Fatalf("forward returned %v, want xmit.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("forward did not return after in.Close")
	}
	s := out.Stats()
	out.Close()
	if s.TxPackets != n || s.TxDropped != 0 || s.TxCopied != 0 {
		t.Fatalf("egress %+v", s)
	}
	if acct := u.Accounting(); acct.Free != acct.Total {
		t.Fatalf("after closing both ports: %+v", acct)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
}
