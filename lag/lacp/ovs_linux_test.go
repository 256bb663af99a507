package lacp_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// ovs is a private Open vSwitch: ovsdb-server and ovs-vswitchd (userspace netdev datapath) in a
// namespace of the test, with every file and socket in a directory of the test.
type ovs struct {
	t   *testing.T
	ns  *nettest.NS
	dir string
	env []string
}

// ovsTools are the programs of Debian's openvswitch-switch and openvswitch-common.
var ovsTools = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-appctl"}

const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// requireOVS skips the test, with the reason, when Open vSwitch is not installed (even under
// WIRESPEED_REQUIRE_PRIV=1: it is an optional partner); once it is installed, failures fail.
func requireOVS(t *testing.T) {
	for _, p := range ovsTools {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs Open vSwitch (%s not found: apt-get install -y openvswitch-switch)", p)
		}
	}
	if _, err := os.Stat(ovsSchema); err != nil {
		t.Skipf("needs Open vSwitch's schema: %v", err)
	}
}

func (o *ovs) cmd(args ...string) string {
	o.t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Env = o.env
	out, err := c.CombinedOutput()
	if err != nil {
		o.t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, o.logTail())
	}
	return string(out)
}

func (o *ovs) logTail() string {
	b, _ := os.ReadFile(filepath.Join(o.dir, "ovs-vswitchd.log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return "\nvswitchd.log:\n" + string(b)
}

func (o *ovs) vsctl(args ...string) string {
	return o.cmd(append([]string{"ovs-vsctl", "--db=unix:" + filepath.Join(o.dir, "db.sock"), "--timeout=10"}, args...)...)
}

func (o *ovs) appctl(args ...string) string {
	return o.cmd(append([]string{"ovs-appctl", "-t", filepath.Join(o.dir, "vswitchd.ctl")}, args...)...)
}

// daemon starts a detached OVS daemon in the namespace and stops it (SIGTERM, then SIGKILL) when
// the test ends.
func (o *ovs) daemon(name string, args ...string) {
	pidfile := filepath.Join(o.dir, name+".pid")
	full := append([]string{"ip", "netns", "exec", o.ns.Name, name}, args...)
	full = append(full, "--pidfile="+pidfile, "--detach", "--no-chdir",
		"--log-file="+filepath.Join(o.dir, name+".log"), "--unixctl="+filepath.Join(o.dir, strings.TrimPrefix(name, "ovs-")+".ctl"))
	o.cmd(full...)
	o.t.Cleanup(func() {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			return
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return
		}
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100; i++ {
			if syscall.Kill(pid, 0) != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	})
}

func startOVS(t *testing.T, ns *nettest.NS) *ovs {
	dir := t.TempDir()
	o := &ovs{t: t, ns: ns, dir: dir}
	o.env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "OVS_DBDIR="+dir, "OVS_SYSCONFDIR="+dir)
	o.cmd("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), ovsSchema)
	o.daemon("ovsdb-server", filepath.Join(dir, "conf.db"), "--remote=punix:"+filepath.Join(dir, "db.sock"))
	o.vsctl("--no-wait", "init")
	o.daemon("ovs-vswitchd", "unix:"+filepath.Join(dir, "db.sock"))
	return o
}

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

var (
	memberRE = regexp.MustCompile(`(?m)^member: (\S+): (.*)$`)
	stateRE  = regexp.MustCompile(`(?m)^  (actor|partner) state: (.*)$`)
)

// lacpShow parses ovs-appctl lacp/show: per member, its status line ("current attached") and its
// actor and partner states.
func lacpShow(out string) map[string][3]string {
	m := map[string][3]string{}
	sections := memberRE.FindAllStringSubmatchIndex(out, -1)
	for i, s := range sections {
		end := len(out)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		name, status := out[s[2]:s[3]], out[s[4]:s[5]]
		var st [3]string
		st[0] = status
		for _, sm := range stateRE.FindAllStringSubmatch(out[s[0]:end], -1) {
			if sm[1] == "actor" {
				st[1] = sm[2]
			} else {
				st[2] = sm[2]
			}
		}
		m[name] = st
	}
	return m
}

// bondEnabled parses ovs-appctl bond/show: which members are enabled.
func bondEnabled(out string, member string) bool {
	return strings.Contains(out, "member "+member+": enabled")
}

// TestOVS: Open vSwitch (lacp=active, lacp-time=fast, a netdev-datapath bond over two veths) is
// the partner of a Controller driving a lag.Aggregate over AF_PACKET ports on the veths' other
// ends. Both members must be current, in sync, collecting and distributing on both sides and
// enabled in OVS's bond; then member 1's link goes down and both sides stop using it; it comes
// back.
func TestOVS(t *testing.T) {
	nettest.RequirePriv(t)
	requireOVS(t)
	nsO, nsL := nettest.NewNS(t, "ovs"), nettest.NewNS(t, "lacp")
	var ovsIf, ourIf [2]string
	for i := 0; i < 2; i++ {
		ovsIf[i], ourIf[i] = nettest.Veth(t, nsO, nsL, "o", "l")
	}
	o := startOVS(t, nsO)
	o.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "other_config:hwaddr=02:00:00:00:0f:01")
	o.vsctl("add-bond", "br0", "bond0", ovsIf[0], ovsIf[1], "lacp=active", "other_config:lacp-time=fast", "bond_mode=balance-tcp")

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

	up := func(m map[string][3]string, name string) bool {
		s := m[name]
		want := "activity timeout aggregation synchronized collecting distributing"
		return s[0] == "current attached" && s[1] == want && s[2] == want
	}
	start := time.Now()
	var show, bond string
	for {
		show, bond = o.appctl("lacp/show", "bond0"), o.appctl("bond/show", "bond0")
		m := lacpShow(show)
		if up(m, ovsIf[0]) && up(m, ovsIf[1]) && bondEnabled(bond, ovsIf[0]) && bondEnabled(bond, ovsIf[1]) &&
			agg.MemberUp(0) && agg.MemberUp(1) {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no aggregation after 30 s: ours %+v\nlacp/show:\n%s\nbond/show:\n%s%s", ctl.Status(), show, bond, o.logTail())
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
			if b := o.appctl("bond/show", "bond0"); !bondEnabled(b, ovsIf[1]) {
				ovsAt = time.Since(down)
			}
		}
		if time.Since(down) > 3*time.Second {
			t.Fatalf("member 1 still used 3 s after its link went down: ours %v, OVS %v\n%s", agg.MemberUp(1), ovsAt, o.appctl("bond/show", "bond0"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !agg.MemberUp(0) || !bondEnabled(o.appctl("bond/show", "bond0"), ovsIf[0]) {
		t.Fatalf("member 0 lost too")
	}
	t.Logf("member 1 link down: left out by us after %v, by OVS after %v", oursAt.Round(time.Millisecond), ovsAt.Round(time.Millisecond))

	// Back up: both members again.
	nsL.Exec(t, "ip", "link", "set", ourIf[1], "up")
	back := time.Now()
	for {
		m := lacpShow(o.appctl("lacp/show", "bond0"))
		if up(m, ovsIf[1]) && bondEnabled(o.appctl("bond/show", "bond0"), ovsIf[1]) && agg.MemberUp(1) {
			break
		}
		if time.Since(back) > 30*time.Second {
			t.Fatalf("member 1 not back: %+v\n%s", ctl.Status().Ports[1], o.appctl("lacp/show", "bond0"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("member 1 back in use on both sides %v after its link came up", time.Since(back).Round(10*time.Millisecond))

	// Member 1 goes silent while its link stays up: OVS times it out (it asked for the fast rate,
	// so after 3 s without an LACPDU) and we, hearing OVS's LACPDU saying so, leave it too.
	ctl.SetLinkUp(1, false)
	silent := time.Now()
	for bondEnabled(o.appctl("bond/show", "bond0"), ovsIf[1]) {
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
