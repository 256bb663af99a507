package nettest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OVS is a private Open vSwitch for one test: ovsdb-server and ovs-vswitchd in a namespace of the
// test, with every file, socket and pid file in a directory of the test (OVS_RUNDIR and the
// others point there), so tests running at once do not share a daemon, a database or a socket.
// Bridges use the userspace datapath (datapath_type=netdev): no kernel module is needed.
type OVS struct {
	t   testing.TB
	ns  *NS
	Dir string
	env []string
}

// ovsTools are the programs of Debian's openvswitch-switch and openvswitch-common.
var ovsTools = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-appctl"}

const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// RequireOVS skips t, with the reason, when Open vSwitch is not installed, or fails it under
// WIRESPEED_REQUIRE_PRIV=1 (.ci/run installs openvswitch-switch).
func RequireOVS(t testing.TB) {
	t.Helper()
	reason := ""
	for _, p := range ovsTools {
		if _, err := exec.LookPath(p); err != nil {
			reason = "needs Open vSwitch (" + p + " not found: apt-get install -y openvswitch-switch)"
			break
		}
	}
	if reason == "" {
		if _, err := os.Stat(ovsSchema); err != nil {
			reason = "needs Open vSwitch's schema: " + err.Error()
		}
	}
	if reason == "" {
		return
	}
	if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
		t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but this test %s", reason)
	}
	t.Skip(reason)
}

// StartOVS starts the daemons in ns; they are stopped (SIGTERM, then SIGKILL) when the test ends.
func StartOVS(t testing.TB, ns *NS) *OVS {
	t.Helper()
	dir := t.TempDir()
	o := &OVS{t: t, ns: ns, Dir: dir}
	o.env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "OVS_DBDIR="+dir, "OVS_SYSCONFDIR="+dir)
	o.Cmd("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), ovsSchema)
	o.daemon("ovsdb-server", filepath.Join(dir, "conf.db"), "--remote=punix:"+filepath.Join(dir, "db.sock"))
	o.Vsctl("--no-wait", "init")
	o.daemon("ovs-vswitchd", "unix:"+filepath.Join(dir, "db.sock"))
	return o
}

// Cmd runs a command with the daemons' environment and returns its output; a failure fails the
// test with the output and the tail of ovs-vswitchd's log.
func (o *OVS) Cmd(args ...string) string {
	o.t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Env = o.env
	out, err := c.CombinedOutput()
	if err != nil {
		o.t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, o.LogTail())
	}
	return string(out)
}

// LogTail is the last 3000 bytes of ovs-vswitchd's log.
func (o *OVS) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(o.Dir, "ovs-vswitchd.log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return "\nvswitchd.log:\n" + string(b)
}

// Vsctl runs ovs-vsctl against the test's database.
func (o *OVS) Vsctl(args ...string) string {
	o.t.Helper()
	return o.Cmd(append([]string{"ovs-vsctl", "--db=unix:" + filepath.Join(o.Dir, "db.sock"), "--timeout=10"}, args...)...)
}

// Appctl runs ovs-appctl against the test's ovs-vswitchd.
func (o *OVS) Appctl(args ...string) string {
	o.t.Helper()
	return o.Cmd(append([]string{"ovs-appctl", "-t", filepath.Join(o.Dir, "vswitchd.ctl")}, args...)...)
}

// daemon starts a detached OVS daemon in the namespace.
func (o *OVS) daemon(name string, args ...string) {
	o.t.Helper()
	pidfile := filepath.Join(o.Dir, name+".pid")
	full := append([]string{"ip", "netns", "exec", o.ns.Name, name}, args...)
	full = append(full, "--pidfile="+pidfile, "--detach", "--no-chdir",
		"--log-file="+filepath.Join(o.Dir, name+".log"), "--unixctl="+filepath.Join(o.Dir, strings.TrimPrefix(name, "ovs-")+".ctl"))
	o.Cmd(full...)
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

var (
	ovsMemberRE = regexp.MustCompile(`(?m)^member: (\S+): (.*)$`)
	ovsStateRE  = regexp.MustCompile(`(?m)^  (actor|partner) state: (.*)$`)
)

// LACPMember is one member of ovs-appctl lacp/show: its status line ("current attached") and its
// actor's and partner's states.
type LACPMember struct{ Status, Actor, Partner string }

// Negotiated is the state of both ends of a member collecting and distributing at the fast rate.
const Negotiated = "activity timeout aggregation synchronized collecting distributing"

// Up reports whether the member is current and attached, both ends collecting and distributing.
func (m LACPMember) Up() bool {
	return m.Status == "current attached" && m.Actor == Negotiated && m.Partner == Negotiated
}

// LACPShow parses ovs-appctl lacp/show, by member name.
func LACPShow(out string) map[string]LACPMember {
	m := map[string]LACPMember{}
	sections := ovsMemberRE.FindAllStringSubmatchIndex(out, -1)
	for i, s := range sections {
		end := len(out)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		st := LACPMember{Status: out[s[4]:s[5]]}
		for _, sm := range ovsStateRE.FindAllStringSubmatch(out[s[0]:end], -1) {
			if sm[1] == "actor" {
				st.Actor = sm[2]
			} else {
				st.Partner = sm[2]
			}
		}
		m[out[s[2]:s[3]]] = st
	}
	return m
}

// BondEnabled reports whether ovs-appctl bond/show's output has member enabled.
func BondEnabled(out string, member string) bool {
	return strings.Contains(out, "member "+member+": enabled")
}
