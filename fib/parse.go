package fib

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by a ParseError for a line that cannot be parsed; the error's text names the word
// at fault.
var ErrSyntax = errors.New("fib: syntax error")

// ErrUnsupportedRoute is wrapped by a ParseError for an IPv4 route that ParseIPRoute reads but a Table
// cannot stand for: one with an encapsulation (encap), which takes more than a next hop.
var ErrUnsupportedRoute = errors.New("fib: unsupported route")

// ErrSkipRoute may be returned by the next-hop function given to ParseIPRoute to leave a route out (it is
// counted in ParseStats.Skipped).
var ErrSkipRoute = errors.New("fib: skip route")

// maxLine is the longest line the parsers accept, line ending included.
const maxLine = 64 << 10

// ParseError reports the line a parser stopped at.
type ParseError struct {
	Line int    // 1-based number of the bad line, or of the line that could not be read
	Text string // the line, cut to 100 bytes ("" when it could not be read)
	// Err is ErrSyntax or ErrNextHopRange (wrapped with details), ErrUnsupportedRoute, an error of the
	// next-hop function, or the read error (io.ErrUnexpectedEOF for a truncated gzip stream, gzip.ErrHeader,
	// gzip.ErrChecksum, bufio.ErrTooLong, or an error of the reader).
	Err error
}

func (e *ParseError) Error() string {
	s := "fib: line " + strconv.Itoa(e.Line) + ": " + strings.TrimPrefix(e.Err.Error(), "fib: ")
	if e.Text != "" {
		s += ": " + strconv.Quote(e.Text)
	}
	return s
}

func (e *ParseError) Unwrap() error { return e.Err }

// ParseStats counts what a parser read.
type ParseStats struct {
	Lines  int // lines read
	Routes int // routes returned
	IPv6   int // IPv6 routes skipped
	// Skipped counts the other lines and routes left out: blank lines, comments, and for ParseIPRoute the
	// routes of types that are not forwarded, of tables other than main and local, with a tos or from
	// selector, MPLS routes, and those the next-hop function skipped with ErrSkipRoute.
	Skipped   int
	Multipath int // ip route: multipath routes, of which only the first next hop was kept
}

func lineError(n int, line []byte, err error) error {
	if len(line) > 100 {
		line = line[:100]
	}
	return &ParseError{Line: n, Text: string(line), Err: err}
}

func syntaxError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)
}

// lineReader reads lines, through gzip when the input starts with the gzip magic number.
type lineReader struct {
	br    *bufio.Reader
	gz    *gzip.Reader
	lines int // lines read
}

func newLineReader(r io.Reader) (*lineReader, error) {
	br := bufio.NewReaderSize(r, maxLine)
	lr := &lineReader{br: br}
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, lr.readError(err, true)
		}
		lr.gz, lr.br = zr, bufio.NewReaderSize(zr, maxLine)
	}
	return lr, nil
}

// readError reports a read error at the line that could not be read.
func (lr *lineReader) readError(err error, gz bool) error {
	if gz {
		err = fmt.Errorf("reading gzip input: %w", err)
	}
	return &ParseError{Line: lr.lines + 1, Err: err}
}

// next returns the next line without its line ending, or io.EOF after the last one. A line cut short by
// a read error is not returned: the error is, as a *ParseError naming that line.
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, lr.readError(bufio.ErrTooLong, false)
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err != nil && err != io.EOF:
		return nil, lr.readError(err, lr.gz != nil)
	}
	lr.lines++
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}

func (lr *lineReader) close() {
	if lr.gz != nil {
		lr.gz.Close()
	}
}

// parsePrefix parses a prefix in canonical form: host bits set are an error.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if p != p.Masked() {
		return netip.Prefix{}, syntaxError("host bits set in %s (the prefix is %s)", s, p.Masked())
	}
	return p, nil
}

