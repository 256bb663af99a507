package linuxcp

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestTAPAttributes: OpenTAP makes an interface with the MAC and MTU asked for, up; Close removes
// it.
func TestTAPAttributes(t *testing.T) {
	nettest.RequirePriv(t)
	ns := nettest.NewNS(t, "tap")
	name := nettest.Name("tap")
	var tap *TAP
	if err := ns.Do(func() (err error) { tap, err = OpenTAP(name, rtrMAC, 1400); return err }); err != nil {
		t.Fatal(err)
	}
	o := ns.Exec(t, "ip", "-o", "link", "show", "dev", name)
	for _, want := range []string{rtrMAC.String(), "mtu 1400", "UP"} {
		if !strings.Contains(o, want) {
			t.Errorf("ip link: want %q:\n%s", want, o)
		}
	}
	if tap.Ifindex() == 0 || tap.Name() != name {
		t.Errorf("TAP %q ifindex %d", tap.Name(), tap.Ifindex())
	}
	// Addresses, from this thread (outside the namespace): the TAP's netlink handle is the namespace's.
	if err := tap.AddAddr(netip.MustParsePrefix("10.0.7.1/24")); err != nil {
		t.Fatal(err)
	}
	ns.Exec(t, "ip", "addr", "add", "10.0.8.1/25", "dev", name)
	if as, err := tap.Addrs(); err != nil || len(as) != 2 || as[0].String() != "10.0.7.1/24" || as[1].String() != "10.0.8.1/25" {
		t.Errorf("Addrs: %v, %v; want 10.0.7.1/24 and 10.0.8.1/25", as, err)
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	if o, err := runIn(ns, "ip", "link", "show", "dev", name); err == nil {
		t.Errorf("TAP still there after Close:\n%s", o)
	}
}

// TestExceptionTAPPing: a host on VLAN 100 of an in-memory port pings the router's address, which
// lives in the kernel on a real TAP; the forwarding stage delivers the echo request locally, the
// exception path takes it up the TAP without its tag, the kernel resolves the host by ARP through
// the TAP (its request leaves the port tagged, the host's reply goes up) and answers; the answer
// reaches the host tagged with VLAN 100, and the kernel's neighbour table has the host's MAC.
func TestExceptionTAPPing(t *testing.T) {
	nettest.RequirePriv(t)
	ns := nettest.NewNS(t, "cp")
	ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	name := nettest.Name("tap")
	var tap *TAP
	if err := ns.Do(func() (err error) { tap, err = OpenTAP(name, rtrMAC, 1500); return err }); err != nil {
		t.Fatal(err)
	}
	ns.Exec(t, "ip", "addr", "add", "10.0.100.1/24", "dev", name)

	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 512})
	if err != nil {
		t.Fatal(err)
	}
	demux, r := testRouter(t, pool)
	rtr, host := xmit.Pipe(pool, nil)
	x, err := New(&Config{Demux: demux, Devices: []Device{nil, tap}, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	defer x.Close()
	fw, xw := r.NewWorker(64), x.Worker(0)

	hostIP, rtrIP := netip.MustParseAddr("10.0.100.2"), netip.MustParseAddr("10.0.100.1")
	tagged := func(payload ...gopacket.SerializableLayer) []byte {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(hostMAC[:]), DstMAC: net.HardwareAddr(rtrMAC[:]), EthernetType: layers.EthernetTypeDot1Q}
		q := &layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetTypeIPv4}
		if _, ok := payload[0].(*layers.ARP); ok {
			q.Type = layers.EthernetTypeARP
		}
		return serialize(t, append([]gopacket.SerializableLayer{eth, q}, payload...)...)
	}
	echo := tagged(&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: hostIP.AsSlice(), DstIP: rtrIP.AsSlice()},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 7, Seq: 1},
		gopacket.Payload("wirespeed linuxcp"))

	var gotARP, gotReply bool
	in := frame.NewBatch(64)
	down := frame.NewBatch(64)
	lastPing := time.Time{}
	for deadline := time.Now().Add(15 * time.Second); !gotReply && time.Now().Before(deadline); {
		if time.Since(lastPing) > time.Second {
			sendFrames(t, host, pool, echo)
			lastPing = time.Now()
		}
		// The router: what arrives is processed, local frames go up; the kernel's frames go down.
		if n, _ := rtr.Recv(in); n > 0 {
			o := fw.Process(0, in)
			for p := range o.Egress {
				o.Egress[p].Free()
				o.Generated[p].Free()
			}
			o.Unresolved.Free()
			xw.Up(o.Local)
		}
		if xw.Take(0, down) > 0 {
			rtr.Send(down)
		}
		// The host answers the kernel's ARP request and waits for the echo reply.
		for _, f := range recvFrames(t, host) {
			p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
			q, ok := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
			if !ok || q.VLANIdentifier != 100 {
				t.Errorf("host got a frame not tagged with VLAN 100: %x", f)
				continue
			}
			if a, ok := p.Layer(layers.LayerTypeARP).(*layers.ARP); ok && a.Operation == layers.ARPRequest &&
				netip.AddrFrom4([4]byte(a.DstProtAddress)) == hostIP {
				gotARP = true
				sendFrames(t, host, pool, tagged(&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
					HwAddressSize: 6, ProtAddressSize: 4, Operation: layers.ARPReply, SourceHwAddress: hostMAC[:],
					SourceProtAddress: hostIP.AsSlice(), DstHwAddress: a.SourceHwAddress, DstProtAddress: a.SourceProtAddress}))
			}
			if ic, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok && ic.TypeCode.Type() == layers.ICMPv4TypeEchoReply &&
				ic.Id == 7 && string(ic.Payload) == "wirespeed linuxcp" {
				gotReply = true
			}
		}
		time.Sleep(time.Millisecond)
	}
	xw.Flush()
	if !gotARP || !gotReply {
		t.Fatalf("ARP request from the kernel seen: %v, echo reply: %v; counters %+v", gotARP, gotReply, x.Counters())
	}
	if o := ns.Exec(t, "ip", "neigh", "show", "dev", name); !strings.Contains(o, "10.0.100.2 lladdr "+hostMAC.String()) {
		t.Errorf("the kernel's neighbour table lacks the host:\n%s", o)
	}
	fw.Flush()
	if fc := r.Counters(); fc.Echoed != 0 || fc.Local < 2 {
		t.Errorf("the stage answered %d echo requests itself and delivered %d frames locally, want 0 and 2 or more", fc.Echoed, fc.Local)
	}
	x.Close()
	if c := x.Counters(); c.Up < 2 || c.Written != c.Up || c.Taken < 2 {
		t.Errorf("counters %+v: want the echo request and the ARP reply written, the ARP request and the echo reply taken", c)
	}
}

