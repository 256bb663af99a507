package fib

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mp(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestParseRoutes(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Route
		st      ParseStats
		errLine int
		err     error
	}{
		{name: "empty", in: "", st: ParseStats{}},
		{
			name: "mixed",
			in:   "# a comment\n10.0.0.0/8 3\n\n192.0.2.0/24\n2001:db8::/32 5\n  198.51.100.0/24 7 # indented\n0.0.0.0/0 65534\n",
			want: []Route{{mp("10.0.0.0/8"), 3}, {mp("192.0.2.0/24"), 0}, {mp("198.51.100.0/24"), 7}, {mp("0.0.0.0/0"), 65534}},
			st:   ParseStats{Lines: 7, Routes: 4, IPv6: 1, Skipped: 2},
		},
		{name: "crlf and tabs", in: "10.0.0.0/8\t1\r\n", want: []Route{{mp("10.0.0.0/8"), 1}}, st: ParseStats{Lines: 1, Routes: 1}},
		{name: "bad prefix", in: "10.0.0.0/8\n10.0.0.0/33\n", errLine: 2, err: ErrSyntax},
		{name: "no length", in: "10.0.0.1\n", errLine: 1, err: ErrSyntax},
		{name: "bad nexthop", in: "10.0.0.0/8 x\n", errLine: 1, err: ErrSyntax},
		{name: "negative nexthop", in: "10.0.0.0/8 -1\n", errLine: 1, err: ErrSyntax},
		{name: "nexthop range", in: "1.0.0.0/8 1\n2.0.0.0/8 65535\n", errLine: 2, err: ErrNextHopRange},
		{name: "extra field", in: "\n\n10.0.0.0/8 1 2\n", errLine: 3, err: ErrSyntax},
		{name: "bad v6", in: "2001:db8::/129\n", errLine: 1, err: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				in := []byte(tt.in)
				if gz {
					var b bytes.Buffer
					zw := gzip.NewWriter(&b)
					zw.Write(in)
					zw.Close()
					in = b.Bytes()
				}
				got, st, err := ParseRoutes(bytes.NewReader(in))
				if tt.err != nil {
					var pe *ParseError
					if !errors.Is(err, tt.err) || !errors.As(err, &pe) || pe.Line != tt.errLine || got != nil {
						t.Fatalf("gzip=%v: got %v, %v; want %v at line %d and no routes", gz, got, err, tt.err, tt.errLine)
					}
					continue
				}
				if err != nil || !slices.Equal(got, tt.want) || st != tt.st {
					t.Fatalf("gzip=%v: got %v %+v %v; want %v %+v", gz, got, st, err, tt.want, tt.st)
				}
			}
		})
	}
}