// parseNextHop parses a decimal next-hop index.
func parseNextHop(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) || err == nil && n > uint64(MaxNextHop) {
		return 0, fmt.Errorf("%w: %s is above %d", ErrNextHopRange, s, MaxNextHop)
	}
	if err != nil {
		return 0, syntaxError("next hop %q is not a decimal number", s)
	}
	return uint32(n), nil
}

// ParseRoutes reads routes in the plain format, one per line:
//
//	a.b.c.d/len [nexthop]   # comment
//
// nexthop is a decimal next-hop index, 0..MaxNextHop (0 when absent). The input may be gzip-compressed
// (detected by its magic number). Blank lines and comments are skipped; IPv6 prefixes are checked like
// IPv4 ones, then skipped and counted. A prefix must be in canonical form (no host bits set: 10.1.2.3/16
// is an error). On the first bad line it returns no routes and a *ParseError with the line number.
func ParseRoutes(r io.Reader) ([]Route, ParseStats, error) {
	var st ParseStats
	lr, err := newLineReader(r)
	if err != nil {
		return nil, st, err
	}
	defer lr.close()
	var routes []Route
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, ParseStats{}, err
		}
		st.Lines++
		body := line
		if i := bytes.IndexByte(body, '#'); i >= 0 {
			body = body[:i]
		}
		f := strings.Fields(string(body))
		if len(f) == 0 {
			st.Skipped++
			continue
		}
		if len(f) > 2 {
			return nil, ParseStats{}, lineError(st.Lines, line, syntaxError("unexpected word %q", f[2]))
		}
		p, err := parsePrefix(f[0])
		if err != nil {
			return nil, ParseStats{}, lineError(st.Lines, line, err)
		}
		var nh uint32
		if len(f) == 2 {
			if nh, err = parseNextHop(f[1]); err != nil {
				return nil, ParseStats{}, lineError(st.Lines, line, err)
			}
		}
		if !p.Addr().Is4() {
			st.IPv6++
			continue
		}
		routes = append(routes, Route{Prefix: p, NextHop: nh})
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
// ("unicast", "local", or one of the drop types "blackhole", "unreachable", "prohibit" and "throw"), the
// gateway (the zero Addr for a directly connected route; it may be IPv6 for an IPv4 route via an IPv6 next
// hop), and the device. A unicast or local route has a gateway or a device (or both); a route of a drop
// type has neither. It is comparable and can key a map.
type IPRouteNextHop struct {
	Type    string
	Gateway netip.Addr
	Dev     string
}

// Flags returns the NextHop flags the route's type calls for: NextHopDrop for blackhole, unreachable,
// prohibit and throw routes, NextHopLocal for local routes, 0 for unicast routes. A next-hop function
// maps the drop types to a next hop with NextHopDrop, so that frames routed there are dropped rather than
// forwarded.
func (h IPRouteNextHop) Flags() NextHopFlags {
	switch {
	case isDropType(h.Type):
		return NextHopDrop
	case h.Type == "local":
		return NextHopLocal
	}
	return 0
}

