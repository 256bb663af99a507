package afpacket

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// TestPartialChecksumCompleted: UDP that a Linux stack sends on a veth leaves its checksum to the
// "hardware" (CHECKSUM_PARTIAL); the port on the far end fills it in, so what Recv hands out has a
// valid checksum, as a NIC would have sent it.
func TestPartialChecksumCompleted(t *testing.T) {
	for _, r := range rxModes {
		t.Run("rx="+r.name, func(t *testing.T) { testPartialChecksumCompleted(t, r.ring) })
	}
}

func testPartialChecksumCompleted(t *testing.T, ring *FrameRing) {
	l := newLink(t)
	l.nsA.Exec(t, "ip", "addr", "add", "10.9.0.1/24", "dev", l.ifA)
	macB := strings.TrimSpace(l.nsB.Exec(t, "cat", "/sys/class/net/"+l.ifB+"/address"))
	l.nsA.Exec(t, "ip", "neigh", "replace", "10.9.0.2", "lladdr", macB, "nud", "permanent", "dev", l.ifA)
	if o := l.nsA.Exec(t, "ethtool", "-k", l.ifA); !strings.Contains(o, "tx-checksum-ip-generic: on") {
		t.Skipf("%s does not offload transmit checksums:\n%s", l.ifA, o)
	}
	p := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	if err := l.nsA.Do(func() error {
		c, err := net.Dial("udp4", "10.9.0.2:9999")
		if err != nil {
			return err
		}
		defer c.Close()
		for i := range 5 {
			if _, err := c.Write([]byte(strings.Repeat("wirespeed", 10+i))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(32)
	got := 0
	for deadline := time.Now().Add(3 * time.Second); got < 5 && time.Now().Before(deadline); {
		if n, _ := p.Recv(b); n == 0 {
			p.Wait(int64(10 * time.Millisecond))
			continue
		}
		for i := range b.Frames {
			d := b.Bytes(i)
			if len(d) < 42 || binary.BigEndian.Uint16(d[12:]) != frame.TypeIPv4 || d[23] != frame.ProtoUDP {
				continue
			}
			got++
			if !udpChecksumOK(d[14:]) {
				t.Errorf("UDP checksum %#04x does not verify (flags %#x)", binary.BigEndian.Uint16(d[40:]), b.Frames[i].Flags)
			}
			if b.Frames[i].Flags&frame.FlagCsumPartial != 0 {
				t.Errorf("FlagCsumPartial left on a completed frame")
			}
		}
		b.Free()
	}
	if got != 5 {
		t.Fatalf("received %d of 5 datagrams", got)
	}
}

// udpChecksumOK verifies an IPv4 packet's UDP checksum over the pseudo-header, by hand.
func udpChecksumOK(ip []byte) bool {
	hl := int(ip[0]&15) * 4
	u := ip[hl:]
	n := int(binary.BigEndian.Uint16(u[4:]))
	sum := 0
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += int(b[i])<<8 | int(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += int(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	sum += frame.ProtoUDP + n
	add(u[:n])
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return sum == 0xffff
}
