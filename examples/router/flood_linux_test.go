package main

import (
	"encoding/binary"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestARPFlood: a host floods the router with ARP requests for its address from random senders of
// its /16 (10,000 a second for 3 s) and with bogus replies claiming the far host's address, while
// pinging through it. Forwarding goes on, the neighbour table stays within its limit (1024
// entries) and counts what it refused, the far host's entry keeps its MAC, and every frame adds
// up.
func TestARPFlood(t *testing.T) {
	nettest.RequirePriv(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	h1, rtr, h2 := nettest.NewNS(t, "h1"), nettest.NewNS(t, "rtr"), nettest.NewNS(t, "h2")
	r0, e1 := nettest.Veth(t, rtr, h1, "r0", "h1e")
	r1, e2 := nettest.Veth(t, rtr, h2, "r1", "h2e")
	for _, ns := range []*nettest.NS{h1, rtr, h2} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	h1.Exec(t, "ethtool", "-K", e1, "tx", "off")
	h2.Exec(t, "ethtool", "-K", e2, "tx", "off")
	e2MAC := strings.TrimSpace(h2.Exec(t, "cat", "/sys/class/net/"+e2+"/address"))
	r0MAC := strings.TrimSpace(rtr.Exec(t, "cat", "/sys/class/net/"+r0+"/address"))
	h1.Exec(t, "ip", "addr", "add", "10.1.0.2/16", "dev", e1)
	h1.Exec(t, "ip", "route", "add", "default", "via", "10.1.0.1")
	h2.Exec(t, "ip", "addr", "add", "10.0.2.2/24", "dev", e2)
	h2.Exec(t, "ip", "route", "add", "default", "via", "10.0.2.1")

	rt := startRouter(t, rtr, "-backend", "afpacket", "-port", r0+",10.1.0.1/16", "-port", r1+",10.0.2.1/24")

	// The flood, from h1's side by a packet socket: requests for 10.1.0.1 from random senders, and
	// every tenth frame a reply that claims 10.0.2.2 is at a bogus MAC.
	var flooder *afpacket.Port
	if err := h1.Do(func() (err error) { flooder, err = afpacket.Open(e1, nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer flooder.Close()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	hw, _ := strconv.ParseUint(strings.ReplaceAll(r0MAC, ":", ""), 16, 64)
	var rmac frame.MAC
	for i := range rmac {
		rmac[i] = byte(hw >> (40 - 8*i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	floodDone := make(chan int)
	go func() {
		sent := 0
		b := frame.NewBatch(100)
		for tick := 0; tick < 300; tick++ { // 100 frames every 10 ms for 3 s
			n, _ := pool.Alloc(b, 100)
			for i := 0; i < n; i++ {
				b.Frames[i].Resize(60)
				d := b.Bytes(i)
				clear(d)
				src := frame.MAC{0x02, 0xf1, byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())}
				op, spa, tpa := uint64(1), 0x0a010000|rng.Uint32()&0xffff, uint32(0x0a010001)
				dst := frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
				if i%10 == 9 {
					op, spa, tpa, dst = 2, 0x0a000202, 0x0a010001, rmac
				}
				if spa&0xffff <= 2 || spa&0xffff == 0xffff {
					spa = 0x0a010100
				}
				frame.Ether(d).SetDst(dst)
				frame.Ether(d).SetSrc(src)
				frame.Ether(d).SetType(frame.TypeARP)
				binary.BigEndian.PutUint64(d[14:], 0x0001080006040000|op)
				copy(d[22:], src[:])
				binary.BigEndian.PutUint32(d[28:], spa)
				copy(d[32:], dst[:])
				binary.BigEndian.PutUint32(d[38:], tpa)
			}
			k, _ := flooder.Send(b)
			sent += k
			time.Sleep(10 * time.Millisecond)
		}
		floodDone <- sent
	}()
	o, _ := exec.Command("ip", "netns", "exec", h1.Name, "ping", "-n", "-c", "25", "-i", "0.1", "-W", "1", "10.0.2.2").CombinedOutput()
	sent := <-floodDone
	tally, out := rt.Stop()
	m := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(string(o))
	got := 0
	if m != nil {
		got, _ = strconv.Atoi(m[1])
	}
	entries := strings.Count(out, " lladdr ")
	n := tally.Neigh
	t.Logf("flood: %d ARP frames sent; pings answered %d of 25; table %d entries; ARP in %d, requests answered %d, learned %d, refused %d, ignored %d",
		sent, got, entries, n.ARPIn, n.RepliesSent, n.Learned, n.Refused, n.Ignored)
	if got < 20 {
		t.Errorf("forwarding stalled under the flood: %d of 25 pings answered\n%s", got, o)
	}
	if entries > 1024 || n.Refused == 0 {
		t.Errorf("table of %d entries, %d refused: want at most 1024 and refusals counted", entries, n.Refused)
	}
	if !strings.Contains(out, "10.0.2.2 dev "+r1+" lladdr "+e2MAC) {
		t.Errorf("the bogus replies changed the far host's entry")
	}
	if !tally.Balanced() {
		t.Errorf("accounting mismatch: %+v", tally)
	}
}
