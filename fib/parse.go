package fib

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by a ParseError for a line that cannot be parsed.
var ErrSyntax = errors.New("fib: syntax error")

// ErrSkipRoute may be returned by the next-hop function given to ParseIPRoute to leave a route out (it is
// counted in ParseStats.Skipped).
var ErrSkipRoute = errors.New("fib: skip route")

// maxLine is the longest line the parsers accept.
const maxLine = 64 << 10

// ParseError reports the line a parser stopped at.
type ParseError struct {
	Line int    // 1-based line number
	Text string // the line, cut to 100 bytes
	Err  error  // ErrSyntax, ErrNextHopRange, an error of the next-hop function, or a read error
}

func (e *ParseError) Error() string {
	return "fib: line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() + ": " + strconv.Quote(e.Text)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ParseStats counts what a parser read.
type ParseStats struct {
	Lines  int // lines read
	Routes int // routes returned
	IPv6   int // IPv6 routes skipped
	// Skipped counts the other lines and routes left out: blank lines, comments, and for ParseIPRoute the
	// routes of types that are not forwarded, of tables other than main and local, with a tos or from
	// selector, and those the next-hop function skipped with ErrSkipRoute.
	Skipped   int
	Multipath int // ip route: multipath routes, of which only the first next hop was kept
}

func lineError(n int, line []byte, err error) error {
	if len(line) > 100 {
		line = line[:100]
	}
	return &ParseError{Line: n, Text: string(line), Err: err}
}

// newScanner returns a line scanner over r, through gzip when r starts with the gzip magic number.
func newScanner(r io.Reader) (*bufio.Scanner, func() error, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	closeFn := func() error { return nil }
	var src io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, lineError(0, nil, err)
		}
		src, closeFn = zr, zr.Close
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	return sc, closeFn, nil
}

func scanError(sc *bufio.Scanner, lines int) error {
	if err := sc.Err(); err != nil {
		return lineError(lines+1, nil, err)
	}
	return nil
}

// ParseRoutes reads routes in the plain format, one per line:
//
//	a.b.c.d/len [nexthop]   # comment
//
// nexthop is a decimal next-hop index (0 when absent). The input may be gzip-compressed (detected by its
// magic number). Blank lines and comments are skipped; IPv6 prefixes are skipped and counted. Host bits of
// a prefix are ignored. On the first bad line it returns no routes and a *ParseError with the line number.
func ParseRoutes(r io.Reader) ([]Route, ParseStats, error) {
	var st ParseStats
	sc, closeFn, err := newScanner(r)
	if err != nil {
		return nil, st, err
	}
	defer closeFn()
	var routes []Route
	for sc.Scan() {
		st.Lines++
		line := sc.Bytes()
		body := line
		if i := bytes.IndexByte(body, '#'); i >= 0 {
			body = body[:i]
		}
		f := bytes.Fields(body)
		if len(f) == 0 {
			st.Skipped++
			continue
		}
		if len(f) > 2 {
			return nil, ParseStats{}, lineError(st.Lines, line, ErrSyntax)
		}
		p, err := netip.ParsePrefix(string(f[0]))
		if err != nil {
			return nil, ParseStats{}, lineError(st.Lines, line, ErrSyntax)
		}
		if !p.Addr().Is4() {
			st.IPv6++
			continue
		}
		var nh uint64
		if len(f) == 2 {
			nh, err = strconv.ParseUint(string(f[1]), 10, 32)
			if err != nil {
				return nil, ParseStats{}, lineError(st.Lines, line, ErrSyntax)
			}
			if nh > uint64(MaxNextHop) {
				return nil, ParseStats{}, lineError(st.Lines, line, ErrNextHopRange)
			}
		}
		routes = append(routes, Route{Prefix: p.Masked(), NextHop: uint32(nh)})
	}
	if err := scanError(sc, st.Lines); err != nil {
		return nil, ParseStats{}, err
	}
	st.Routes = len(routes)
	return routes, st, nil
}

// Load replaces the content of the table with the routes ParseRoutes reads from r (all or nothing: on
// an error the table is unchanged).
func (t *Table) Load(r io.Reader) (ParseStats, error) {
	routes, st, err := ParseRoutes(r)
	if err != nil {
		return st, err
	}
	return st, t.Replace(routes)
}

// IPRouteNextHop is what ParseIPRoute hands to its next-hop function for each route: the route type
// ("unicast", or "local", "blackhole", "unreachable", "prohibit", "throw"), the gateway (the zero Addr for a
// directly connected route; it may be IPv6 for an IPv4 route via an IPv6 next hop), and the device. It is
// comparable and can key a map.
type IPRouteNextHop struct {
	Type    string
	Gateway netip.Addr
	Dev     string
}

