package gen

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/internal/nettest"
)

func TestOpenNeedsNamespace(t *testing.T) {
	for _, c := range []Config{{Interface: "lo"}, {Netns: "x"}, {Netns: "wirespeed-no-such-ns-here", Interface: "lo"}} {
		if _, err := Open(&c); err == nil {
			t.Errorf("Open(%+v) succeeded", c)
		}
	}
}

// A name for this process's own namespace (ip netns attach) is refused: the generator never sends on
// the interfaces the caller itself sits on.
func TestOpenRefusesOwnNamespace(t *testing.T) {
	nettest.RequirePriv(t)
	name := nettest.Name("self")
	nettest.Run(t, "ip", "netns", "attach", name, fmt.Sprint(os.Getpid()))
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	_, err := Open(&Config{Netns: name, Interface: "lo"})
	if !errors.Is(err, ErrHostNetns) {
		t.Fatalf("Open in our own namespace: %v, want ErrHostNetns", err)
	}
}

// rawRecv collects frames arriving on ifname (inside ns) until stop is closed.
func rawRecv(t *testing.T, ns *nettest.NS, ifname string) (get func() [][]byte) {
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		tv := unix.Timeval{Usec: 100_000}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan [][]byte)
	quit := make(chan struct{})
	go func() {
		var got [][]byte
		buf := make([]byte, 10000)
		for {
			select {
			case <-quit:
				done <- got
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err == nil && len(got) < 100_000 {
				got = append(got, bytes.Clone(buf[:n]))
			}
		}
	}()
	return func() [][]byte {
		close(quit)
		g := <-done
		unix.Close(fd)
		return g
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// untag removes k 4-byte tags after the MAC addresses (the kernel moves a received VLAN tag out of
// the bytes into metadata).
func untag(b []byte, k int) []byte {
	return append(bytes.Clone(b[:12]), b[12+4*k:]...)
}

func TestGeneratorOnVeth(t *testing.T) {
	nettest.RequirePriv(t)
	ns := nettest.NewNS(t, "gen")
	ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	a, b := nettest.Veth(t, ns, ns, "a", "b")
	// The XDP engine's frames reach b only if b has NAPI: attach an XDP_PASS program.
	var pass link.Link
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(b)
		if err != nil {
			return err
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
		if err != nil {
			return err
		}
		defer prog.Close()
		pass, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Close()

	routes := []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24"), netip.MustParsePrefix("10.0.2.0/24")}
	for _, tc := range []struct {
		name string
		cfg  Config
		tags int
	}{
		{"afpacket", Config{Engine: EngineAFPacket, Flows: 8, Sizes: []int{60, 100, 1514}, Dst: routes}, 0},
		{"afpacket-vlan", Config{Engine: EngineAFPacket, Flows: 4, VLAN: 101, VLANs: 2, Dst: routes}, 1},
		{"xdp-one-flow", Config{Engine: EngineXDP}, 0},
		{"xdp-flows-sizes", Config{Engine: EngineXDP, Flows: 8, Sizes: []int{60, 100}, Dst: routes}, 0},
		{"xdp-vlan", Config{Engine: EngineXDP, Flows: 4, VLAN: 101, VLANs: 2, Dst: routes}, 1},
		{"afxdp", Config{Engine: EngineAFXDP, Flows: 8, Sizes: []int{60, 100, 1514}, Dst: routes}, 0},
		{"afxdp-vlan", Config{Engine: EngineAFXDP, Flows: 4, VLAN: 101, VLANs: 2, Dst: routes}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Netns, c.Interface, c.CPU = ns.Name, a, -1
			c.Rate, c.Duration = 20_000, 300*time.Millisecond
			want, err := Frames(&c)
			if err != nil {
				t.Fatal(err)
			}
			get := rawRecv(t, ns, b)
			g, err := Open(&c)
			if err != nil {
				get()
				t.Fatal(err)
			}
			g.Start()
			r := g.Wait()
			time.Sleep(50 * time.Millisecond)
			got := get()
			t.Logf("%v; received %d", r, len(got))
			if r.Sent == 0 || r.Errors != 0 {
				t.Fatalf("%v (last error %v)", r, g.LastError())
			}
			// Never faster than the rate (plus the pacer's two-call burst).
			chunk := float64(g.chunk())
			if float64(r.Sent) > c.Rate*r.Elapsed.Seconds()+2*chunk+1 {
				t.Errorf("sent %d in %v at a limit of %v/s", r.Sent, r.Elapsed, c.Rate)
			}
			perFlow := make([]int, len(want))
			matched := 0
			for _, f := range got {
				for i, w := range want {
					if bytes.Equal(f, w) || (tc.tags > 0 && bytes.Equal(f, untag(w, tc.tags))) {
						perFlow[i]++
						matched++
						break
					}
				}
			}
			if matched < len(got)/2 || matched == 0 {
				t.Fatalf("only %d of %d received frames are the generator's", matched, len(got))
			}
			if uint64(matched) > r.Sent {
				t.Errorf("received %d generator frames, sent %d", matched, r.Sent)
			}
			for i, n := range perFlow {
				if n == 0 {
					t.Errorf("flow %d (%d bytes) never arrived; per flow: %v", i, len(want[i]), perFlow)
				}
			}
		})
	}
}