// runIn runs a command in ns and returns its output and error.
func runIn(ns *nettest.NS, args ...string) (string, error) {
	o, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name}, args...)...).CombinedOutput()
	return string(o), err
}

// TestExceptionTAPDrops: with a real TAP, frames handed up while the TAP's writer is not running
// fill its queue and the rest are counted drops at once, never a wait; once it runs, the queued
// frames reach the kernel (the TAP's receive counter). A frame the kernel sends that is larger than
// the exception path's buffers is a counted drop, never sent cut.
func TestExceptionTAPDrops(t *testing.T) {
	nettest.RequirePriv(t)
	ns := nettest.NewNS(t, "cpd")
	ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	name := nettest.Name("tap")
	var tap *TAP
	if err := ns.Do(func() (err error) { tap, err = OpenTAP(name, rtrMAC, 1500); return err }); err != nil {
		t.Fatal(err)
	}
	ns.Exec(t, "ip", "addr", "add", "10.0.9.1/24", "dev", name)
	ns.Exec(t, "ip", "neigh", "add", "10.0.9.2", "lladdr", hostMAC.String(), "dev", name)
	rxPackets := func() int {
		var n int
		fmt.Sscan(ns.Exec(t, "cat", "/sys/class/net/"+name+"/statistics/rx_packets"), &n)
		return n
	}
	before := rxPackets()

	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 64, BufSize: 128 + 512})
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(&Config{Demux: testDemux(t), Devices: []Device{tap}, Pool: pool, Queue: 4, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	w := x.Worker(0)
	b := frame.NewBatch(10)
	arp := arpRequest(t, 0, netip.MustParseAddr("10.0.9.2"), netip.MustParseAddr("10.0.9.1"))
	pool.Alloc(b, 10)
	for i := range b.Frames {
		b.Frames[i].Resize(len(arp))
		copy(b.Bytes(i), arp)
		b.Frames[i].L3 = frame.EtherLen
	}
	w.Up(b) // the writer is not running: 4 fit, 6 are dropped
	w.Flush()
	if c := x.Counters(); c.Up != 4 || c.UpQueueFull != 6 {
		t.Fatalf("counters %+v: want 4 queued and 6 dropped on a full queue", c)
	}
	x.Start()
	for deadline := time.Now().Add(10 * time.Second); rxPackets()-before < 4 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := rxPackets() - before; n != 4 {
		t.Errorf("the kernel received %d frames on the TAP, want the 4 queued", n)
	}

	// A 1000-byte datagram from the kernel: a 1042-byte frame, for 512-byte buffers.
	if err := ns.Do(func() error {
		c, err := net.Dial("udp4", "10.0.9.2:9")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(make([]byte, 1000))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); x.Counters().DownOversize == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	down := frame.NewBatch(64)
	for w.Take(0, down) > 0 {
		for i := range down.Frames {
			if n := len(down.Bytes(i)); n >= 512 {
				t.Errorf("a %d-byte frame came down through 512-byte buffers", n)
			}
		}
		down.Free()
	}
	if c := x.Counters(); c.DownOversize != 1 {
		t.Errorf("counters %+v: want the large frame counted as too big", c)
	}
}
