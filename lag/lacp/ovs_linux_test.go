package lacp_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// recordSlow passes slow frames on to the controller and, with WIRESPEED_OVS_CAPTURE set to a
// file name, appends their hex to it (how testdata/ovs-lacpdu.txt's negotiated vectors are made).
type recordSlow struct {
	next lag.SlowHandler
	mu   sync.Mutex
	f    *os.File
	seen map[string]bool
}

func (r *recordSlow) HandleSlow(member int, f []byte) {
	if r.f != nil {
		r.mu.Lock()
		h := hex.EncodeToString(f)
		if !r.seen[h[28:]] { // one line per distinct PDU
			r.seen[h[28:]] = true
			fmt.Fprintf(r.f, "# member %d\n%s\n", member, h)
		}
		r.mu.Unlock()
	}
	r.next.HandleSlow(member, f)
}

// TestOVS: Open vSwitch (lacp=active, lacp-time=fast, a netdev-datapath bond over two veths) is
// the partner of a Controller driving a lag.Aggregate over AF_PACKET ports on the veths' other
// ends. Both members must be current, in sync, collecting and distributing on both sides and
// enabled in OVS's bond; then member 1's link goes down and both sides stop using it; it comes
// back.
func TestOVS(t *testing.T) {
	nettest.RequirePriv(t)
	nettest.RequireOVS(t)
	nsO, nsL := nettest.NewNS(t, "ovs"), nettest.NewNS(t, "lacp")
	var ovsIf, ourIf [2]string
	for i := 0; i < 2; i++ {
		ovsIf[i], ourIf[i] = nettest.Veth(t, nsO, nsL, "o", "l")
	}
	o := nettest.StartOVS(t, nsO)
	o.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "other_config:hwaddr=02:00:00:00:0f:01")
	o.Vsctl("add-bond", "br0", "bond0", ovsIf[0], ovsIf[1], "lacp=active", "other_config:lacp-time=fast", "bond_mode=balance-tcp")

	// Our end: per member an AF_PACKET port for the aggregate and a Sender for the PDUs.
	var members []xmit.Port
	var senders []*lacp.Sender
	for i := 0; i < 2; i++ {
		var p *afpacket.Port
		var s *lacp.Sender
		if err := nsL.Do(func() (err error) {
			if p, err = afpacket.Open(ourIf[i], &afpacket.Config{RetireTimeout: 2 * time.Millisecond}); err != nil {
				return err
			}
			s, err = lacp.OpenSender(ourIf[i])
			return err
		}); err != nil {
			t.Fatal(err)
		}
		members = append(members, p)
		senders = append(senders, s)
		defer s.Close()
	}
	var evMu sync.Mutex
	var events []lacp.Event
	cfg := &lacp.Config{System: frame.MAC{0x02, 0, 0, 0, 0x0e, 0x01}, Fast: true, Events: func(e lacp.Event) {
		evMu.Lock()
		events = append(events, e)
		evMu.Unlock()
	}}
	for i := range senders {
		cfg.Ports = append(cfg.Ports, lacp.PortConfig{Tx: senders[i], Speed: 10000})
	}
	ctl, err := lacp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordSlow{next: ctl, seen: map[string]bool{}}
	if name := os.Getenv("WIRESPEED_OVS_CAPTURE"); name != "" {
		if rec.f, err = os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			t.Fatal(err)
		}
		defer rec.f.Close()
	}
	agg, err := lag.New(members, &lag.Config{Mode: lag.XOR, Policy: lag.Layer34, SlowProtocols: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	ctl.Attach(agg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	go func() {
		defer wg.Done()
		b := frame.NewBatch(64)
		for ctx.Err() == nil {
			if _, n, _ := agg.RecvFrom(b); n > 0 {
				b.Free()
				continue
			}
			members[0].(xmit.Waiter).Wait(int64(5 * time.Millisecond))
		}
	}()

	up := func(m map[string]nettest.LACPMember, name string) bool { return m[name].Up() }
	start := time.Now()
	var show, bond string
	for {
		show, bond = o.Appctl("lacp/show", "bond0"), o.Appctl("bond/show", "bond0")
		m := nettest.LACPShow(show)
		if up(m, ovsIf[0]) && up(m, ovsIf[1]) && nettest.BondEnabled(bond, ovsIf[0]) && nettest.BondEnabled(bond, ovsIf[1]) &&
			agg.MemberUp(0) && agg.MemberUp(1) {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no aggregation after 30 s: ours %+v\nlacp/show:\n%s\nbond/show:\n%s%s", ctl.Status(), show, bond, o.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("both members current, in sync, collecting and distributing on both sides %v after OVS's bond was made", time.Since(start).Round(10*time.Millisecond))
	st := ctl.Status()
	for _, p := range st.Ports {
		if p.Partner.System != (frame.MAC{0x02, 0, 0, 0, 0x0f, 0x01}) || p.Stats.LACPDURx == 0 || p.Stats.Illegal != 0 {
			t.Fatalf("our view of OVS: %+v", p)
		}
	}
	if st.Ports[0].Aggregator != st.Ports[1].Aggregator || !st.Up {
		t.Fatalf("not one aggregate: %+v", st)
	}
	t.Logf("lacp/show:\n%s", show)

	// Member 1's link goes down (on our side; OVS's veth end loses its carrier).
	nsL.Exec(t, "ip", "link", "set", ourIf[1], "down")
	down := time.Now()
	var oursAt, ovsAt time.Duration
	for oursAt == 0 || ovsAt == 0 {
		if oursAt == 0 && !agg.MemberUp(1) {
			oursAt = time.Since(down)
		}
		if ovsAt == 0 {
			if b := o.Appctl("bond/show", "bond0"); !nettest.BondEnabled(b, ovsIf[1]) {
				ovsAt = time.Since(down)
			}
		}
		if time.Since(down) > 15*time.Second { // it takes milliseconds (logged below); the margin is for a loaded machine
			t.Fatalf("member 1 still used 15 s after its link went down: ours %v, OVS %v\n%s", agg.MemberUp(1), ovsAt, o.Appctl("bond/show", "bond0"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !agg.MemberUp(0) || !nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[0]) {
		t.Fatalf("member 0 lost too")
	}
	t.Logf("member 1 link down: left out by us after %v, by OVS after %v", oursAt.Round(time.Millisecond), ovsAt.Round(time.Millisecond))

	// Back up: both members again.
	nsL.Exec(t, "ip", "link", "set", ourIf[1], "up")
	back := time.Now()
	for {
		m := nettest.LACPShow(o.Appctl("lacp/show", "bond0"))
		if up(m, ovsIf[1]) && nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[1]) && agg.MemberUp(1) {
			break
		}
		if time.Since(back) > 30*time.Second {
			t.Fatalf("member 1 not back: %+v\n%s", ctl.Status().Ports[1], o.Appctl("lacp/show", "bond0"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("member 1 back in use on both sides %v after its link came up", time.Since(back).Round(10*time.Millisecond))

	// Member 1 goes silent while its link stays up: OVS times it out (it asked for the fast rate,
	// so after 3 s without an LACPDU) and we, hearing OVS's LACPDU saying so, leave it too.
	ctl.SetLinkUp(1, false)
	silent := time.Now()
	for nettest.BondEnabled(o.Appctl("bond/show", "bond0"), ovsIf[1]) {
		if time.Since(silent) > 10*time.Second {
			t.Fatalf("OVS still uses member 1 10 s after it went silent")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("member 1 silent: OVS disabled it after %v", time.Since(silent).Round(10*time.Millisecond))
	if agg.MemberUp(1) {
		t.Fatal("we still use member 1")
	}
	evMu.Lock()
	defer evMu.Unlock()
	var kinds [5]int
	for _, e := range events {
		kinds[e.Kind]++
	}
	if kinds[lacp.EventAggregate] == 0 || kinds[lacp.EventMember] < 4 || kinds[lacp.EventLink] < 2 {
		t.Fatalf("events by kind %v", kinds)
	}
}
