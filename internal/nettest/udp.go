package nettest

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// SendUDP sends one datagram to port 9999 of each address from ns, from source port srcPort (0:
// any), paced (a millisecond's pause every 32) so that no queue on the way overflows. With a fixed
// srcPort every call sends the same flows.
func SendUDP(t testing.TB, ns *NS, srcPort int, dsts []netip.Addr) {
	t.Helper()
	if err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: srcPort})
		if err != nil {
			return err
		}
		defer c.Close()
		for i, a := range dsts {
			if _, err := c.WriteToUDPAddrPort([]byte("wirespeed"), netip.AddrPortFrom(a, 9999)); err != nil {
				return err
			}
			if i%32 == 31 {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Settle waits until f's value has not changed for 300 ms (at most 20 s) and returns it.
func Settle(f func() int) int {
	last, since := f(), time.Now()
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		if v := f(); v != last {
			last, since = v, time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			break
		}
	}
	return last
}
