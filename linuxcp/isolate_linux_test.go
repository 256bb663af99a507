package linuxcp

import (
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestIsolatePhysical: a peer pings the router namespace's address 10.0.1.1. On the veth it is
// answered by the kernel. With the address moved to a TAP and the veth not isolated, the kernel
// still answers ARP on the veth and takes the ping that arrives there (the weak host model),
// answering it through the TAP: beside a router, a second answer. Once the veth is isolated the
// kernel answers neither ARP nor the ping (with the peer's neighbour entry set by hand), while an
// AF_PACKET socket on the veth still sees every echo request; restore puts the address and the
// settings back, and the kernel answers on the veth again.
func TestIsolatePhysical(t *testing.T) {
	nettest.RequirePriv(t)
	requireTool(t, "ping", "iputils-ping")
	peer, rtr := nettest.NewNS(t, "peer"), nettest.NewNS(t, "rtr")
	r0, e1 := nettest.Veth(t, rtr, peer, "r0", "e1")
	rtr.Exec(t, "ip", "addr", "add", "10.0.1.1/24", "dev", r0)
	peer.Exec(t, "ip", "addr", "add", "10.0.1.2/24", "dev", e1)
	received := regexp.MustCompile(`(\d+) received`)
	ping := func(n string) string {
		o, _ := runIn(peer, "ping", "-n", "-c", n, "-i", "0.2", "-W", "1", "10.0.1.1")
		if m := received.FindStringSubmatch(o); m != nil {
			return m[1]
		}
		return "?\n" + o
	}
	if got := ping("1"); got != "1" {
		t.Fatalf("before isolation the kernel does not answer: %s", got)
	}
	mac := strings.TrimSpace(rtr.Exec(t, "cat", "/sys/class/net/"+r0+"/address"))
	hw, _ := net.ParseMAC(mac)

	tapName := nettest.Name("tap")
	var tap *TAP
	var restore func() error
	var port *afpacket.Port
	if err := rtr.Do(func() (err error) {
		if tap, err = OpenTAP(tapName, frame.MAC(hw), 1500); err != nil {
			return err
		}
		port, err = afpacket.Open(r0, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	// What the kernel sends on the TAP: its echo replies are counted.
	var replies atomic.Int64
	tapDone := make(chan struct{})
	go func() {
		defer close(tapDone)
		bufs, sizes := [][]byte{make([]byte, 2048)}, []int{0}
		for {
			if _, err := tap.Read(bufs, sizes); err != nil {
				return
			}
			if d := bufs[0][:min(sizes[0], 2048)]; len(d) > 34 && binary.BigEndian.Uint16(d[12:]) == frame.TypeIPv4 && d[23] == frame.ProtoICMP && d[34] == 0 {
				replies.Add(1)
			}
		}
	}()
	e1MAC := strings.TrimSpace(peer.Exec(t, "cat", "/sys/class/net/"+e1+"/address"))

	// The address on the TAP, the veth not isolated: the kernel answers ARP on the veth, takes the
	// ping that arrives there (weak host) and answers it through the TAP.
	rtr.Exec(t, "ip", "addr", "del", "10.0.1.1/24", "dev", r0)
	rtr.Exec(t, "ip", "addr", "add", "10.0.1.1/24", "dev", tapName)
	rtr.Exec(t, "ip", "neigh", "replace", "10.0.1.2", "lladdr", e1MAC, "dev", tapName, "nud", "permanent")
	peer.Exec(t, "ip", "neigh", "flush", "dev", e1)
	ping("1")
	for deadline := time.Now().Add(5 * time.Second); replies.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := replies.Load(); n != 1 {
		t.Errorf("the veth not isolated, the kernel answered %d pings that came in on it (through the TAP), want 1", n)
	}
	if o := peer.Exec(t, "ip", "neigh", "show", "10.0.1.1", "dev", e1); !strings.Contains(o, mac) {
		t.Errorf("the veth not isolated, the kernel did not answer ARP on it:\n%s", o)
	}
	echoRequests(port)
	// IsolatePhysical takes the veth's own address away (and restore puts it back).
	rtr.Exec(t, "ip", "addr", "add", "10.0.1.1/24", "dev", r0)
	if err := rtr.Do(func() (err error) { restore, err = IsolatePhysical(r0); return err }); err != nil {
		t.Fatal(err)
	}
	if o := rtr.Exec(t, "ip", "-4", "addr", "show", "dev", r0); strings.Contains(o, "10.0.1.1") {
		t.Errorf("the address is still on %s:\n%s", r0, o)
	}
	if o := rtr.Exec(t, "ip", "link", "show", "dev", r0); !strings.Contains(o, "NOARP") {
		t.Errorf("ARP still on:\n%s", o)
	}

	// ARP: not answered.
	peer.Exec(t, "ip", "neigh", "flush", "dev", e1)
	if got := ping("2"); got != "0" {
		t.Errorf("isolated, the kernel answered %s pings (ARP by the kernel)", got)
	}
	if n := echoRequests(port); n != 0 {
		t.Errorf("without ARP the peer sent %d echo requests", n)
	}
	if o := peer.Exec(t, "ip", "neigh", "show", "10.0.1.1", "dev", e1); strings.Contains(o, mac) {
		t.Errorf("the kernel answered ARP on the isolated interface:\n%s", o)
	}
	// IPv4 with the neighbour known: not answered either, and the AF_PACKET socket sees the requests.
	// (The entry still holds the unanswered echo requests: flushed with it, not sent.)
	peer.Exec(t, "ip", "neigh", "flush", "dev", e1)
	peer.Exec(t, "ip", "neigh", "replace", "10.0.1.1", "lladdr", mac, "dev", e1, "nud", "permanent")
	if got := ping("3"); got != "0" {
		t.Errorf("isolated, the kernel answered %s pings", got)
	}
	if n := echoRequests(port); n != 3 {
		t.Errorf("AF_PACKET on the isolated interface saw %d echo requests, want 3", n)
	}
	if n := replies.Load(); n != 1 {
		t.Errorf("isolated, the kernel answered %d pings through the TAP", n-1)
	}

	tap.Close()
	<-tapDone
	if err := restore(); err != nil { // from this thread, in the host's namespace: restore needs no Do
		t.Fatal(err)
	}
	if o := rtr.Exec(t, "ip", "-4", "addr", "show", "dev", r0); !strings.Contains(o, "10.0.1.1/24") {
		t.Errorf("restore did not put the address back:\n%s", o)
	}
	if o := rtr.Exec(t, "ip", "link", "show", "dev", r0); strings.Contains(o, "NOARP") {
		t.Errorf("restore did not turn ARP back on:\n%s", o)
	}
	for _, k := range []string{"rp_filter", "forwarding", "arp_ignore"} {
		if o := strings.TrimSpace(rtr.Exec(t, "cat", "/proc/sys/net/ipv4/conf/"+r0+"/"+k)); o != "0" {
			t.Errorf("restore left %s at %s", k, o)
		}
	}
	peer.Exec(t, "ip", "neigh", "flush", "dev", e1)
	if got := ping("1"); got != "1" {
		t.Errorf("after restore the kernel does not answer: %s", got)
	}
}

// echoRequests counts the ICMP echo requests waiting on p (the ring's blocks are handed over
// within a few milliseconds).
func echoRequests(p *afpacket.Port) int {
	b := frame.NewBatch(64)
	n := 0
	for deadline, idle := time.Now().Add(time.Second), 0; time.Now().Before(deadline) && idle < 50; {
		if k, _ := p.Recv(b); k == 0 {
			idle++
			time.Sleep(2 * time.Millisecond)
			continue
		}
		idle = 0
		for i := range b.Frames {
			d := b.Bytes(i)
			if len(d) >= 34 && binary.BigEndian.Uint16(d[12:]) == frame.TypeIPv4 && d[23] == frame.ProtoICMP && d[34] == 8 {
				n++
			}
		}
		b.Free()
	}
	return n
}

// requireTool skips t (fails it under WIRESPEED_REQUIRE_PRIV=1) when the command is missing.
func requireTool(t testing.TB, cmd, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(cmd); err != nil {
		if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
			t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but %s is missing (apt-get install %s)", cmd, pkg)
		}
		t.Skipf("needs %s (%s)", cmd, pkg)
	}
}
