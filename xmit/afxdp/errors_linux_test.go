package afxdp

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
// TestMain) instead of running the tests: its value is the interface, then ",noprog" for
// Config.NoProgram.
const childEnv = "WIRESPEED_AFXDP_UNPRIVILEGED_OPEN"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(openUnprivileged(v))
	}
	os.Exit(m.Run())
}

// openUnprivileged gives up root (every thread becomes uid and gid 65534, which clears every
// capability) when it has it, opens the interface and prints the error.
func openUnprivileged(v string) int {
	ifname, opt, _ := strings.Cut(v, ",")
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
	p, err := Open(ifname, 0, &Config{NoProgram: opt == "noprog"})
	if err == nil {
		p.Close()
		fmt.Println("opened")
		return 0
	}
	fmt.Printf("%v\n%v\n", err, errors.Is(err, os.ErrPermission))
	return 0
}

// unprivilegedOpen runs openUnprivileged in a child process and returns its output.
func unprivilegedOpen(t *testing.T, v string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+v)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

// TestOpenUnprivileged: without privileges, Open says which interface, which capabilities the step
// that failed needs (the XDP program: CAP_BPF and CAP_NET_ADMIN; the socket: CAP_NET_RAW) and how
// to get them, without pointing at a Go API; errors.Is still finds the permission error.
func TestOpenUnprivileged(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []string
	}{
		{"lo", []string{"afxdp: open lo queue 0:", "operation not permitted", "CAP_BPF", "CAP_NET_ADMIN", "root", "setcap", "NoProgram", "\ntrue\n"}},
		{"lo,noprog", []string{"afxdp: open lo queue 0:", "operation not permitted", "CAP_NET_RAW", "root", "setcap cap_net_raw+ep", "\ntrue\n"}},
	} {
		out := unprivilegedOpen(t, c.v)
		t.Logf("unprivileged Open %s: %s", c.v, out)
		for _, s := range c.want {
			if !strings.Contains(out, s) {
				t.Errorf("%s: the error does not say %q", c.v, s)
			}
		}
		if strings.Contains(out, "RemoveMemlock") || out == "opened\n" {
			t.Errorf("%s: %s", c.v, out)
		}
	}
}

// TestOpenNoInterface: a missing interface is named and wraps xmit.ErrNoInterface (and ENODEV),
// with or without privileges.
func TestOpenNoInterface(t *testing.T) {
	name := nettest.Name("none") // unique: no such interface exists
	_, err := Open(name, 0, nil)
	if !errors.Is(err, xmit.ErrNoInterface) || !errors.Is(err, unix.ENODEV) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open(%q) = %v: want the name, xmit.ErrNoInterface and ENODEV", name, err)
	}
	if os.Geteuid() == 0 {
		if out := unprivilegedOpen(t, name); !strings.Contains(out, name) || !strings.Contains(out, "no such network interface") {
			t.Fatalf("unprivileged Open(%q): %s", name, out)
		}
	}
}
