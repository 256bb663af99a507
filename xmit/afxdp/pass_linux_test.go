package afxdp

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

// TestPassEtherType: with Config.PassEtherType the XDP program hands untagged frames of that
// EtherType to the kernel, where a packet socket bound to it on the port's interface receives
// them, and the port never sees them; the other frames, a tagged frame of that EtherType among
// them, reach the port. A second port on the interface asking for another EtherType is refused.
func TestPassEtherType(t *testing.T) {
	const slow = 0x8809
	pr := newPair(t, 0)
	p := pr.open(t, &Config{PassEtherType: slow})
	raw := pr.raw(t)

	// A socket on the b end bound to the slow protocols' EtherType: the kernel's path.
	var fd int
	err := pr.b.Do(func() error {
		ifi, err := net.InterfaceByName(pr.vb)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(slow))); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(slow), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	slowFrame := func(seq byte) []byte {
		f := testFrame(60, uint32(seq))
		binary.BigEndian.PutUint16(f[12:], slow)
		f[14] = 0x01 // LACP subtype
		f[15] = seq
		return f
	}
	for i := range 3 {
		raw.send(t, testFrame(60, uint32(i)))
		raw.send(t, slowFrame(byte(i)))
	}
	tagged := testFrame(64, 9, 100) // 802.1Q, then the test EtherType: the port's
	raw.send(t, tagged)

	all := recvAll(t, p, 500*time.Millisecond)
	var got int
	for _, f := range all {
		if binary.BigEndian.Uint16(f[12:]) == slow {
			t.Fatalf("the port received a slow-protocols frame: %x", f)
		}
		if isTest(f) {
			got++
		}
	}
	if got != 4 {
		t.Fatalf("the port received %d test frames, want 4", got)
	}
	tv := unix.NsecToTimeval(int64(time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 2048)
	for i := range 3 {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("slow frame %d: the kernel's socket: %v", i, err)
		}
		if n < 16 || binary.BigEndian.Uint16(buf[12:]) != slow || buf[15] != byte(i) {
			t.Fatalf("slow frame %d: the kernel's socket got %x", i, buf[:n])
		}
	}

	err = pr.b.Do(func() error {
		q, err := Open(pr.vb, 0, &Config{PassEtherType: 0x88cc})
		if err == nil {
			q.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "EtherType") {
		t.Fatalf("a second port asking for another EtherType: %v, want it refused", err)
	}
}

// recvAll receives every frame that arrives on p within d, whatever its EtherType, copied out.
func recvAll(t *testing.T, p *Port, d time.Duration) [][]byte {
	t.Helper()
	b := frame.NewBatch(64)
	var out [][]byte
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		n, err := p.Recv(b)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if n == 0 {
			p.Wait(int64(10 * time.Millisecond))
			continue
		}
		for i := range n {
			out = append(out, bytes.Clone(b.Bytes(i)))
		}
		b.Free()
	}
	return out
}
