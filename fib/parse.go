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
	Lines     int // lines read
	Routes    int // routes returned
	IPv6      int // IPv6 routes skipped
	Skipped   int // other lines left out: blank lines, comments, non-forwarding route types, ErrSkipRoute
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

// ParseIPRoute reads the output of `ip -4 route show` (any table; `ip route show table all` works too),
// for example
//
//	default via 192.0.2.1 dev eth0 proto static metric 100
//	10.0.0.0/8 via 192.0.2.1 dev eth0 proto static
//	192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.5
//	blackhole 198.51.100.0/24 proto static
//
// and calls nexthop for every route to map its (type, gateway, device) to a next-hop index; HopSet.Assign
// numbers distinct ones in order. If nexthop returns ErrSkipRoute the route is left out; any other error
// stops parsing. broadcast, multicast, anycast and nat routes are skipped; IPv6 routes are skipped and
// counted. Of a multipath route (continued on indented "nexthop" lines) the first next hop is kept. When a
// prefix appears more than once (different tables or metrics), the route with the lowest metric wins (the
// first one on a tie). The input may be gzip-compressed. On a bad line it returns no routes and a
// *ParseError with the line number.
func ParseIPRoute(r io.Reader, nexthop func(IPRouteNextHop) (uint32, error)) ([]Route, ParseStats, error) {
	var st ParseStats
	sc, closeFn, err := newScanner(r)
	if err != nil {
		return nil, st, err
	}
	defer closeFn()
	var (
		routes  []Route
		metrics []uint64
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
		if i, ok := seen[cur.prefix]; ok {
			if cur.metric < metrics[i] {
				routes[i].NextHop, metrics[i] = nh, cur.metric
			}
			return nil
		}
		seen[cur.prefix] = len(routes)
		routes = append(routes, Route{Prefix: cur.prefix, NextHop: nh})
		metrics = append(metrics, cur.metric)
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
			if f[0] != "nexthop" {
				return nil, ParseStats{}, lineError(st.Lines, line, ErrSyntax)
			}
			if !cur.valid { // continuation of a skipped route
				continue
			}
			var hop ipRouteLine
			if err := hop.fields(f[1:]); err != nil {
				return nil, ParseStats{}, lineError(st.Lines, line, err)
			}
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
		skip, v6, err := cur.parse(f)
		if err != nil {
			return nil, ParseStats{}, lineError(st.Lines, line, err)
		}
		switch {
		case v6:
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
	hop       IPRouteNextHop
	gotHop    bool // a "nexthop" group or a via/dev was seen
	multipath bool
	metric    uint64
}

// parse reads the head line of a route; skip reports a route type that is not forwarded.
func (r *ipRouteLine) parse(f []string) (skip, v6 bool, err error) {
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
		return false, false, ErrSyntax
	}
	switch {
	case f[0] == "default":
		r.prefix = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	case strings.Contains(f[0], "/"):
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			return false, false, ErrSyntax
		}
		r.prefix = p.Masked()
	default:
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			return false, false, ErrSyntax
		}
		r.prefix = netip.PrefixFrom(a, a.BitLen())
	}
	if err := r.fields(f[1:]); err != nil {
		return false, false, err
	}
	if !r.prefix.Addr().Is4() {
		return false, true, nil
	}
	r.valid = !skip
	return skip, false, nil
}

// fields reads the attributes after the prefix (or after "nexthop" on a continuation line). Only via,
// dev, metric and nexthop matter; other attributes (proto, scope, src, table, ...) and flags are ignored.
func (r *ipRouteLine) fields(f []string) error {
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "via":
			i++
			if i < len(f) && (f[i] == "inet" || f[i] == "inet6") {
				i++
			}
			if i >= len(f) {
				return ErrSyntax
			}
			a, err := netip.ParseAddr(f[i])
			if err != nil {
				return ErrSyntax
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
