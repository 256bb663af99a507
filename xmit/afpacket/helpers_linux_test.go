package afpacket

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// testType is the EtherType of the frames tests send (IEEE local experimental 1).
const testType = 0x88b5

var magic = [4]byte{'w', 's', 'p', 'k'}

// link is a veth pair between two fresh namespaces, IPv6 off so that no stray frame appears.
type link struct {
	nsA, nsB *nettest.NS
	ifA, ifB string
}

func newLink(t testing.TB) *link {
	t.Helper()
	nettest.RequirePriv(t)
	l := &link{nsA: nettest.NewNS(t, "a"), nsB: nettest.NewNS(t, "b")}
	for _, ns := range []*nettest.NS{l.nsA, l.nsB} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	l.ifA, l.ifB = nettest.Veth(t, l.nsA, l.nsB, "va", "vb")
	return l
}

// txModes are the transmit paths every transmit test runs: sendmmsg (the default) and the TX ring.
var txModes = []struct {
	name string
	cfg  *Config
}{
	{"sendmmsg", nil},
	{"txring", &Config{TxRing: &TxRing{}}},
	// A small ring (batches wrap around it), PACKET_QDISC_BYPASS and PACKET_RESERVE (which the
	// kernel also checks TX slots against).
	{"txring-small-bypass-reserve", &Config{TxRing: &TxRing{Frames: 24, FrameSize: 1600}, QdiscBypass: true, Headroom: 64}},
}

// rxModes are the receive rings every receive test runs: TPACKET_V3 blocks (the default) and the
// TPACKET_V2 ring of frame slots (Config.FrameRing).
var rxModes = []struct {
	name string
	ring *FrameRing
}{
	{"blocks", nil},
	{"frames", &FrameRing{}},
}

// withRing returns a copy of c (nil: defaults) with the receive ring ring (nil: TPACKET_V3).
func withRing(ring *FrameRing, c *Config) *Config {
	var r Config
	if c != nil {
		r = *c
	}
	r.FrameRing = ring
	return &r
}

// rxTxModes are the combinations the tests of both directions run: every transmit path with the
// default receive ring, and sendmmsg with every other receive ring.
func rxTxModes(t *testing.T, test func(t *testing.T, txCfg *Config, ring *FrameRing)) {
	for _, m := range txModes {
		for _, r := range rxModes {
			if m.cfg != nil && r.ring != nil {
				continue
			}
			t.Run("tx="+m.name+"/rx="+r.name, func(t *testing.T) { test(t, m.cfg, r.ring) })
		}
	}
}

func openIn(t testing.TB, ns *nettest.NS, ifname string, cfg *Config) *Port {
	t.Helper()
	var p *Port
	if err := ns.Do(func() (err error) { p, err = Open(ifname, cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// testFrame builds an untagged frame of n bytes (n >= 22): MACs, testType, magic, seq, a pattern.
func testFrame(seq uint32, n int) []byte {
	b := make([]byte, n)
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], testType)
	copy(b[14:18], magic[:])
	binary.BigEndian.PutUint32(b[18:22], seq)
	for i := 22; i < n; i++ {
		b[i] = byte(int(seq)*7 + i)
	}
	return b
}

// tagged inserts an 802.1Q/802.1ad tag after the MACs.
func tagged(b []byte, tpid, tci uint16) []byte {
	out := make([]byte, 0, len(b)+4)
	out = append(out, b[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, b[12:]...)
}

// seqOf returns the sequence number of a test frame (untagged bytes), or false for a stray frame.
func seqOf(b []byte) (uint32, bool) {
	for len(b) >= 18 && (binary.BigEndian.Uint16(b[12:14]) == 0x8100 || binary.BigEndian.Uint16(b[12:14]) == 0x88a8) {
		b = append(append([]byte(nil), b[:12]...), b[16:]...)
	}
	if len(b) < 22 || binary.BigEndian.Uint16(b[12:14]) != testType || !bytes.Equal(b[14:18], magic[:]) {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[18:22]), true
}

// fill puts frames into a batch from pool, each with optional out-of-band tag.
type txFrame struct {
	data      []byte
	tpid, tci uint16
	oob       bool
}

func sendFrames(t testing.TB, p *Port, pool *frame.Pool, frames []txFrame) int {
	t.Helper()
	sent := 0
	for len(frames) > 0 {
		b := frame.NewBatch(64)
		n, _ := pool.Alloc(b, min(len(frames), 64))
		if n == 0 {
			t.Fatal("pool exhausted")
		}
		for i := 0; i < n; i++ {
			f := &b.Frames[i]
			if !f.Resize(len(frames[i].data)) {
				t.Fatalf("frame of %d bytes does not fit the pool", len(frames[i].data))
			}
			copy(b.Bytes(i), frames[i].data)
			if frames[i].oob {
				f.Flags |= frame.FlagVLAN
				f.TPID, f.TCI = frames[i].tpid, frames[i].tci
			}
		}
		k, err := p.Send(b)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if b.Len() != 0 {
			t.Fatal("Send left frames in the batch")
		}
		sent += k
		frames = frames[n:]
	}
	return sent
}

// rxFrame is a received frame copied out, with its out-of-band tag.
type rxFrame struct {
	data  []byte
	flags frame.Flags
	tpid  uint16
	tci   uint16
	head  uint16
	tail  uint16
}

// recvFrames receives until want test frames arrived or the deadline passes; stray frames are skipped.
func recvFrames(t testing.TB, p *Port, want int, d time.Duration) []rxFrame {
	t.Helper()
	var got []rxFrame
	b := frame.NewBatch(32)
	deadline := time.Now().Add(d)
	for len(got) < want && time.Now().Before(deadline) {
		n, err := p.Recv(b)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if n == 0 {
			if err := p.Wait(int64(10 * time.Millisecond)); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			continue
		}
		for i := range b.Frames {
			f := &b.Frames[i]
			if _, ok := seqOf(b.Bytes(i)); !ok {
				continue
			}
			got = append(got, rxFrame{append([]byte(nil), b.Bytes(i)...), f.Flags, f.TPID, f.TCI, f.Head, f.Tail})
		}
		b.Free()
	}
	return got
}

func diff(a, b []byte) string {
	if len(a) != len(b) {
		return fmt.Sprintf("length %d, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("byte %d is %#x, want %#x", i, a[i], b[i])
		}
	}
	return ""
}
