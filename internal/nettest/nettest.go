// Package nettest builds throwaway network namespaces and veth pairs for wirespeed's privileged
// integration tests, and removes everything it made when the test ends.
//
// Tests that need root call RequirePriv first: without root they skip with the reason, unless the
// environment sets WIRESPEED_REQUIRE_PRIV=1 (as .ci/run does), which turns the skip into a failure so
// that CI cannot pass by skipping.
//
// Names are unique per test process (a short random prefix) and kept within the kernel's 15-byte
// interface name limit. Only the namespaces and links created here are touched; no address outside
// them is used.
package nettest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// RequirePriv skips t (or fails it under WIRESPEED_REQUIRE_PRIV=1) unless the process is root and
// can create network namespaces with the ip command.
func RequirePriv(t testing.TB) {
	t.Helper()
	reason := ""
	if os.Geteuid() != 0 {
		reason = "needs root (network namespaces, veth, raw sockets)"
	} else if _, err := exec.LookPath("ip"); err != nil {
		reason = "needs the ip command (iproute2)"
	}
	if reason == "" {
		return
	}
	if os.Getenv("WIRESPEED_REQUIRE_PRIV") == "1" {
		t.Fatalf("WIRESPEED_REQUIRE_PRIV=1 but this test %s", reason)
	}
	t.Skip(reason)
}

var (
	prefixOnce sync.Once
	prefix     string
	seqMu      sync.Mutex
	seq        int
)

// Name returns a unique short name with the given tag (at most 15 bytes: "ws" + 4 hex + tag[:5] + 2
// digits), for a namespace or an interface.
func Name(tag string) string {
	prefixOnce.Do(func() {
		var b [2]byte
		rand.Read(b[:])
		prefix = "ws" + hex.EncodeToString(b[:])
	})
	if len(tag) > 5 {
		tag = tag[:5]
	}
	seqMu.Lock()
	seq++
	n := seq
	seqMu.Unlock()
	return fmt.Sprintf("%s%s%02d", prefix, tag, n%100)
}

// Run runs a command and fails the test with its output if it fails.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NS is a network namespace made for one test.
type NS struct {
	Name string
}

// NewNS creates a namespace with its loopback up and deletes it (and so every link in it) when the
// test ends.
func NewNS(t testing.TB, tag string) *NS {
	t.Helper()
	n := &NS{Name: Name(tag)}
	Run(t, "ip", "netns", "add", n.Name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.Name).Run() })
	n.Exec(t, "ip", "link", "set", "lo", "up")
	return n
}

// Exec runs a command inside the namespace.
func (n *NS) Exec(t testing.TB, args ...string) string {
	t.Helper()
	return Run(t, append([]string{"ip", "netns", "exec", n.Name}, args...)...)
}

// Veth creates a veth pair with one end (nameA) in a and the other (nameB) in b, both up, and
// returns the two names. Deleting a namespace deletes its end, which deletes the pair.
func Veth(t testing.TB, a *NS, b *NS, tagA, tagB string) (string, string) {
	t.Helper()
	return VethQueues(t, a, b, tagA, tagB, 1)
}

// VethQueues is Veth with queues receive and transmit queues on each end (per-queue AF_XDP
// sockets, RSS-like spreading of the peer's flows: veth delivers a frame to the receive queue its
// sender's transmit queue picked).
func VethQueues(t testing.TB, a *NS, b *NS, tagA, tagB string, queues int) (string, string) {
	t.Helper()
	na, nb := Name(tagA), Name(tagB)
	q := []string{}
	if queues > 1 {
		q = []string{"numtxqueues", fmt.Sprint(queues), "numrxqueues", fmt.Sprint(queues)}
	}
	args := append(append([]string{"ip", "link", "add", na}, q...), "netns", a.Name, "type", "veth", "peer", "name", nb)
	args = append(append(args, q...), "netns", b.Name)
	Run(t, args...)
	a.Exec(t, "ip", "link", "set", na, "up")
	b.Exec(t, "ip", "link", "set", nb, "up")
	return na, nb
}