func isDropType(t string) bool {
	switch t {
	case "blackhole", "unreachable", "prohibit", "throw":
		return true
	}
	return false
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
// HopSet.Assign numbers distinct ones in order, and IPRouteNextHop.Flags tells the drop types apart.
// If nexthop returns ErrSkipRoute the route is left out; any other error stops parsing.
//
// IPv6 routes are checked like IPv4 ones, then skipped and counted in ParseStats.IPv6. A "default" route
// is IPv6 when its gateway (written "via" and an IPv6 address; an IPv4 route's IPv6 gateway is written
// "via inet6") or its src address is IPv6, or when it has a pref attribute (the kernel gives every IPv6
// route one and no IPv4 route); otherwise it is IPv4. Also skipped (and counted in ParseStats.Skipped):
// broadcast, multicast, anycast, nat and xresolve routes; routes of tables other than main and local
// (`ip route show table all` names the table of every route outside main; Linux consults the others only
// through policy rules, which one table cannot express); routes with a tos or from selector (they apply to
// some packets only); and MPLS routes (their destination is a label). Of a multipath route (continued on
// indented "nexthop" lines, or on the same line with -o) the first next hop not marked dead is kept;
// "nh_info" lines (-d) are ignored. When a prefix appears more than once, a route of the local table wins
// (Linux looks there first), then the one with the lowest metric (the first one on a tie).
//
// Every word must be one that ip route prints, with a well-formed value: an unknown word, a destination
// with host bits set, a gateway or src address of the wrong family, a unicast or local IPv4 route without
// via and dev, a drop-type IPv4 route with either, or a continuation line without a route above it is an
// error wrapping ErrSyntax that names the word; an IPv4 route with an encapsulation is an error wrapping
// ErrUnsupportedRoute. The input may be gzip-compressed. On the first bad line it returns no routes and a
// *ParseError with the line number.
func ParseIPRoute(r io.Reader, nexthop func(IPRouteNextHop) (uint32, error)) ([]Route, ParseStats, error) {
	p := ipRouteParser{nexthop: nexthop, seen: map[netip.Prefix]int{}}
	lr, err := newLineReader(r)
	if err != nil {
		return nil, ParseStats{}, err
	}
	defer lr.close()
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, ParseStats{}, err
		}
		p.st.Lines++
		if err := p.line(line); err != nil {
			return nil, ParseStats{}, err
		}
	}
	if err := p.flush(); err != nil {
		return nil, ParseStats{}, err
	}
	p.st.Routes = len(p.routes)
	return p.routes, p.st, nil
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

type ipRouteParser struct {
	nexthop func(IPRouteNextHop) (uint32, error)
	st      ParseStats
	routes  []Route
	ranks   []uint64 // per route: local table first, then by metric
	seen    map[netip.Prefix]int
	cur     ipRoute // the route being read (continuation lines may follow)
	have    bool    // cur holds a route
}

// ipRoute is one route: its head line and its continuation lines.
type ipRoute struct {
	line      int    // the head line's number
	text      []byte // the head line
	typ       string
	skip      bool // a type that is not forwarded
	mpls      bool // an MPLS route: not interpreted
	dflt      bool // "default": the family is decided by the attributes
	prefix    netip.Prefix
	fam       int // 4 or 6; 0 while unknown (a default route)
	head      ipHop
	hops      []ipHop // "nexthop" groups
	metric    uint64
	table     string // "" for main
	selective bool   // a tos or from selector
	encap     bool
}

type ipHop struct {
	gw   netip.Addr
	dev  string
	dead bool
}

func (h *ipHop) set() bool { return h.gw.IsValid() || h.dev != "" }