// ParseIPRoute reads the output of `ip -4 route show` (of one table) or of `ip route show table all`
// (both families, all tables; also with -o or -d), for example
//
//	default via 192.0.2.1 dev eth0 proto static metric 100
//	10.0.0.0/8 via 192.0.2.1 dev eth0 proto static
//	192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.5
//	blackhole 198.51.100.0/24 proto static
//	local 192.0.2.5 dev eth0 table local proto kernel scope host src 192.0.2.5
//	default via fe80::1 dev eth0 proto ra metric 1024 pref medium
//
// and calls nexthop for every IPv4 route to map its (type, gateway, device) to a next-hop index;
// HopSet.Assign numbers distinct ones in order. If nexthop returns ErrSkipRoute the route is left out; any
// other error stops parsing.
//
// IPv6 routes are skipped and counted in ParseStats.IPv6. A "default" route is IPv6 when its gateway
// (written "via" and an IPv6 address; an IPv4 route's IPv6 gateway is written "via inet6") or its src
// address is IPv6, or when it has a pref attribute (the kernel gives every IPv6 route one and no IPv4
// route); otherwise it is IPv4. Also skipped (and counted in ParseStats.Skipped): broadcast, multicast,
// anycast and nat routes; routes of tables other than main and local (`ip route show table all` names
// the table of every route outside main; Linux consults the others only through policy rules, which one
// table cannot express), and routes with a tos or from selector (they apply to some packets only). Of a
// multipath route (continued on indented "nexthop" lines) the first next hop is kept; "nh_info" lines
// (-d) are ignored. When a prefix appears more than once, a route of the local table wins (Linux looks
// there first), then the one with the lowest metric (the first one on a tie). The input may be
// gzip-compressed. On a bad line it returns no routes and a *ParseError with the line number.
func ParseIPRoute(r io.Reader, nexthop func(IPRouteNextHop) (uint32, error)) ([]Route, ParseStats, error) {
	var st ParseStats
	sc, closeFn, err := newScanner(r)
	if err != nil {
		return nil, st, err
	}
	defer closeFn()
	var (
		routes  []Route
		ranks   []uint64 // per route: local table first, then by metric
		seen    = map[netip.Prefix]int{}
		cur     ipRouteLine // the route being read (continuation lines may follow)
		curLine int
		curText []byte
	)
	flush := func() error {
		if !cur.valid {
			return nil
		}
		cur.valid = false
		if cur.fam == 6 {
			st.IPv6++
			return nil
		}
		if cur.dflt {
			cur.prefix = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
		if cur.table != "" && cur.table != "main" && cur.table != "local" || cur.selective {
			st.Skipped++
			return nil
		}
		nh, err := nexthop(cur.hop)
		if errors.Is(err, ErrSkipRoute) {
			st.Skipped++
			return nil
		}
		if err == nil && nh > MaxNextHop {
			err = ErrNextHopRange
		}
		if err != nil {
			return lineError(curLine, curText, err)
		}
		if cur.multipath {
			st.Multipath++
		}
		rank := cur.metric
		if cur.table != "local" {
			rank |= 1 << 32
		}
		if i, ok := seen[cur.prefix]; ok {
			if rank < ranks[i] {
				routes[i].NextHop, ranks[i] = nh, rank
			}
			return nil
		}
		seen[cur.prefix] = len(routes)
		routes = append(routes, Route{Prefix: cur.prefix, NextHop: nh})
		ranks = append(ranks, rank)
		return nil
	}
	for sc.Scan() {
		st.Lines++
		line := sc.Bytes()
		f := strings.Fields(string(line))
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			st.Skipped++
			continue
		}
		if line[0] == ' ' || line[0] == '\t' { // continuation of a multipath route
			if f[0] == "nh_info" { // ip -d: the nexthop object of an nhid route, also given by the route
				continue
			}
			if f[0] != "nexthop" {
				return nil, ParseStats{}, lineError(st.Lines, line, ErrSyntax)
			}
			if !cur.valid { // continuation of a skipped route
				continue
			}
			hop := ipRouteLine{fam: cur.fam}
			if err := hop.fields(f[1:]); err != nil {
				return nil, ParseStats{}, lineError(st.Lines, line, err)
			}
			cur.fam = hop.fam
			if !cur.gotHop && !cur.hop.Gateway.IsValid() && cur.hop.Dev == "" {
				cur.hop.Gateway, cur.hop.Dev, cur.gotHop = hop.hop.Gateway, hop.hop.Dev, true
			} else {
				cur.multipath = true
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, ParseStats{}, err
		}
		skip, err := cur.parse(f)
		if err != nil {
			return nil, ParseStats{}, lineError(st.Lines, line, err)
		}
		switch {
		case skip && cur.fam == 6:
			st.IPv6++
			cur.valid = false
		case skip:
			st.Skipped++
			cur.valid = false
		default:
			curLine, curText = st.Lines, append(curText[:0], line...)
		}
	}
	if err := scanError(sc, st.Lines); err != nil {
		return nil, ParseStats{}, err
	}
	if err := flush(); err != nil {
		return nil, ParseStats{}, err
	}
	st.Routes = len(routes)
	return routes, st, nil
}

// LoadIPRoute replaces the content of the table with the routes ParseIPRoute reads from r (all or
// nothing).
func (t *Table) LoadIPRoute(r io.Reader, nexthop func(IPRouteNextHop) (uint32, error)) (ParseStats, error) {
	routes, st, err := ParseIPRoute(r, nexthop)
	if err != nil {
		return st, err
	}
	return st, t.Replace(routes)
}

type ipRouteLine struct {
	valid     bool
	prefix    netip.Prefix
	dflt      bool // "default": the family is decided by the attributes (fam)
	fam       int  // 4 or 6; 0 while unknown (a default route)
	hop       IPRouteNextHop
	gotHop    bool // a "nexthop" group or a via/dev was seen
	multipath bool
	metric    uint64
	table     string // "" for main
	selective bool   // a tos or from selector
}

// parse reads the head line of a route; skip reports a route type that is not forwarded.
func (r *ipRouteLine) parse(f []string) (skip bool, err error) {
	*r = ipRouteLine{hop: IPRouteNextHop{Type: "unicast"}}
	switch f[0] {
	case "unicast", "local", "blackhole", "unreachable", "prohibit", "throw":
		r.hop.Type = f[0]
		f = f[1:]
	case "broadcast", "multicast", "anycast", "nat":
		skip = true
		f = f[1:]
	}
	if len(f) == 0 {
		return false, ErrSyntax
	}
	switch {
	case f[0] == "default":
		r.dflt = true
	case strings.Contains(f[0], "/"):
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			return false, ErrSyntax
		}
		r.prefix = p.Masked()
	default:
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			return false, ErrSyntax
		}
		r.prefix = netip.PrefixFrom(a, a.BitLen())
	}
	if !r.dflt {
		r.fam = famOf(r.prefix.Addr())
	}
	if err := r.fields(f[1:]); err != nil {
		return false, err
	}
	if r.fam == 6 {
		return true, nil
	}
	r.valid = !skip
	return skip, nil
}