func TestLoadAllOrNothing(t *testing.T) {
	var tb Table
	if _, err := tb.Load(strings.NewReader("10.0.0.0/8 1\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Load(strings.NewReader("11.0.0.0/8 2\n12.0.0.0/8 3\nbad\n")); err == nil {
		t.Fatal("bad input accepted")
	}
	if nh, ok := tb.Lookup(netip.MustParseAddr("10.1.1.1")); !ok || nh != 1 || tb.Len() != 1 {
		t.Fatalf("table changed by a failed load: %d %v len %d", nh, ok, tb.Len())
	}
	if _, ok := tb.Lookup(netip.MustParseAddr("11.1.1.1")); ok {
		t.Fatal("half-applied load")
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("11.0.0.0/8 2\n"))
	zw.Close()
	st, err := tb.Load(&gz)
	if err != nil || st.Routes != 1 {
		t.Fatal(st, err)
	}
	if nh, _ := tb.Lookup(netip.MustParseAddr("11.1.1.1")); nh != 2 || tb.Len() != 1 {
		t.Fatal("gzip load did not replace the table")
	}
}

const ipRouteSample = `default via 192.0.2.1 dev eth0 proto static metric 100
default via 192.0.2.254 dev eth1 proto dhcp metric 50
10.0.0.0/8 via 192.0.2.1 dev eth0 proto static
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.5
198.51.100.7 via 192.0.2.1 dev eth0
blackhole 203.0.113.0/24 proto static
unreachable 203.0.114.0/24
broadcast 192.0.2.255 dev eth0 table local proto kernel scope link src 192.0.2.5
local 192.0.2.5 dev eth0 table local proto kernel scope host src 192.0.2.5
172.16.0.0/12 proto static metric 20
	nexthop via 192.0.2.1 dev eth0 weight 1
	nexthop via 192.0.2.254 dev eth1 weight 1
100.64.0.0/10 via inet6 fe80::1 dev eth1
2001:db8::/32 via 2001:db8::1 dev eth0 metric 1024 pref medium
`

func TestParseIPRoute(t *testing.T) {
	var hs HopSet
	routes, st, err := ParseIPRoute(strings.NewReader(ipRouteSample), hs.Assign)
	if err != nil {
		t.Fatal(err)
	}
	gw := netip.MustParseAddr
	wantHops := []IPRouteNextHop{
		{"unicast", gw("192.0.2.1"), "eth0"},
		{"unicast", gw("192.0.2.254"), "eth1"},
		{"unicast", netip.Addr{}, "eth0"},
		{"blackhole", netip.Addr{}, ""},
		{"unreachable", netip.Addr{}, ""},
		{"local", netip.Addr{}, "eth0"},
		{"unicast", gw("fe80::1"), "eth1"},
	}
	if !slices.Equal(hs.Hops, wantHops) {
		t.Fatalf("hops:\n%v\nwant\n%v", hs.Hops, wantHops)
	}
	want := []Route{
		{mp("0.0.0.0/0"), 1}, // the lower metric wins
		{mp("10.0.0.0/8"), 0},
		{mp("192.0.2.0/24"), 2},
		{mp("198.51.100.7/32"), 0},
		{mp("203.0.113.0/24"), 3},
		{mp("203.0.114.0/24"), 4},
		{mp("192.0.2.5/32"), 5},
		{mp("172.16.0.0/12"), 0}, // first next hop of the multipath route
		{mp("100.64.0.0/10"), 6},
	}
	if !slices.Equal(routes, want) {
		t.Fatalf("routes:\n%v\nwant\n%v", routes, want)
	}
	wantSt := ParseStats{Lines: 14, Routes: 9, IPv6: 1, Skipped: 1, Multipath: 1}
	if st != wantSt {
		t.Fatalf("stats %+v, want %+v", st, wantSt)
	}

	// Skipping through the callback, and loading.
	var tb Table
	st, err = tb.LoadIPRoute(strings.NewReader(ipRouteSample), func(h IPRouteNextHop) (uint32, error) {
		if h.Type != "unicast" {
			return 0, ErrSkipRoute
		}
		return 9, nil
	})
	if err != nil || st.Routes != 6 || st.Skipped != 4 || tb.Len() != 6 {
		t.Fatalf("LoadIPRoute: %+v %v len %d", st, err, tb.Len())
	}
	if _, ok := tb.Get(mp("203.0.113.0/24")); ok {
		t.Fatal("skipped blackhole route present")
	}
}

func TestParseIPRouteErrors(t *testing.T) {
	cbErr := errors.New("no such device")
	tests := []struct {
		name string
		in   string
		line int
		err  error
	}{
		{"bad prefix", "10.0.0.0/8 dev eth0\n10.0.0.0/40 dev eth0\n", 2, ErrSyntax},
		{"via without gateway", "10.0.0.0/8 via\n", 1, ErrSyntax},
		{"bad gateway", "10.0.0.0/8 via 1.2.3 dev eth0\n", 1, ErrSyntax},
		{"dev without name", "10.0.0.0/8 dev\n", 1, ErrSyntax},
		{"bad metric", "10.0.0.0/8 dev eth0 metric x\n", 1, ErrSyntax},
		{"type only", "blackhole\n", 1, ErrSyntax},
		{"bad continuation", "10.0.0.0/8 proto static\n\tvia 1.2.3.4\n", 2, ErrSyntax},
		{"callback error", "10.0.0.0/8 dev eth0\n10.1.0.0/16 dev bad0\n", 2, cbErr},
	}
	for _, tt := range tests {
		_, _, err := ParseIPRoute(strings.NewReader(tt.in), func(h IPRouteNextHop) (uint32, error) {
			if h.Dev == "bad0" {
				return 0, cbErr
			}
			return 1, nil
		})
		var pe *ParseError
		if !errors.Is(err, tt.err) || !errors.As(err, &pe) || pe.Line != tt.line {
			t.Errorf("%s: got %v, want %v at line %d", tt.name, err, tt.err, tt.line)
		}
	}
	// A next hop out of range from the callback.
	_, _, err := ParseIPRoute(strings.NewReader("10.0.0.0/8 dev eth0\n"), func(IPRouteNextHop) (uint32, error) { return MaxNextHop + 1, nil })
	if !errors.Is(err, ErrNextHopRange) {
		t.Errorf("got %v, want ErrNextHopRange", err)
	}
}

func TestHopSetFull(t *testing.T) {
	var hs HopSet
	for i := range MaxNextHop + 1 {
		if n, err := hs.Assign(IPRouteNextHop{Dev: "x", Gateway: u32ToAddr(i)}); err != nil || n != i {
			t.Fatalf("Assign %d = %d, %v", i, n, err)
		}
	}
	if _, err := hs.Assign(IPRouteNextHop{Dev: "y"}); !errors.Is(err, ErrNextHopRange) {
		t.Fatalf("got %v, want ErrNextHopRange", err)
	}
	if n, err := hs.Assign(IPRouteNextHop{Dev: "x", Gateway: u32ToAddr(7)}); err != nil || n != 7 {
		t.Fatalf("existing hop: %d %v", n, err)
	}
}

// The files in testdata/iproute are the output of `ip route show table all` (iproute2 6.1, Linux 6.x)
// in a network namespace with IPv4 and IPv6 routes of most kinds: plain, with -o (one line per route)
// and with -d (details). They hold the same routes, so they parse to the same result.
var tableAllWant = []struct {
	prefix string
	hop    IPRouteNextHop
}{
	{"0.0.0.0/0", IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "d0"}},
	{"10.0.0.0/8", IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "d0"}}, // multipath: the first
	{"100.64.0.0/10", IPRouteNextHop{"unicast", netip.MustParseAddr("fe80::1"), "d1"}},
	{"192.0.2.0/24", IPRouteNextHop{"unicast", netip.Addr{}, "d0"}},
	{"192.0.2.77/32", IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "d0"}},
	{"192.0.2.128/25", IPRouteNextHop{"unicast", netip.Addr{}, "d0"}},
	{"198.18.0.0/15", IPRouteNextHop{"unicast", netip.MustParseAddr("198.51.100.1"), "d1"}},
	{"198.20.0.0/16", IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "d0"}},
	{"198.21.0.0/16", IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "d0"}},
	{"198.22.0.0/16", IPRouteNextHop{"unicast", netip.Addr{}, "d1"}},
	{"198.23.0.0/16", IPRouteNextHop{"unicast", netip.Addr{}, "d2"}},
	{"198.51.100.0/24", IPRouteNextHop{"unicast", netip.Addr{}, "d1"}},
	{"203.0.113.0/24", IPRouteNextHop{"blackhole", netip.Addr{}, ""}},
	{"203.0.114.0/24", IPRouteNextHop{"unreachable", netip.Addr{}, ""}},
	{"203.0.115.0/24", IPRouteNextHop{"prohibit", netip.Addr{}, ""}},
	{"203.0.116.0/24", IPRouteNextHop{"throw", netip.Addr{}, ""}},
	{"203.0.117.0/24", IPRouteNextHop{"unicast", netip.Addr{}, "d0"}},
	{"203.0.118.0/24", IPRouteNextHop{"unicast", netip.MustParseAddr("10.9.9.9"), "d0"}},
	{"127.0.0.0/8", IPRouteNextHop{"local", netip.Addr{}, "lo"}},
	{"127.0.0.1/32", IPRouteNextHop{"local", netip.Addr{}, "lo"}},
	{"192.0.2.5/32", IPRouteNextHop{"local", netip.Addr{}, "d0"}},
	{"192.0.2.200/32", IPRouteNextHop{"local", netip.Addr{}, "d2"}},
	{"198.51.100.9/32", IPRouteNextHop{"local", netip.Addr{}, "d1"}},
}