func (p *ipRouteParser) line(line []byte) error {
	f := strings.Fields(string(line))
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		p.st.Skipped++
		return nil
	}
	for i := 0; i < len(f); i++ { // ip -o writes a line break as "\", after a space or not ("pref medium\")
		if w := f[i]; len(w) > 1 && strings.HasSuffix(w, `\`) {
			f = append(f[:i+1], f[i:]...)
			f[i], f[i+1] = w[:len(w)-1], `\`
		}
	}
	if line[0] == ' ' || line[0] == '\t' { // a continuation line
		if !p.have {
			return lineError(p.st.Lines, line, syntaxError("continuation line %q without a route above it", f[0]))
		}
		switch {
		case f[0] == "nh_info": // ip -d: the nexthop object of an nhid route, also given by the route
			return nil
		case f[0] != "nexthop":
			return lineError(p.st.Lines, line, syntaxError("unknown continuation line %q", f[0]))
		case p.cur.mpls:
			return nil
		}
		if err := p.cur.attrs(f); err != nil {
			return lineError(p.st.Lines, line, err)
		}
		return nil
	}
	if err := p.flush(); err != nil {
		return err
	}
	if err := p.cur.parseHead(f); err != nil {
		return lineError(p.st.Lines, line, err)
	}
	p.have = true
	p.cur.line, p.cur.text = p.st.Lines, append(p.cur.text[:0], line...)
	return nil
}

// flush finishes the current route.
func (p *ipRouteParser) flush() error {
	if !p.have {
		return nil
	}
	p.have = false
	r := &p.cur
	switch {
	case r.mpls:
		p.st.Skipped++
		return nil
	case r.fam == 6:
		p.st.IPv6++
		return nil
	case r.skip, r.table != "" && r.table != "main" && r.table != "local", r.selective:
		p.st.Skipped++
		return nil
	case r.encap:
		return lineError(r.line, r.text, fmt.Errorf("%w: encap (the route needs an encapsulation)", ErrUnsupportedRoute))
	}
	if r.dflt {
		r.prefix = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	hop, err := r.pick()
	if err != nil {
		return lineError(r.line, r.text, err)
	}
	nh, err := p.nexthop(IPRouteNextHop{Type: r.typ, Gateway: hop.gw, Dev: hop.dev})
	if errors.Is(err, ErrSkipRoute) {
		p.st.Skipped++
		return nil
	}
	if err == nil && nh > MaxNextHop {
		err = fmt.Errorf("%w: the next-hop function returned %d", ErrNextHopRange, nh)
	}
	if err != nil {
		return lineError(r.line, r.text, err)
	}
	if len(r.hops) > 1 {
		p.st.Multipath++
	}
	rank := r.metric
	if r.table != "local" {
		rank |= 1 << 32
	}
	if i, ok := p.seen[r.prefix]; ok {
		if rank < p.ranks[i] {
			p.routes[i].NextHop, p.ranks[i] = nh, rank
		}
		return nil
	}
	p.seen[r.prefix] = len(p.routes)
	p.routes = append(p.routes, Route{Prefix: r.prefix, NextHop: nh})
	p.ranks = append(p.ranks, rank)
	return nil
}

// pick checks the next hops of an IPv4 route and returns the one to keep.
func (r *ipRoute) pick() (ipHop, error) {
	drop := isDropType(r.typ)
	if len(r.hops) == 0 {
		switch {
		case drop && r.head.set():
			return ipHop{}, syntaxError("%s route with a gateway or device", r.typ)
		case !drop && !r.head.set():
			return ipHop{}, syntaxError("%s route without via or dev", r.typ)
		}
		return r.head, nil
	}
	switch {
	case drop:
		return ipHop{}, syntaxError("%s route with nexthop groups", r.typ)
	case r.head.set():
		return ipHop{}, syntaxError("via or dev both on the route and in nexthop groups")
	}
	keep := -1
	for i := range r.hops {
		if !r.hops[i].set() {
			return ipHop{}, syntaxError("nexthop group %d without via or dev", i+1)
		}
		if keep < 0 && !r.hops[i].dead {
			keep = i
		}
	}
	return r.hops[max(keep, 0)], nil
}

// parseHead reads the head line of a route.
func (r *ipRoute) parseHead(f []string) error {
	*r = ipRoute{typ: "unicast", hops: r.hops[:0], text: r.text}
	switch f[0] {
	case "unicast", "local", "blackhole", "unreachable", "prohibit", "throw":
		r.typ = f[0]
		f = f[1:]
	case "broadcast", "multicast", "anycast", "nat", "xresolve":
		r.typ, r.skip = f[0], true
		f = f[1:]
	}
	if len(f) == 0 {
		return syntaxError("%s route without a destination", r.typ)
	}
	dst := f[0]
	switch {
	case dst == "default":
		r.dflt = true
	case isLabel(dst):
		r.mpls = true
		return nil
	case strings.Contains(dst, "/"):
		p, err := parsePrefix(dst)
		if err != nil {
			return err
		}
		r.prefix = p
	default:
		a, err := parseAddr(dst)
		if err != nil {
			return err
		}
		r.prefix = netip.PrefixFrom(a, a.BitLen())
	}
	if !r.dflt {
		r.fam = famOf(r.prefix.Addr())
	}
	return r.attrs(f[1:])
}

// isLabel reports whether s is an MPLS label (0..2^20-1), the destination of an MPLS route.
func isLabel(s string) bool {
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n < 1<<20
}

// parseAddr parses an address as ip route prints one (no zone).
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if a.Zone() != "" {
		return netip.Addr{}, syntaxError("address with a zone %q", s)
	}
	return a, nil
}

func famOf(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// family records that word shows the route to be of family fam: it decides a default route's family,
// and it must agree with a known one.
func (r *ipRoute) family(fam int, word string) error {
	if r.fam == 0 {
		r.fam = fam
	}
	if r.fam != fam {
		return syntaxError("%q in an IPv%d route", word, r.fam)
	}
	return nil
}

// Words of ip route's output, by how their values look.
var (
	// ipRouteFlags: route and next-hop flags (no value).
	ipRouteFlags = map[string]bool{
		"dead": true, "onlink": true, "pervasive": true, "offload": true, "trap": true, "notify": true,
		"linkdown": true, "unresolved": true, "rt_offload": true, "rt_trap": true, "rt_offload_failed": true,
	}
	// ipRouteNames: attributes whose value is a name or a number (proto, scope and table names come
	// from /etc/iproute2).
	ipRouteNames = map[string]bool{"proto": true, "scope": true, "table": true, "iif": true, "realm": true, "realms": true}
	// ipRouteCounts: attributes whose value is a decimal uint32.
	ipRouteCounts = map[string]bool{"metric": true, "preference": true, "priority": true, "nhid": true, "uid": true}
	// ipRouteMetrics: the route metrics (RTAX_*), each optionally followed by "lock", then a uint32;
	// ipRouteTimes: those whose value is a time ("20ms", "1.5s").
	ipRouteMetrics = map[string]bool{
		"mtu": true, "window": true, "ssthresh": true, "cwnd": true, "advmss": true, "reordering": true,
		"hoplimit": true, "initcwnd": true, "initrwnd": true, "quickack": true, "fastopen_no_cookie": true,
	}
	ipRouteTimes = map[string]bool{"rtt": true, "rttvar": true, "rto_min": true}
)

// attrs reads the attributes of a route after its destination, or a continuation line (which starts
// with "nexthop"). Within a "nexthop" group only next-hop words (via, dev, weight, realms, flags, encap)
// may follow.
func (r *ipRoute) attrs(f []string) error {
	hop := &r.head
	inGroup := false
	for i := 0; i < len(f); i++ {
		w := f[i]
		val := func() (string, error) { // the value after w
			if i+1 >= len(f) {
				return "", syntaxError("%q without a value", w)
			}
			i++
			return f[i], nil
		}
		switch {
		case w == "nexthop":
			r.hops = append(r.hops, ipHop{})
			hop, inGroup = &r.hops[len(r.hops)-1], true
			continue
		case w == `\`: // ip -o: the line break before a nexthop group
			if i+1 >= len(f) || f[i+1] != "nexthop" {
				return syntaxError("unexpected word %q", w)
			}
			continue
		case w == "encap": // the encapsulation's own syntax follows; the route is not interpreted
			r.encap = true
			if r.fam == 0 && len(f) > i+1 && strings.Contains(" "+strings.Join(f[i+1:], " ")+" ", " pref ") {
				r.fam = 6
			}
			return nil
		case ipRouteFlags[w]:
			if w == "dead" {
				hop.dead = true
			}
			continue
		}
		v, err := val()
		if err != nil {
			return err
		}
		switch {
		case w == "via":
			other := 0 // "via inet" or "via inet6" (RTA_VIA): usually a gateway of the other family
			if v == "inet" || v == "inet6" {
				other = 4
				if v == "inet6" {
					other = 6
				}
				if v, err = val(); err != nil {
					return err
				}
			}
			a, err := parseAddr(v)
			if err != nil {
				return err
			}
			if other != 0 && famOf(a) != other {
				return syntaxError("%q is not an inet%s address", v, map[int]string{4: "", 6: "6"}[other])
			}
			if other == 0 {
				if err := r.family(famOf(a), v); err != nil {
					return err
				}
			} else if r.fam == 0 {
				r.fam = 10 - other
			}
			if hop.gw.IsValid() {
				return syntaxError("second via %q", v)
			}
			hop.gw = a
		case w == "dev" || w == "oif":
			if hop.dev != "" {
				return syntaxError("second dev %q", v)
			}
			hop.dev = v
		case w == "weight" && inGroup:
			if n, err := strconv.ParseUint(v, 10, 32); err != nil || n == 0 || n > 256 {
				return syntaxError("weight %q is not 1..256", v)
			}
		case w == "realm" || w == "realms":
		case inGroup:
			return syntaxError("unknown word %q in a nexthop group", w)
		case ipRouteNames[w]:
			if w == "table" {
				r.table = v
			}
		case ipRouteCounts[w]:
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return syntaxError("%s %q is not a decimal uint32", w, v)
			}
			if w == "metric" || w == "preference" || w == "priority" {
				r.metric = n
			}
		case w == "src":
			a, err := parseAddr(v)
			if err != nil {
				return err
			}
			if err := r.family(famOf(a), v); err != nil {
				return err
			}
		case w == "from": // a source prefix (IPv6 only)
			p, err := netip.ParsePrefix(v)
			if err != nil {
				a, aerr := parseAddr(v)
				if aerr != nil {
					return aerr
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			if err := r.family(famOf(p.Addr()), v); err != nil {
				return err
			}
			r.selective = true
		case w == "tos" || w == "dsfield":
			r.selective = true
		case w == "pref":
			switch v {
			case "low", "medium", "high":
			default:
				if _, err := strconv.ParseUint(v, 10, 8); err != nil {
					return syntaxError("pref %q", v)
				}
			}
			if err := r.family(6, w); err != nil {
				return err
			}
		case w == "mark":
			if _, err := strconv.ParseUint(v, 0, 32); err != nil {
				return syntaxError("mark %q", v)
			}
		case w == "expires":
			if _, err := strconv.ParseInt(strings.TrimSuffix(v, "sec"), 10, 64); err != nil {
				return syntaxError("expires %q", v)
			}
		case w == "error":
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return syntaxError("error %q", v)
			}
		case w == "ttl-propogate" || w == "ttl-propagate":
			if v != "enabled" && v != "disabled" {
				return syntaxError("%s %q", w, v)
			}
		case ipRouteMetrics[w] || ipRouteTimes[w] || w == "congctl" || w == "features":
			if v == "lock" {
				if v, err = val(); err != nil {
					return err
				}
			}
			if err := metricValue(w, v); err != nil {
				return err
			}
			for w == "features" && i+1 < len(f) && isFeature(f[i+1]) {
				i++
			}
		default:
			return syntaxError("unknown word %q", w)
		}
	}
	return nil
}

func isFeature(s string) bool { return s == "ecn" || s == "tcp_usec_ts" || strings.HasPrefix(s, "0x") }

// metricValue checks the value of a route metric.
func metricValue(w, v string) error {
	var err error
	switch {
	case w == "congctl":
	case w == "features":
		if !isFeature(v) {
			err = ErrSyntax
		}
	case ipRouteTimes[w]:
		num, ok := strings.CutSuffix(v, "ms")
		if !ok {
			num, ok = strings.CutSuffix(v, "s")
		}
		if !ok {
			err = ErrSyntax
		} else {
			_, err = strconv.ParseFloat(num, 64)
		}
	default:
		_, err = strconv.ParseUint(v, 10, 32)
	}
	if err != nil {
		return syntaxError("%s %q", w, v)
	}
	return nil
}

// HopSet numbers distinct next hops in the order they are first seen; its Assign method is a next-hop
// function for ParseIPRoute, after which Hops[i] is the next hop with index i (Hops[i].Flags() tells
// whether frames routed there are to be dropped). The zero value is ready to use. It is not safe for
// concurrent use.
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
