package nettest

import (
	"net"
	"strings"
	"testing"
)

func TestNamespacesAndVeth(t *testing.T) {
	RequirePriv(t)
	a, b := NewNS(t, "a"), NewNS(t, "b")
	va, vb := Veth(t, a, b, "va", "vb")
	if len(va) > 15 || len(vb) > 15 {
		t.Fatalf("names too long: %q %q", va, vb)
	}
	if out := a.Exec(t, "ip", "-o", "link", "show", va); !strings.Contains(out, "UP") {
		t.Fatalf("link not up: %s", out)
	}
	// Inside Do the thread sees the namespace's links; outside it does not.
	err := a.Do(func() error {
		_, err := net.InterfaceByName(va)
		return err
	})
	if err != nil {
		t.Fatalf("inside the namespace: %v", err)
	}
	if _, err := net.InterfaceByName(va); err == nil {
		t.Fatalf("%s visible outside its namespace", va)
	}
}
