package bench

import (
	"context"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/linuxcp"
)

// TestMirrorChurn measures a linuxcp.Mirror under sustained route churn: in a fresh namespace,
// 10,000 stable /24s point at one gateway while 1,000 other /24s are moved between two gateways
// (ip route replace through netlink) at WIRESPEED_CP_CHURN_RATE changes per second (default 10,000)
// for WIRESPEED_CP_CHURN_SECONDS (default 30). Meanwhile a reader calls fib.LookupBatch on the
// stable prefixes without pause, as a forwarding worker would. It reports the change rate the kernel
// took, the mirror's resynchronisations, the reader's lookups and its longest LookupBatch call, and
// how long after the last change the FIB had the final gateway of every moved prefix (the backlog the
// churn left). It fails if a stable prefix ever resolved to anything but its gateway: a frame to a
// prefix that did not change would have been lost or misrouted. It asserts nothing about times.
//
//	WIRESPEED_CP_CHURN=1 go test -run MirrorChurn -v -timeout 10m
func TestMirrorChurn(t *testing.T) {
	if os.Getenv("WIRESPEED_CP_CHURN") != "1" {
		t.Skip("set WIRESPEED_CP_CHURN=1 to run this measurement (root)")
	}
	nettest.RequirePriv(t)
	rate, seconds := 10000, 30
	if v, err := strconv.Atoi(os.Getenv("WIRESPEED_CP_CHURN_RATE")); err == nil && v > 0 {
		rate = v
	}
	if v, err := strconv.Atoi(os.Getenv("WIRESPEED_CP_CHURN_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	const stable, moving = 10000, 1000
	r, p := nettest.NewNS(t, "cbr"), nettest.NewNS(t, "cbp")
	r1, _ := nettest.Veth(t, r, p, "r", "p")
	r.Exec(t, "ip", "addr", "add", "10.1.1.1/24", "dev", r1)
	gwA, gwB := net.IPv4(10, 1, 1, 2), net.IPv4(10, 1, 1, 3)
	macA, macB := "02:00:00:00:0a:02", "02:00:00:00:0a:03"
	r.Exec(t, "ip", "neigh", "replace", "10.1.1.2", "lladdr", macA, "dev", r1, "nud", "permanent")
	r.Exec(t, "ip", "neigh", "replace", "10.1.1.3", "lladdr", macB, "dev", r1, "nud", "permanent")

	h, err := netns.GetFromName(r.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	link, err := nl.LinkByName(r1)
	if err != nil {
		t.Fatal(err)
	}
	dst := func(base [2]byte, i int) *net.IPNet {
		return &net.IPNet{IP: net.IPv4(base[0], base[1]+byte(i>>8), byte(i), 0), Mask: net.CIDRMask(24, 32)}
	}
	stableBase, movingBase := [2]byte{100, 64}, [2]byte{198, 18}
	for i := range stable {
		if err := nl.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst(stableBase, i), Gw: gwA}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range moving {
		if err := nl.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst(movingBase, i), Gw: gwA}); err != nil {
			t.Fatal(err)
		}
	}

	routes, nhs := fib.New(), new(fib.NextHops)
	m, err := linuxcp.NewMirror(&linuxcp.MirrorConfig{Source: &linuxcp.NetlinkSource{NS: h}, IfaceNames: map[string]uint16{r1: 0},
		Routes: routes, NextHops: nhs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	<-m.Synced()
	mac := func(a uint32) string {
		nh, ok := routes.LookupU32(a)
		if !ok {
			return ""
		}
		e, ok := nhs.Get(nh)
		if !ok {
			return ""
		}
		return net.HardwareAddr(e.DstMAC[:]).String()
	}
	u32 := func(n *net.IPNet) uint32 {
		ip := n.IP.To4()
		return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | 1
	}
	keys := make([]uint32, stable)
	for i := range keys {
		keys[i] = u32(dst(stableBase, i))
	}
	for start := time.Now(); mac(keys[stable-1]) != macA || mac(u32(dst(movingBase, moving-1))) != macA; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("the FIB does not have the routes after a minute")
		}
	}
	nhA, _ := routes.LookupU32(keys[0])

	// The reader: LookupBatch over the stable prefixes, without pause.
	var lookups, wrong atomic.Uint64
	var longest atomic.Int64
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		out := make([]uint32, 64)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for j := 0; j+64 <= len(keys); j += 64 {
				t0 := time.Now()
				routes.LookupBatch(keys[j:j+64], out)
				if d := int64(time.Since(t0)); d > longest.Load() {
					longest.Store(d)
				}
				for _, nh := range out {
					if nh != nhA {
						wrong.Add(1)
					}
				}
				lookups.Add(64)
			}
		}
	}()

	// The churn: every millisecond the changes due by then, each moving the next prefix to the
	// other gateway.
	final := make([]bool, moving) // true: on gateway B
	var changes, failed int
	start := time.Now()
	end := start.Add(time.Duration(seconds) * time.Second)
	for now := start; now.Before(end); now = time.Now() {
		due := int(now.Sub(start).Seconds() * float64(rate))
		for ; changes < due; changes++ {
			i := changes % moving
			gw := gwB
			if final[i] {
				gw = gwA
			}
			if err := nl.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst(movingBase, i), Gw: gw}); err != nil {
				failed++
				continue
			}
			final[i] = !final[i]
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	last := time.Now()
	var caughtUp time.Duration
	for {
		ok := true
		for i := range moving {
			want := macA
			if final[i] {
				want = macB
			}
			if mac(u32(dst(movingBase, i))) != want {
				ok = false
				break
			}
		}
		if ok {
			caughtUp = time.Since(last)
			break
		}
		if time.Since(last) > time.Minute {
			t.Fatalf("a minute after the churn the FIB still lags the kernel")
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-readerDone
	st := m.Stats()
	t.Logf("churn: %d route changes in %v (%.0f/s asked %d/s; %d refused by the kernel); mirror resyncs %d",
		changes, took.Round(time.Millisecond), float64(changes)/took.Seconds(), rate, failed, st.Resyncs)
	t.Logf("reader: %d lookups of stable prefixes, %d wrong; longest LookupBatch of 64: %v", lookups.Load(), wrong.Load(),
		time.Duration(longest.Load()))
	t.Logf("backlog: the FIB had every moved prefix's final gateway %v after the last change", caughtUp)
	if wrong.Load() != 0 {
		t.Errorf("%d lookups of prefixes that never changed resolved to another next hop", wrong.Load())
	}
}