func famOf(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// evidence records that an attribute shows the route to be of family fam (a default route's family
// is decided by its attributes).
func (r *ipRouteLine) evidence(fam int) {
	if r.fam == 0 {
		r.fam = fam
	}
}

// fields reads the attributes after the prefix (or after "nexthop" on a continuation line). Only via,
// dev, metric and nexthop matter; other attributes (proto, scope, src, table, ...) and flags are ignored.
func (r *ipRouteLine) fields(f []string) error {
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "via":
			i++
			other := 0 // "via inet6" (RTA_VIA): a gateway of the other family than the route's
			if i < len(f) && (f[i] == "inet" || f[i] == "inet6") {
				other = 4
				if f[i] == "inet6" {
					other = 6
				}
				i++
			}
			if i >= len(f) {
				return ErrSyntax
			}
			a, err := netip.ParseAddr(f[i])
			if err != nil {
				return ErrSyntax
			}
			if other != 0 {
				r.evidence(10 - other)
			} else {
				r.evidence(famOf(a))
			}
			if r.gotHop { // a later next hop of a multipath route
				r.multipath = true
				continue
			}
			r.hop.Gateway = a
		case "dev", "oif":
			i++
			if i >= len(f) {
				return ErrSyntax
			}
			if r.gotHop {
				continue
			}
			r.hop.Dev = f[i]
		case "src":
			i++
			if i >= len(f) {
				return ErrSyntax
			}
			a, err := netip.ParseAddr(f[i])
			if err != nil {
				return ErrSyntax
			}
			r.evidence(famOf(a))
		case "pref": // only IPv6 routes have one
			r.evidence(6)
		case "from": // a source prefix: only IPv6 routes have one
			r.evidence(6)
			r.selective = true
		case "tos", "dsfield":
			r.selective = true
		case "table":
			i++
			if i >= len(f) {
				return ErrSyntax
			}
			r.table = f[i]
		case "metric", "preference", "priority":
			i++
			if i >= len(f) {
				return ErrSyntax
			}
			m, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return ErrSyntax
			}
			r.metric = m
		case "nexthop":
			if r.gotHop {
				r.multipath = true
			}
			if r.hop.Gateway.IsValid() || r.hop.Dev != "" {
				r.gotHop = true
			}
		}
	}
	return nil
}

// HopSet numbers distinct next hops in the order they are first seen; its Assign method is a next-hop
// function for ParseIPRoute, after which Hops[i] is the next hop with index i. The zero value is ready to
// use. It is not safe for concurrent use.
type HopSet struct {
	Hops []IPRouteNextHop
	idx  map[IPRouteNextHop]uint32
}

// Assign returns the index of h, adding it if it is new.
func (s *HopSet) Assign(h IPRouteNextHop) (uint32, error) {
	if i, ok := s.idx[h]; ok {
		return i, nil
	}
	if uint32(len(s.Hops)) > MaxNextHop {
		return 0, ErrNextHopRange
	}
	if s.idx == nil {
		s.idx = make(map[IPRouteNextHop]uint32)
	}
	i := uint32(len(s.Hops))
	s.idx[h] = i
	s.Hops = append(s.Hops, h)
	return i, nil
}
