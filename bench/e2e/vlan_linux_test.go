package e2e

import (
	"fmt"
	"github.com/wirespeed/wirespeed/bench/internal/stats"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// TestE2EVLAN is the 2010 VLAN egress table end to end: vlanrouter forwarding frames that come in
// untagged (uplink) or tagged (trunk, VIDs 101-120) and leave untagged (to 198.18.0.0/16, the
// default route up the uplink) or tagged (to 10.0.1.0/24-10.0.20.0/24, a VLAN other than the one
// they came in on). One "hosts" namespace holds the peers of both router interfaces: the generator
// sends on the ingress peer, the egress peer's receive counter is the result. Same XDP live-frames
// sender on CPU 1, router on CPU 0, cases interleaved. The kernel has no 8021q module here, so
// there is no kernel row.
func TestE2EVLAN(t *testing.T) {
	if os.Getenv("WIRESPEED_E2E") != "1" {
		t.Skip("end-to-end experiments run only with WIRESPEED_E2E=1")
	}
	nettest.RequirePriv(t)
	runs := envInt("WIRESPEED_E2E_RUNS", 3)
	window := time.Duration(envInt("WIRESPEED_E2E_SECONDS", 2)) * time.Second
	warm := 700 * time.Millisecond

	bin := filepath.Join(t.TempDir(), "vlanrouter")
	if out, err := exec.Command("go", "build", "-C", "../..", "-o", bin, "./examples/vlanrouter").CombinedOutput(); err != nil {
		t.Fatalf("go build vlanrouter: %v\n%s", err, out)
	}
	hosts, rtr := nettest.NewNS(t, "host"), nettest.NewNS(t, "rtr")
	for _, ns := range []*nettest.NS{hosts, rtr} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	hu, up := nettest.Veth(t, hosts, rtr, "hu", "up")
	ht, tr := nettest.Veth(t, hosts, rtr, "ht", "tr")
	macOf := func(ifname string) [6]byte {
		hw, err := net.ParseMAC(strings.TrimSpace(rtr.Exec(t, "cat", "/sys/class/net/"+ifname+"/address")))
		if err != nil {
			t.Fatal(err)
		}
		return [6]byte(hw)
	}
	upMAC, trMAC := macOf(up), macOf(tr)
	var vlanDst, upDst []netip.Prefix
	for i := 2; i <= 21; i++ { // flow k comes in on VID 101+k%20 and goes to the next VLAN's subnet
		vlanDst = append(vlanDst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte((i-1)%20 + 1), 0}), 24))
	}
	upDst = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16")}

	type vcase struct{ in, out, backend string }
	var cases []vcase
	for _, b := range []string{"afxdp", "afpacket"} {
		for _, in := range []string{"untagged", "tagged"} {
			for _, out := range []string{"untagged", "tagged"} {
				cases = append(cases, vcase{in, out, b})
			}
		}
	}
	var pass []link.Link
	detach := func() {
		for _, l := range pass {
			l.Close()
		}
		pass = nil
	}
	defer detach()
	res := map[vcase][]float64{}
	runOne := func(c vcase) (float64, error) {
		// AF_PACKET: the router's veths need NAPI for the XDP sender's frames (XDP_PASS programs).
		if c.backend == "afpacket" && pass == nil {
			for _, ifn := range []string{up, tr} {
				l, err := attach(rtr, ifn, 2)
				if err != nil {
					return 0, err
				}
				pass = append(pass, l)
			}
		} else if c.backend != "afpacket" {
			detach()
		}
		r := newVLANRouter(bin, rtr.Name, c.backend, tr, up)
		if err := r.start(); err != nil {
			return 0, err
		}
		cfg := gen.Config{Netns: hosts.Name, Engine: gen.EngineXDP, Flows: 1000, CPU: 1, Nice: nice(), Repeat: 1 << 20}
		if c.in == "untagged" {
			cfg.Interface, cfg.DstMAC = hu, upMAC
		} else {
			cfg.Interface, cfg.DstMAC, cfg.VLAN, cfg.VLANs = ht, trMAC, 101, 20
			cfg.Sizes = []int{64} // 60 bytes on the wire after the router pops the tag
		}
		sink := hu
		if c.out == "untagged" {
			cfg.Dst = upDst
		} else {
			cfg.Dst, sink = vlanDst, ht
		}
		g, err := gen.Open(&cfg)
		if err != nil {
			r.stop()
			return 0, err
		}
		g.Start()
		time.Sleep(warm)
		s0, _ := rxPackets(hosts, sink)
		t0 := time.Now()
		time.Sleep(window)
		s1, err := rxPackets(hosts, sink)
		el := time.Since(t0)
		gr := g.Stop()
		log := r.stop()
		if err != nil {
			return 0, err
		}
		mpps := float64(s1-s0) / el.Seconds() / 1e6
		t.Logf("in %s out %s %s: %.3f Mpps at the sink; gen %v; %s", c.in, c.out, c.backend, mpps, gr, log)
		if s1 == s0 {
			return 0, fmt.Errorf("nothing arrived")
		}
		return mpps, nil
	}
	load0, _ := os.ReadFile("/proc/loadavg")
	start := time.Now()
	for round := range runs {
		for _, c := range cases {
			v, err := runOne(c)
			if err != nil {
				t.Errorf("round %d %+v: %v", round, c, err)
				continue
			}
			res[c] = append(res[c], v)
		}
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	var md strings.Builder
	fmt.Fprintf(&md, "| forwarder | in | out | Mpps at sink, median | min - max | x (in untagged, out untagged) |\n|---|---|---|---|---|---|\n")
	for _, c := range cases {
		v := res[c]
		if len(v) == 0 {
			fmt.Fprintf(&md, "| vlanrouter, %s | %s | %s | failed | | |\n", c.backend, c.in, c.out)
			continue
		}
		ratio := ""
		if base := res[vcase{"untagged", "untagged", c.backend}]; len(base) > 0 {
			ratio = fmt.Sprintf("%.2f", stats.Median(v)/stats.Median(base))
		}
		fmt.Fprintf(&md, "| vlanrouter, %s | %s | %s | %.3f | %.3f - %.3f | %s |\n", c.backend, c.in, c.out, stats.Median(v), slices.Min(v), slices.Max(v), ratio)
	}
	fmt.Fprintf(&md, "\n%d rounds, cases interleaved in the order listed, %v measured per run after %v warm-up, %s; %v in all. Load average before: %s, after: %s.\n",
		runs, window, warm, schedNote(), time.Since(start).Round(time.Second), strings.TrimSpace(string(load0)), strings.TrimSpace(string(load1)))
	t.Logf("\n%s", md.String())
	if out := os.Getenv("WIRESPEED_E2E_VLAN_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
