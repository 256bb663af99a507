package ifstats

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"golang.org/x/sys/unix"
)

// newLinkMsg builds the messages of an RTM_NEWLINK answer: an nlmsghdr with seq, an ifinfomsg with
// flags, an attribute of another type and an IFLA_STATS64 of k counters (counter i = 1000+i).
func newLinkMsg(seq, flags uint32, k int) []byte {
	var b []byte
	b = binary.NativeEndian.AppendUint32(b, 0) // length, set below
	b = binary.NativeEndian.AppendUint16(b, unix.RTM_NEWLINK)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint32(b, seq)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = append(b, make([]byte, unix.SizeofIfInfomsg)...)
	binary.NativeEndian.PutUint32(b[unix.NLMSG_HDRLEN+8:], flags)
	b = binary.NativeEndian.AppendUint16(b, 4+5) // IFLA_IFNAME "veth", padded to 12
	b = binary.NativeEndian.AppendUint16(b, unix.IFLA_IFNAME)
	b = append(b, 'v', 'e', 't', 'h', 0, 0, 0, 0)
	b = binary.NativeEndian.AppendUint16(b, uint16(4+8*k))
	b = binary.NativeEndian.AppendUint16(b, unix.IFLA_STATS64)
	for i := range k {
		b = binary.NativeEndian.AppendUint64(b, uint64(1000+i))
	}
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	return b
}

func TestParse(t *testing.T) {
	c := &Conn{seq: 7}
	for _, k := range []int{23, 24, 25, 26} { // older and newer kernels' struct sizes
		msg := append(newLinkMsg(6, 0, 25), newLinkMsg(7, unix.IFF_UP|unix.IFF_LOWER_UP, k)...) // a stale answer first
		l, done, err := c.parse(msg)
		if err != nil || !done {
			t.Fatalf("%d counters: done %v, %v", k, done, err)
		}
		if l.Flags != unix.IFF_UP|unix.IFF_LOWER_UP {
			t.Fatalf("%d counters: flags %#x", k, l.Flags)
		}
		f := l.Counters.fields()
		for i := range f {
			want := uint64(1000 + i)
			if i >= k {
				want = 0
			}
			if f[i] != want {
				t.Fatalf("%d counters: counter %d = %d, want %d", k, i, f[i], want)
			}
		}
		if l.Counters.RxDropped != 1006 || l.Counters.TxDropped != 1007 || l.Counters.RxMissedErrors != 1015 {
			t.Fatalf("fields out of order: %+v", l.Counters)
		}
	}
	if _, done, _ := c.parse(newLinkMsg(5, 0, 25)); done {
		t.Fatal("took the answer to another request")
	}
	errMsg := newLinkMsg(7, 0, 0)[:unix.NLMSG_HDRLEN+4]
	binary.NativeEndian.PutUint32(errMsg, uint32(len(errMsg)))
	binary.NativeEndian.PutUint16(errMsg[4:], unix.NLMSG_ERROR)
	e := -int32(unix.ENODEV)
	binary.NativeEndian.PutUint32(errMsg[unix.NLMSG_HDRLEN:], uint32(e))
	if _, _, err := c.parse(errMsg); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("error answer: %v", err)
	}
	for n := range len(newLinkMsg(7, 0, 25)) { // truncated anywhere: an error or nothing, never a panic
		c.parse(newLinkMsg(7, 0, 25)[:n])
	}
}

func FuzzParse(f *testing.F) {
	f.Add(newLinkMsg(1, 0, 25))
	f.Add(newLinkMsg(1, unix.IFF_UP, 3))
	f.Add(append(newLinkMsg(0, 0, 1), newLinkMsg(1, 0, 24)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &Conn{seq: 1}
		c.parse(b)
	})
}

func TestAddTo(t *testing.T) {
	var s xmit.Stats
	Counters{RxDropped: 1, RxMissedErrors: 2, RxErrors: 4, TxDropped: 8, TxErrors: 16, RxFIFOErrors: 32}.AddTo(&s)
	if s != (xmit.Stats{KernelRxDropped: 3, KernelRxErrors: 4, KernelTxDropped: 8, KernelTxErrors: 16}) {
		t.Fatalf("AddTo: %+v", s)
	}
}

// sysStat reads /sys/class/net/<ifname>/statistics/<name> as the namespace sees it.
func sysStat(t *testing.T, ns *nettest.NS, ifname, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+ifname+"/statistics/"+name)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTrack reads a veth in another namespace: frames of an EtherType nothing handles are dropped by
// the receiving interface (rx_dropped), and the tracker counts exactly what sysfs shows.
func TestTrack(t *testing.T) {
	nettest.RequirePriv(t)
	a, b := nettest.NewNS(t, "ia"), nettest.NewNS(t, "ib")
	va, vb := nettest.Veth(t, a, b, "va", "vb")
	var tr *Tracker
	var ifindex int
	err := b.Do(func() error {
		ifi, err := net.InterfaceByName(vb)
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		tr, err = Track(ifi.Index, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var fd int
	var sa unix.SockaddrLinklayer
	err = a.Do(func() error {
		ifi, err := net.InterfaceByName(va)
		if err != nil {
			return err
		}
		sa.Ifindex, sa.Halen = ifi.Index, 6
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	before := sysStat(t, b, vb, "rx_dropped")
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	const n = 25
	for range n {
		if err := unix.Sendto(fd, f, 0, &sa); err != nil {
			t.Fatal(err)
		}
	}
	var c Counters
	for range 100 { // the receiving side runs in softirq: wait for the drops to be counted
		if c, _, err = tr.Counters(); err != nil || c.RxDropped >= n {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10e6}, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	after := sysStat(t, b, vb, "rx_dropped")
	if c.RxDropped != after-before || c.RxDropped < n || c.RxPackets < n {
		t.Fatalf("tracker: rx_dropped %d, rx_packets %d; sysfs rx_dropped went from %d to %d for %d frames", c.RxDropped, c.RxPackets, before, after, n)
	}
	var l Link
	err = b.Do(func() error {
		conn, err := Dial()
		if err != nil {
			return err
		}
		defer conn.Close()
		l, err = conn.Get(ifindex)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Flags&(unix.IFF_UP|unix.IFF_LOWER_UP) != unix.IFF_UP|unix.IFF_LOWER_UP {
		t.Fatalf("flags %#x: not up with a carrier", l.Flags)
	}
	if _, err := conn0(t).Get(ifindex + 1000); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("a missing interface: %v, want ENODEV", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if c2, fresh, _ := tr.Counters(); fresh || c2.RxDropped < c.RxDropped {
		t.Fatalf("after Close: %+v (fresh %v)", c2, fresh)
	}
}

func conn0(t *testing.T) *Conn {
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
