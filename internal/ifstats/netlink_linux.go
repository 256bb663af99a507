package ifstats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var ne = binary.NativeEndian

// ErrMalformed is returned when the kernel's answer cannot be parsed.
var ErrMalformed = errors.New("ifstats: malformed rtnetlink message")

// Link is one interface's flags and counters as the kernel reports them.
type Link struct {
	Flags    uint32 // ifi_flags: unix.IFF_UP, IFF_RUNNING, IFF_LOWER_UP (the carrier), ...
	Counters Counters
}

const (
	reqLen    = unix.NLMSG_HDRLEN + unix.SizeofIfInfomsg
	rtaHdrLen = 4
)

// Conn is an rtnetlink socket in the network namespace of the thread that dialled it. It is not
// safe for concurrent use (Tracker serialises its calls).
type Conn struct {
	fd  int
	seq uint32
	req [reqLen]byte
	buf []byte
}

// Dial opens an rtnetlink socket. It needs no privilege.
func Dial() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("ifstats: %w", os.NewSyscallError("socket(AF_NETLINK)", err))
	}
	if err := unix.Connect(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ifstats: %w", os.NewSyscallError("connect(AF_NETLINK)", err))
	}
	// The kernel answers a request while it is being sent; the timeout only guards against a
	// reply that never comes.
	tv := unix.Timeval{Sec: 1}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return &Conn{fd: fd, buf: make([]byte, 16<<10)}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return unix.Close(c.fd) }

// Get reads the flags and counters of the interface with index ifindex (one RTM_GETLINK request
// and its answer; no allocation unless the answer outgrows the buffer).
func (c *Conn) Get(ifindex int) (Link, error) {
	c.seq++
	r := c.req[:]
	clear(r)
	ne.PutUint32(r[0:], reqLen)
	ne.PutUint16(r[4:], unix.RTM_GETLINK)
	ne.PutUint16(r[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(r[8:], c.seq)
	ne.PutUint32(r[unix.NLMSG_HDRLEN+4:], uint32(int32(ifindex))) // ifinfomsg.ifi_index
	for {
		_, err := unix.Write(c.fd, r)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Link{}, fmt.Errorf("ifstats: %w", os.NewSyscallError("write(RTM_GETLINK)", err))
		}
		break
	}
	for {
		n, err := c.recv()
		if err != nil {
			return Link{}, err
		}
		l, done, err := c.parse(c.buf[:n])
		if done || err != nil {
			return l, err
		}
	}
}

// recv reads one datagram whole, growing the buffer if the kernel's answer does not fit.
func (c *Conn) recv() (int, error) {
	for {
		b := c.buf
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			unix.MSG_PEEK|unix.MSG_TRUNC, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, fmt.Errorf("ifstats: %w", os.NewSyscallError("recvfrom(AF_NETLINK)", e))
		}
		if int(r) > len(b) {
			c.buf = make([]byte, int(r)+4096)
			continue
		}
		n, err := unix.Read(c.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("ifstats: %w", os.NewSyscallError("read(AF_NETLINK)", err))
		}
		return n, nil
	}
}

// parse looks for the answer to the current request among the messages of b.
func (c *Conn) parse(b []byte) (l Link, done bool, err error) {
	for len(b) >= unix.NLMSG_HDRLEN {
		ml := int(ne.Uint32(b[0:]))
		if ml < unix.NLMSG_HDRLEN || ml > len(b) {
			return Link{}, true, ErrMalformed
		}
		typ, seq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		msg := b[unix.NLMSG_HDRLEN:ml]
		b = b[min(len(b), (ml+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
		if seq != c.seq {
			continue // the answer to an earlier request that gave up
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(msg) < 4 {
				return Link{}, true, ErrMalformed
			}
			if e := -int32(ne.Uint32(msg)); e != 0 {
				return Link{}, true, fmt.Errorf("ifstats: RTM_GETLINK: %w", unix.Errno(e))
			}
			return Link{}, true, ErrMalformed // an acknowledgement without the link
		case unix.RTM_NEWLINK:
			l, err := parseLink(msg)
			return l, true, err
		}
	}
	return Link{}, false, nil
}

// parseLink reads an ifinfomsg and its IFLA_STATS64 attribute.
func parseLink(m []byte) (Link, error) {
	if len(m) < unix.SizeofIfInfomsg {
		return Link{}, ErrMalformed
	}
	l := Link{Flags: ne.Uint32(m[8:])}
	a := m[unix.SizeofIfInfomsg:]
	for len(a) >= rtaHdrLen {
		al, at := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
		if al < rtaHdrLen || al > len(a) {
			return Link{}, ErrMalformed
		}
		if at&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == unix.IFLA_STATS64 {
			v := a[rtaHdrLen:al]
			f := l.Counters.fields()
			for i := 0; i < len(f) && 8*i+8 <= len(v); i++ {
				f[i] = ne.Uint64(v[8*i:])
			}
		}
		a = a[min(len(a), (al+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	}
	return l, nil
}

// Tracker counts an interface's kernel counters from the moment it starts, reading them at most
// once per interval. It is safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	conn    *Conn
	ifindex int
	every   time.Duration
	at      time.Time // of the last reading
	acc     accumulator
}

// Track dials a socket (in the network namespace of the calling thread) and takes the first
// reading of the interface ifindex, from which the counts start.
func Track(ifindex int, every time.Duration) (*Tracker, error) {
	c, err := Dial()
	if err != nil {
		return nil, err
	}
	l, err := c.Get(ifindex)
	if err != nil {
		c.Close()
		return nil, err
	}
	t := &Tracker{conn: c, ifindex: ifindex, every: every, at: time.Now()}
	t.acc.start(l.Counters)
	return t, nil
}

// Counters returns the counts since Track. It reads the kernel's counters first when the last
// reading is at least the interval old (and the tracker is not closed); fresh reports whether it did
// and err why a reading failed (the counts are then those of the last reading).
func (t *Tracker) Counters() (c Counters, fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil && time.Since(t.at) >= t.every {
		fresh, err = t.readLocked()
	}
	return t.acc.sum, fresh, err
}

func (t *Tracker) readLocked() (bool, error) {
	t.at = time.Now()
	l, err := t.conn.Get(t.ifindex)
	if err != nil {
		return false, err
	}
	t.acc.add(l.Counters)
	return true, nil
}

// Close takes a last reading and closes the socket; Counters then returns the final counts.
// Closing twice is harmless.
func (t *Tracker) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == nil {
		return nil
	}
	_, err := t.readLocked()
	t.conn.Close()
	t.conn = nil
	return err
}
