package afxdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"golang.org/x/sys/unix"
)

// testEtherType marks the frames a test sends (IEEE local experimental); everything else the kernel
// may put on the link (IPv6 router solicitations, ...) is ignored.
const testEtherType = 0x88b5

// pair is two namespaces joined by a veth: the AF_XDP port sits on b, a raw AF_PACKET socket on a.
type pair struct {
	a, b   *nettest.NS
	va, vb string
}

func newPair(t *testing.T, mtu int) *pair {
	t.Helper()
	nettest.RequirePriv(t)
	p := &pair{a: nettest.NewNS(t, "xa"), b: nettest.NewNS(t, "xb")}
	p.va, p.vb = nettest.Veth(t, p.a, p.b, "va", "vb")
	if mtu > 0 {
		p.a.Exec(t, "ip", "link", "set", p.va, "mtu", fmt.Sprint(mtu))
		p.b.Exec(t, "ip", "link", "set", p.vb, "mtu", fmt.Sprint(mtu))
	}
	return p
}

func (p *pair) open(t *testing.T, cfg *Config) *Port {
	t.Helper()
	var port *Port
	err := p.b.Do(func() (err error) {
		port, err = Open(p.vb, 0, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { port.Close() })
	return port
}

// rawSock is an AF_PACKET socket on the a end.
type rawSock struct {
	fd      int
	ifindex int
}

func (p *pair) raw(t *testing.T) *rawSock {
	t.Helper()
	var r rawSock
	err := p.a.Do(func() error {
		ifi, err := net.InterfaceByName(p.va)
		if err != nil {
			return err
		}
		r.ifindex = ifi.Index
		proto := int(htons(unix.ETH_P_ALL))
		r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			return err
		}
		unix.SetsockoptInt(r.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		return unix.Bind(r.fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatalf("raw socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(r.fd) })
	return &r
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (r *rawSock) send(t *testing.T, f []byte) {
	t.Helper()
	if err := unix.Sendto(r.fd, f, 0, &unix.SockaddrLinklayer{Ifindex: r.ifindex, Halen: 6}); err != nil {
		t.Fatalf("sendto %d bytes: %v", len(f), err)
	}
}

// recv returns the next test frame (tags the kernel took out of band put back) or nil after the
// timeout.
func (r *rawSock) recv(t *testing.T, timeout time.Duration) []byte {
	t.Helper()
	buf := make([]byte, 16384)
	oob := make([]byte, 256)
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		tv := unix.NsecToTimeval(left.Nanoseconds())
		unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		n, oobn, _, from, err := unix.Recvmsg(r.fd, buf, oob, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("recvmsg: %v", err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		f := append([]byte(nil), buf[:n]...)
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < int(unsafe.Sizeof(unix.TpacketAuxdata{})) {
				continue
			}
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
			if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 && len(f) >= 12 {
				tpid := aux.Vlan_tpid
				if tpid == 0 {
					tpid = 0x8100
				}
				tag := make([]byte, 4)
				binary.BigEndian.PutUint16(tag, tpid)
				binary.BigEndian.PutUint16(tag[2:], aux.Vlan_tci)
				f = append(f[:12:12], append(tag, f[12:]...)...)
			}
		}
		if isTest(f) {
			return f
		}
	}
}

// testFrame builds a frame of n bytes (n >= 14): broadcast destination, a fixed source, optional
// 802.1Q tags, the test EtherType, then seq and a pattern derived from it.
func testFrame(n int, seq uint32, tags ...uint16) []byte {
	f := make([]byte, n)
	for i := 0; i < 6; i++ {
		f[i] = 0xff
	}
	copy(f[6:], []byte{0x02, 0x57, 0x53, 0, 0, 1})
	o := 12
	for _, vid := range tags {
		if o+4 > n-2 {
			break
		}
		binary.BigEndian.PutUint16(f[o:], 0x8100)
		binary.BigEndian.PutUint16(f[o+2:], vid)
		o += 4
	}
	binary.BigEndian.PutUint16(f[o:], testEtherType)
	o += 2
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	for i := o; i < n; i++ {
		if i-o < 4 {
			f[i] = s[i-o]
		} else {
			f[i] = byte(uint32(i)*7 + seq)
		}
	}
	return f
}

// isTest reports whether f carries the test EtherType (behind up to two tags).
func isTest(f []byte) bool {
	o := 12
	for k := 0; k < 3 && o+2 <= len(f); k++ {
		et := binary.BigEndian.Uint16(f[o:])
		if et == testEtherType {
			return true
		}
		if et != 0x8100 && et != 0x88a8 {
			return false
		}
		o += 4
	}
	return false
}

// recvXDP receives until want frames of the test arrived or the timeout passed, copying them out
// and releasing the batches.
func recvXDP(t *testing.T, p *Port, want int, timeout time.Duration) [][]byte {
	t.Helper()
	b := frame.NewBatch(64)
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		n, err := p.Recv(b)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if n == 0 {
			p.Wait(int64(10 * time.Millisecond))
			continue
		}
		for i := 0; i < n; i++ {
			if d := b.Bytes(i); isTest(d) {
				got = append(got, bytes.Clone(d))
			}
		}
		b.Free()
	}
	return got
}

func checkAcct(t *testing.T, u *UMEM) {
	t.Helper()
	if err := u.Verify(); err != nil {
		t.Fatal(err)
	}
	if a := u.Accounting(); a.Sum() != a.Total {
		t.Fatalf("accounting %+v adds up to %d, not %d", a, a.Sum(), a.Total)
	}
}

// kernelAtLeast reports whether the running kernel's release is at least major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}