func TestParseIPRouteTableAll(t *testing.T) {
	for _, name := range []string{"table-all.txt", "table-all-oneline.txt", "table-all-details.txt"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "iproute", name))
			if err != nil {
				t.Fatal(err)
			}
			var hs HopSet
			routes, st, err := ParseIPRoute(bytes.NewReader(data), hs.Assign)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range routes {
				got = append(got, fmt.Sprintf("%v %+v", r.Prefix, hs.Hops[r.NextHop]))
			}
			var want []string
			for _, w := range tableAllWant {
				want = append(want, fmt.Sprintf("%v %+v", mp(w.prefix), w.hop))
			}
			if !slices.Equal(got, want) {
				t.Errorf("routes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// Skipped: the routes of tables 100 and 200, the tos route, three broadcast routes. IPv6: 16
			// routes (two defaults among them).
			if st.Routes != len(tableAllWant) || st.IPv6 != 16 || st.Skipped != 6 || st.Multipath != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestParseIPRouteIPv6Default: an IPv6 default route ("default" with an IPv6 gateway, or with pref, which
// only IPv6 routes have) is an IPv6 route, whatever its metric and order.
func TestParseIPRouteIPv6Default(t *testing.T) {
	for _, in := range []string{
		"default via fe80::1 dev eth0 proto ra metric 1 pref medium\ndefault via 192.0.2.1 dev eth0 metric 100\n",
		"default via 192.0.2.1 dev eth0 metric 100\ndefault via fe80::1 dev eth0 proto ra metric 1 pref medium\n",
		"default dev wg0 metric 1 pref medium\ndefault via 192.0.2.1 dev eth0 metric 100\n",
		"default proto ra metric 1 pref medium\n\tnexthop via fe80::1 dev eth1 weight 1\n\tnexthop via fe80::2 dev eth1 weight 1\ndefault via 192.0.2.1 dev eth0 metric 100\n",
		"default dev eth1 metric 1 src 2001:db8::5\ndefault via 192.0.2.1 dev eth0 metric 100\n",
	} {
		var hs HopSet
		routes, st, err := ParseIPRoute(strings.NewReader(in), hs.Assign)
		want := IPRouteNextHop{"unicast", netip.MustParseAddr("192.0.2.1"), "eth0"}
		if err != nil || len(routes) != 1 || routes[0].Prefix != mp("0.0.0.0/0") || hs.Hops[routes[0].NextHop] != want || st.IPv6 != 1 {
			t.Errorf("%q: got %v %v %+v %v; want 0.0.0.0/0 via 192.0.2.1 and one IPv6 route", in, routes, hs.Hops, st, err)
		}
	}
	// An IPv4 default route via an IPv6 gateway is printed with "via inet6".
	routes, st, err := ParseIPRoute(strings.NewReader("default via inet6 fe80::1 dev eth0\n"), (&HopSet{}).Assign)
	if err != nil || len(routes) != 1 || routes[0].Prefix != mp("0.0.0.0/0") || st.IPv6 != 0 {
		t.Errorf("via inet6: %v %+v %v", routes, st, err)
	}
}

// TestParseIPRouteLocalTableFirst: a route of the local table wins over the same prefix in main (Linux
// looks in the local table first), whatever the metrics.
func TestParseIPRouteLocalTableFirst(t *testing.T) {
	in := "192.0.2.5 via 192.0.2.1 dev eth0\nlocal 192.0.2.5 dev eth0 table local proto kernel scope host src 192.0.2.5 metric 7\n"
	var hs HopSet
	routes, _, err := ParseIPRoute(strings.NewReader(in), hs.Assign)
	if err != nil || len(routes) != 1 || hs.Hops[routes[0].NextHop].Type != "local" {
		t.Fatalf("got %v %v %v; want the local route", routes, hs.Hops, err)
	}
}

// TestParseIPRouteRejects: input that is not ip route output is an error naming the line and the word
// at fault, never a route with a part of it dropped.
func TestParseIPRouteRejects(t *testing.T) {
	tests := []struct {
		in   string
		line int
		err  error
		word string // the error's text names it
	}{
		{"10.0.0.0/8 via192.0.2.1 dev eth0\n", 1, ErrSyntax, `"via192.0.2.1"`},
		{"10.0.0.0/8 gw 192.0.2.1\n", 1, ErrSyntax, `"gw"`},
		{"10.0.0.0/8 dev eth0\n10.1.0.0/16\n", 2, ErrSyntax, "without via or dev"},
		{"10.0.0.0/8 proto static\n", 1, ErrSyntax, "without via or dev"},
		{"10.0.0.0 /8 dev eth0\n", 1, ErrSyntax, `"/8"`},
		{"2001:db8::/32 garbage\n", 1, ErrSyntax, `"garbage"`},
		{"2001:db8::/32 dev eth0 metric\n", 1, ErrSyntax, `"metric" without a value`},
		{"\tnexthop via 192.0.2.1 dev eth0 weight 1\n10.0.0.0/8 dev eth0\n", 1, ErrSyntax, "without a route above"},
		{"# comment\n\tnh_info id 5\n", 2, ErrSyntax, "without a route above"},
		{"10.0.0.0/8 dev eth0\n\tvia 192.0.2.1\n", 2, ErrSyntax, `"via"`},
		{"10.1.2.3/16 dev eth0\n", 1, ErrSyntax, "host bits"},
		{"2001:db8::1/32 dev eth0\n", 1, ErrSyntax, "host bits"},
		{"10.0.0.0/8 via fe80::1 dev eth0\n", 1, ErrSyntax, `"fe80::1" in an IPv4 route`},
		{"2001:db8::/32 via 192.0.2.1 dev eth0\n", 1, ErrSyntax, `"192.0.2.1" in an IPv6 route`},
		{"10.0.0.0/8 via inet6 192.0.2.1 dev eth0\n", 1, ErrSyntax, `"192.0.2.1" is not an inet6 address`},
		{"10.0.0.0/8 dev eth0 src fe80::1\n", 1, ErrSyntax, `"fe80::1" in an IPv4 route`},
		{"10.0.0.0/8 dev eth0 pref medium\n", 1, ErrSyntax, `"pref" in an IPv4 route`},
		{"default via 192.0.2.1 dev eth0 pref medium\n", 1, ErrSyntax, `"pref" in an IPv4 route`},
		{"10.0.0.0/8 via fe80::1%eth0 dev eth0\n", 1, ErrSyntax, "zone"},
		{"10.0.0.0/8 dev eth0 dev eth1\n", 1, ErrSyntax, `second dev "eth1"`},
		{"10.0.0.0/8 dev eth0 metric x\n", 1, ErrSyntax, `metric "x"`},
		{"10.0.0.0/8 dev eth0 weight 1\n", 1, ErrSyntax, `"weight"`},
		{"10.0.0.0/8 dev eth0 mtu lock\n", 1, ErrSyntax, `"mtu" without a value`},
		{"10.0.0.0/8 dev eth0 rtt 20\n", 1, ErrSyntax, `rtt "20"`},
		{"10.0.0.0/8 proto static\n\tnexthop via 192.0.2.1 dev eth0 proto x\n", 2, ErrSyntax, `"proto" in a nexthop group`},
		{"10.0.0.0/8 proto static\n\tnexthop weight 1\n", 1, ErrSyntax, "nexthop group 1 without via or dev"},
		{"10.0.0.0/8 dev eth0\n\tnexthop via 192.0.2.1 dev eth0\n", 1, ErrSyntax, "both on the route and in nexthop groups"},
		{"10.0.0.0/8 proto static \\ via 1.2.3.4\n", 1, ErrSyntax, `"\\"`},
		{"blackhole 10.0.0.0/8 via 192.0.2.1\n", 1, ErrSyntax, "blackhole route with a gateway"},
		{"unreachable 10.0.0.0/8 dev eth0\n", 1, ErrSyntax, "unreachable route with a gateway or device"},
		{"prohibit 10.0.0.0/8\n\tnexthop dev eth0\n", 1, ErrSyntax, "prohibit route with nexthop groups"},
		{"local\n", 1, ErrSyntax, "without a destination"},
		{"bogus 10.0.0.0/8 dev eth0\n", 1, ErrSyntax, `"bogus"`},
		{"10.0.0.0/8 encap mpls 100 via 192.0.2.1 dev eth0\n", 1, ErrUnsupportedRoute, "encap"},
	}
	for _, tt := range tests {
		routes, _, err := ParseIPRoute(strings.NewReader(tt.in), (&HopSet{}).Assign)
		var pe *ParseError
		if !errors.Is(err, tt.err) || !errors.As(err, &pe) || pe.Line != tt.line || !strings.Contains(err.Error(), tt.word) || routes != nil {
			t.Errorf("%q: got %v, %v; want %v at line %d naming %s", tt.in, routes, err, tt.err, tt.line, tt.word)
		}
	}
}

// TestParseIPRouteDropTypes: blackhole, unreachable, prohibit and throw routes reach the next-hop function
// with their type, and Flags maps them to NextHopDrop (local routes to NextHopLocal), so that a caller
// installs a drop next hop for them.
func TestParseIPRouteDropTypes(t *testing.T) {
	in := "blackhole 10.1.0.0/16\nunreachable 10.2.0.0/16\nprohibit 10.3.0.0/16 proto static\nthrow 10.4.0.0/16\n" +
		"local 10.5.0.1 dev lo table local\n10.6.0.0/16 via 192.0.2.1 dev eth0\n"
	var hops NextHops
	var tb Table
	var hs HopSet
	if _, err := tb.LoadIPRoute(strings.NewReader(in), hs.Assign); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs.Hops {
		hops.Set(uint32(i), NextHop{Flags: h.Flags()})
	}
	for _, c := range []struct {
		addr  string
		flags NextHopFlags
	}{{"10.1.2.3", NextHopDrop}, {"10.2.2.3", NextHopDrop}, {"10.3.2.3", NextHopDrop}, {"10.4.2.3", NextHopDrop}, {"10.5.0.1", NextHopLocal}, {"10.6.2.3", 0}} {
		nh, ok := tb.Lookup(netip.MustParseAddr(c.addr))
		e, eok := hops.Get(nh)
		if !ok || !eok || e.Flags != c.flags {
			t.Errorf("%s: next hop %d %v, entry %+v; want flags %v", c.addr, nh, ok, e, c.flags)
		}
	}
}

// TestParseNextHopRange: every next hop above MaxNextHop is ErrNextHopRange, whatever its size.
func TestParseNextHopRange(t *testing.T) {
	for _, nh := range []string{"65535", "65536", "4294967295", "4294967296", "18446744073709551616", "99999999999999999999999"} {
		_, _, err := ParseRoutes(strings.NewReader("10.0.0.0/8 " + nh + "\n"))
		var pe *ParseError
		if !errors.Is(err, ErrNextHopRange) || errors.Is(err, ErrSyntax) || !errors.As(err, &pe) || pe.Line != 1 {
			t.Errorf("next hop %s: got %v, want ErrNextHopRange at line 1", nh, err)
		}
	}
	for _, nh := range []string{"-1", "+1", "0x10", "1e3", "x"} {
		if _, _, err := ParseRoutes(strings.NewReader("10.0.0.0/8 " + nh + "\n")); !errors.Is(err, ErrSyntax) {
			t.Errorf("next hop %s: got %v, want ErrSyntax", nh, err)
		}
	}
}

// TestParseRoutesRejects: host bits, IPv6 lines with a bad next hop, and extra words are errors.
func TestParseRoutesRejects(t *testing.T) {
	tests := []struct {
		in   string
		line int
		err  error
		word string
	}{
		{"10.0.0.0/8\n10.1.2.3/16 1\n", 2, ErrSyntax, "host bits"},
		{"2001:db8::/32 garbage\n", 1, ErrSyntax, `"garbage"`},
		{"2001:db8::/32 70000\n", 1, ErrNextHopRange, "70000"},
		{"2001:db8::1/32 1\n", 1, ErrSyntax, "host bits"},
		{"10.0.0.0/8 1 2\n", 1, ErrSyntax, `"2"`},
		{"10.0.0.0 /8\n", 1, ErrSyntax, `"10.0.0.0"`},
	}
	for _, tt := range tests {
		routes, _, err := ParseRoutes(strings.NewReader(tt.in))
		var pe *ParseError
		if !errors.Is(err, tt.err) || !errors.As(err, &pe) || pe.Line != tt.line || !strings.Contains(err.Error(), tt.word) || routes != nil {
			t.Errorf("%q: got %v, %v; want %v at line %d naming %s", tt.in, routes, err, tt.err, tt.line, tt.word)
		}
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

// TestParseGzipErrors: a truncated gzip stream is io.ErrUnexpectedEOF at the line it cuts (never a
// syntax error on the partial line, never a route from it); a bad header or checksum is a read error at
// line 1 or at the line after the last one read. Both parsers.
func TestParseGzipErrors(t *testing.T) {
	var plain, ipr strings.Builder
	for i := range 80 {
		fmt.Fprintf(&plain, "10.%d.%d.0/24 %d\n", i/256, i%256, i)
		fmt.Fprintf(&ipr, "10.%d.%d.0/24 via 192.0.2.%d dev eth%d\n", i/256, i%256, i%200, i%7)
	}
	parsers := map[string]func([]byte) error{
		"ParseRoutes": func(b []byte) error { _, _, err := ParseRoutes(bytes.NewReader(b)); return err },
		"ParseIPRoute": func(b []byte) error {
			_, _, err := ParseIPRoute(bytes.NewReader(b), (&HopSet{}).Assign)
			return err
		},
	}
	for name, parse := range parsers {
		text := plain.String()
		if name == "ParseIPRoute" {
			text = ipr.String()
		}
		z := gzipped(text)
		if err := parse(z); err != nil {
			t.Fatalf("%s: whole stream: %v", name, err)
		}
		for cut := 2; cut < len(z); cut++ {
			err := parse(z[:cut])
			var pe *ParseError
			if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &pe) || pe.Line < 1 || pe.Text != "" || errors.Is(err, ErrSyntax) {
				t.Fatalf("%s: stream cut to %d of %d bytes: got %v; want io.ErrUnexpectedEOF", name, cut, len(z), err)
			}
		}
		bad := bytes.Clone(z)
		bad[2] = 7 // not deflate: gzip.ErrHeader
		var pe *ParseError
		if err := parse(bad); !errors.Is(err, gzip.ErrHeader) || !errors.As(err, &pe) || pe.Line != 1 {
			t.Errorf("%s: bad header: got %v; want gzip.ErrHeader at line 1", name, err)
		}
		bad = bytes.Clone(z)
		bad[len(bad)-8] ^= 1 // the CRC-32
		if err := parse(bad); !errors.Is(err, gzip.ErrChecksum) || !errors.As(err, &pe) || pe.Line != 81 {
			t.Errorf("%s: bad checksum: got %v; want gzip.ErrChecksum at line 81", name, err)
		}
	}
}

// TestParseLineTooLong: a line over 64 KiB is bufio.ErrTooLong at its number.
func TestParseLineTooLong(t *testing.T) {
	in := "10.0.0.0/8 1\n" + strings.Repeat(" ", 70000) + "10.0.0.0/8 1\n"
	var pe *ParseError
	if _, _, err := ParseRoutes(strings.NewReader(in)); !errors.Is(err, bufio.ErrTooLong) || !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("got %v; want bufio.ErrTooLong at line 2", err)
	}
}
