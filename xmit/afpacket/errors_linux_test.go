package afpacket

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
)

// childEnv makes the test binary, run again by a test, open a port without privileges (see
// TestMain) instead of running the tests.
const childEnv = "WIRESPEED_AFPACKET_UNPRIVILEGED_OPEN"

func TestMain(m *testing.M) {
	if ifname := os.Getenv(childEnv); ifname != "" {
		os.Exit(openUnprivileged(ifname))
	}
	os.Exit(m.Run())
}

// openUnprivileged gives up root (every thread becomes uid and gid 65534, which clears every
// capability) when it has it, opens the interface and prints the error.
func openUnprivileged(ifname string) int {
	if os.Geteuid() == 0 {
		if err := syscall.Setresgid(65534, 65534, 65534); err != nil {
			fmt.Println("setresgid:", err)
			return 1
		}
		if err := syscall.Setresuid(65534, 65534, 65534); err != nil {
			fmt.Println("setresuid:", err)
			return 1
		}
	}
	p, err := Open(ifname, nil)
	if err == nil {
		p.Close()
		fmt.Println("opened")
		return 0
	}
	fmt.Printf("%v\n%v\n", err, errors.Is(err, os.ErrPermission))
	return 0
}

// unprivilegedOpen runs openUnprivileged in a child process and returns its output.
func unprivilegedOpen(t *testing.T, ifname string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+ifname)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

// TestOpenUnprivileged: without CAP_NET_RAW, Open says which interface, which capability, and how
// to get it; errors.Is still finds the permission error.
func TestOpenUnprivileged(t *testing.T) {
	out := unprivilegedOpen(t, "lo")
	t.Logf("unprivileged Open: %s", out)
	for _, s := range []string{"afpacket: open lo:", "operation not permitted", "CAP_NET_RAW", "root", "setcap cap_net_raw+ep", "\ntrue\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("the error does not say %q", s)
		}
	}
	if out == "opened\n" {
		t.Fatal("an unprivileged process opened an AF_PACKET socket")
	}
}

// TestOpenNoInterface: a missing interface is named and wraps xmit.ErrNoInterface (and ENODEV),
// with or without privileges.
func TestOpenNoInterface(t *testing.T) {
	name := nettest.Name("none") // unique: no such interface exists
	_, err := Open(name, nil)
	if !errors.Is(err, xmit.ErrNoInterface) || !errors.Is(err, unix.ENODEV) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open(%q) = %v: want the name, xmit.ErrNoInterface and ENODEV", name, err)
	}
	if os.Geteuid() == 0 {
		if out := unprivilegedOpen(t, name); !strings.Contains(out, name) || !strings.Contains(out, "no such network interface") {
			t.Fatalf("unprivileged Open(%q): %s", name, out)
		}
	}
	long := strings.Repeat("x", 16)
	if _, err := Open(long, nil); !errors.Is(err, xmit.ErrNoInterface) || !strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "15 bytes") {
		t.Fatalf("Open of a 16-byte name = %v", err)
	}
}
