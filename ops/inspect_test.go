package ops_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/ops"
)

func get(t *testing.T, h http.Handler, method, url string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, url, nil))
	if v != nil && rec.Code == http.StatusOK {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", url, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, rec.Body)
		}
	}
	return rec.Code
}

func u32(v uint32) *uint32 { return &v }

// TestRouteLookup: /route follows an address as the stage does: the router's own addresses and
// broadcast addresses first, then the longest prefix, its next hop, the egress interface, the
// MAC and the neighbour entry behind it.
func TestRouteLookup(t *testing.T) {
	g := newRig(t)
	knownTraffic(t, g)
	if err := g.routes.Insert(netip.MustParsePrefix("100.64.0.0/10"), 9); err != nil { // no such next hop
		t.Fatal(err)
	}
	if err := g.routes.Insert(netip.MustParsePrefix("10.0.2.128/25"), nhGateway); err != nil { // longer than 10.0.2.0/24
		t.Fatal(err)
	}
	h := ops.NewHandler(g.source())
	host1, gw := hostMAC[1].String(), "10.0.2.254"
	for _, c := range []struct {
		addr string
		want ops.RouteInfo
	}{
		{"10.0.2.2", ops.RouteInfo{Found: true, Prefix: "10.0.2.0/24", NextHop: u32(nhHost1), Interface: "port1", MAC: host1,
			Neighbour: &ops.NeighInfo{Interface: "port1", Addr: hostAddr[1], MAC: host1, State: "PERMANENT", NextHops: []uint32{nhHost1}}}},
		{"198.51.100.7", ops.RouteInfo{Found: true, Prefix: "198.51.100.0/24", NextHop: u32(nhGateway), Interface: "port1", Flags: []string{"unresolved"},
			Neighbour: &ops.NeighInfo{Interface: "port1", Addr: netip.MustParseAddr(gw), State: "INCOMPLETE", NextHops: []uint32{nhGateway}}}},
		{"10.0.2.200", ops.RouteInfo{Found: true, Prefix: "10.0.2.128/25", NextHop: u32(nhGateway), Interface: "port1", Flags: []string{"unresolved"},
			Neighbour: &ops.NeighInfo{Interface: "port1", Addr: netip.MustParseAddr(gw), State: "INCOMPLETE", NextHops: []uint32{nhGateway}}}},
		{"192.0.2.1", ops.RouteInfo{Found: true, Prefix: "192.0.2.0/24", NextHop: u32(nhBlackhole), Flags: []string{"blackhole"}}},
		{"100.100.1.1", ops.RouteInfo{Found: true, Prefix: "100.64.0.0/10", NextHop: u32(9), Missing: true}},
		{"203.0.113.1", ops.RouteInfo{}},
		{"10.0.1.1", ops.RouteInfo{Local: "address", Interface: "port0"}},
		{"10.0.2.255", ops.RouteInfo{Local: "broadcast", Interface: "port1"}},
		{"::ffff:10.0.1.1", ops.RouteInfo{Local: "address", Interface: "port0"}},
	} {
		var got ops.RouteInfo
		if code := get(t, h, "GET", "/route?addr="+c.addr, &got); code != 200 {
			t.Fatalf("%s: %d", c.addr, code)
		}
		c.want.Addr = netip.MustParseAddr(c.addr).Unmap()
		if !reflect.DeepEqual(got, c.want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			t.Errorf("%s:\n got %s\nwant %s", c.addr, g, w)
		}
	}
	for _, bad := range []string{"/route", "/route?addr=", "/route?addr=10.0.2", "/route?addr=2001:db8::1", "/route?addr=%zz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", bad, nil))
		var e struct{ Error string }
		if json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusBadRequest || !strings.Contains(e.Error, "addr") {
			t.Errorf("%s: %d %s, want 400 and an error about addr", bad, rec.Code, rec.Body)
		}
	}
	if code := get(t, h, "POST", "/route?addr=10.0.2.2", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}
	if code := get(t, h, "GET", "/nothing", nil); code != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", code)
	}
}

// TestPortsInterfacesNeighbours: the other endpoints list what the sources hold.
func TestPortsInterfacesNeighbours(t *testing.T) {
	g := newRig(t)
	knownTraffic(t, g)
	g.mems[0].Close()
	g.ports[0].Recv(g.in) // ErrClosed, counted
	src := g.source()
	h := ops.NewHandler(src)

	var ports []ops.PortInfo
	get(t, h, "GET", "/ports", &ports)
	if len(ports) != 2 {
		t.Fatalf("%d ports", len(ports))
	}
	for i, p := range ports {
		if p.Name != src.Ports[i].Name || p.Stats == nil || *p.Stats != src.Ports[i].Stats() || p.LinkUp == nil {
			t.Errorf("port %d: %+v", i, p)
		}
	}
	if ports[0].RecvErrors != 1 || !strings.Contains(ports[0].LastRecvError, "closed") || ports[1].RecvErrors != 0 {
		t.Errorf("errors: %+v %+v", ports[0], ports[1])
	}

	var ifs []ops.IfaceInfo
	get(t, h, "GET", "/interfaces", &ifs)
	if len(ifs) != 2 || ifs[1].Name != "port1" || ifs[1].MAC != routerMAC[1].String() || ifs[1].MTU != 1500 ||
		ifs[1].Addrs[0] != netip.MustParsePrefix("10.0.2.1/24") || ifs[1].Counters != g.router.IfaceStats(1) ||
		ifs[0].Counters.RxPackets != 125 {
		t.Errorf("interfaces: %+v", ifs)
	}

	var ns []ops.NeighInfo
	get(t, h, "GET", "/neighbours", &ns)
	want := []ops.NeighInfo{
		{Interface: "port0", Addr: hostAddr[0], MAC: hostMAC[0].String(), State: "PERMANENT", NextHops: []uint32{nhHost0}},
		{Interface: "port1", Addr: hostAddr[1], MAC: hostMAC[1].String(), State: "PERMANENT", NextHops: []uint32{nhHost1}},
		{Interface: "port1", Addr: gateway, State: "INCOMPLETE", NextHops: []uint32{nhGateway}},
	}
	if !reflect.DeepEqual(ns, want) {
		t.Errorf("neighbours:\n got %+v\nwant %+v", ns, want)
	}

	var index []string
	if get(t, h, "GET", "/", &index) != 200 || len(index) != 4 {
		t.Errorf("index: %v", index)
	}
	var empty []ops.PortInfo
	if get(t, ops.NewHandler(nil), "GET", "/ports", &empty) != 200 || empty == nil || len(empty) != 0 {
		t.Errorf("empty source: %v", empty)
	}
}
