package fib

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxFuzzOps caps the operations FuzzTableOps decodes from one input (the rest of a longer input is
// ignored), so that one execution stays well under a few milliseconds and the fuzzer keeps exploring
// rather than minimising long inputs.
const maxFuzzOps = 64

// fuzzLen decodes a prefix length from one byte. Lengths under 8 are rare (bytes 248..255): an update of
// a /L with L < 8 rewrites 2^(18-L) direct-pointing entries, which takes up to a few milliseconds.
func fuzzLen(b byte) int {
	if b >= 248 {
		return int(b & 7)
	}
	return 8 + int(b)%25
}

// fuzzOp encodes one FuzzTableOps operation (the seeds are written with it).
func fuzzOp(op byte, nh uint32, a uint32, l int) []byte {
	lb := byte(l - 8)
	if l < 8 {
		lb = 248 + byte(l)
	}
	return []byte{op | byte(nh)<<2, byte(a>>24) - 10, byte(a >> 16), byte(a >> 8), byte(a), lb}
}

// FuzzTableOps decodes the input into operations, 6 bytes each (at most maxFuzzOps), and checks the
// table against the naive reference (refLPM: one map per prefix length, searched longest first) after
// every lookup and, at the end, every lookup path (Lookup, LookupU32, LookupBatch, LookupBatch in place),
// Get, Len and Routes:
//
//	b[0]&3: 0 insert, 1 delete, 2 lookup, 3 start/finish a batch (changes then go through Apply)
//	b[0]>>2: next hop (0..63); b[1]&3 picks the first address byte (10..13), b[2..4] the rest
//	b[5]: prefix length (fuzzLen)
//
// The narrow address space makes prefixes nest and collide.
func FuzzTableOps(f *testing.F) {
	const ins, del, look, batch = 0, 1, 2, 3
	seed := func(ops ...[]byte) { f.Add(slices.Concat(ops...)) }
	seed(fuzzOp(ins, 0, 0x0A010203, 24), fuzzOp(ins, 1, 0x0A010209, 32), fuzzOp(look, 0, 0x0A010203, 0),
		fuzzOp(del, 0, 0x0A010203, 24), fuzzOp(look, 0, 0x0A010209, 0), fuzzOp(look, 0, 0x0A010203, 0))
	seed(fuzzOp(batch, 0, 0x0A000000, 8), fuzzOp(ins, 0, 0x0A000000, 0), fuzzOp(ins, 2, 0x0A010000, 16),
		fuzzOp(batch, 0, 0x0A000000, 8), fuzzOp(look, 0, 0x0A010505, 0), fuzzOp(del, 0, 0x0A000000, 0))
	seed(fuzzOp(ins, 3, 0x0A010200, 24), fuzzOp(ins, 4, 0x0A010280, 25), fuzzOp(ins, 5, 0x0A0102B8, 29),
		fuzzOp(look, 0, 0x0A0102B8, 0), fuzzOp(ins, 6, 0x0A0102BB, 32), fuzzOp(del, 0, 0x0A010280, 25),
		fuzzOp(look, 0, 0x0A0102B9, 0), fuzzOp(look, 0, 0x0A0102BA, 0)) // 40 addresses: one full batch of 32
	f.Fuzz(func(t *testing.T, data []byte) { fuzzTableOps(t, data) })
}

func fuzzTableOps(t *testing.T, data []byte) {
	data = data[:min(len(data), 6*maxFuzzOps)]
	tb := New()
	ref := newRef()
	var pending []Change
	batch := false
	var addrs []uint32
	var prefixes []netip.Prefix
	check := func(a uint32) {
		want, wok := ref.lookup(a)
		if got, ok := tb.LookupU32(a); got != want || ok != wok {
			t.Fatalf("LookupU32(%v) = %d,%v; want %d,%v", u32ToAddr(a), got, ok, want, wok)
		}
		if got, ok := tb.Lookup(u32ToAddr(a)); got != want || ok != wok {
			t.Fatalf("Lookup(%v) = %d,%v; want %d,%v", u32ToAddr(a), got, ok, want, wok)
		}
	}
	for ; len(data) >= 6; data = data[6:] {
		op, nh := data[0]&3, uint32(data[0]>>2)
		a := uint32(10+data[1]&3)<<24 | uint32(data[2])<<16 | uint32(data[3])<<8 | uint32(data[4])
		l := fuzzLen(data[5])
		addrs = append(addrs, a, a&maskOf(l), a|^maskOf(l), a&maskOf(l)-1, a|^maskOf(l)+1)
		p := pfx(a, l)
		switch op {
		case 0:
			ref.insert(a, l, nh)
			prefixes = append(prefixes, p)
			if batch {
				pending = append(pending, Change{Prefix: p, NextHop: nh})
			} else if err := tb.Insert(p, nh); err != nil {
				t.Fatal(err)
			}
		case 1:
			existed := ref.delete(a, l)
			prefixes = append(prefixes, p)
			if batch {
				pending = append(pending, Change{Prefix: p, Delete: true})
			} else if err := tb.Delete(p); existed != (err == nil) || (err != nil && !errors.Is(err, ErrNotFound)) {
				t.Fatalf("Delete(%v) = %v, prefix existed: %v", p, err, existed)
			}
		case 2:
			if !batch {
				check(a)
			}
		case 3:
			if batch {
				if err := tb.Apply(pending); err != nil {
					t.Fatal(err)
				}
				pending = pending[:0]
			}
			batch = !batch
		}
	}
	if err := tb.Apply(pending); err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(addrs))
	tb.LookupBatch(addrs, out)
	inPlace := slices.Clone(addrs)
	tb.LookupBatch(inPlace, inPlace)
	for i, a := range addrs {
		check(a)
		want, _ := ref.lookup(a)
		if out[i] != want || inPlace[i] != want {
			t.Fatalf("LookupBatch(%v) = %d, in place %d; want %d", u32ToAddr(a), out[i], inPlace[i], want)
		}
	}
	for _, p := range prefixes {
		a, l, _ := prefixKey(p)
		want, wok := ref.m[l][a]
		if !wok {
			want = NoRoute
		}
		if got, ok := tb.Get(p); got != want || ok != wok {
			t.Fatalf("Get(%v) = %d,%v; want %d,%v", p, got, ok, want, wok)
		}
	}
	if tb.Len() != ref.len() || !slices.Equal(tb.Routes(), ref.routes()) {
		t.Fatalf("Len %d, Routes() = %v; want %d, %v", tb.Len(), tb.Routes(), ref.len(), ref.routes())
	}
}

// decompressed returns the text the parsers read from data: data itself, or what gzip gives when data
// starts with the gzip magic number (with the read error, if any, after the bytes read before it).
func decompressed(data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// splitLines splits text as the parsers do: the lines, whether the last one has no line ending, and
// the number of the first line that is too long (0 if none; the lines before it are returned).
func splitLines(text []byte) (lines []string, unterminated bool, tooLong int) {
	s := string(text)
	for n := 1; s != ""; n++ {
		line, rest, found := strings.Cut(s, "\n")
		if len(line)+1 > maxLine || !found && len(line) >= maxLine {
			return lines, false, n
		}
		lines = append(lines, strings.TrimSuffix(line, "\r"))
		s, unterminated = rest, !found
	}
	return lines, unterminated, 0
}

// refParseRoutes is a naive reading of the plain format, the oracle of FuzzParseRoutes: the routes and
// stats, or the number of the first line that is bad or cannot be read (0 if none).
func refParseRoutes(data []byte) ([]Route, ParseStats, int) {
	text, readErr := decompressed(data)
	lines, unterminated, tooLong := splitLines(text)
	if readErr != nil && unterminated {
		lines = lines[:len(lines)-1] // the line a read error cuts is not read
	}
	var routes []Route
	var st ParseStats
	for i, line := range lines {
		st.Lines++
		body, _, _ := strings.Cut(line, "#")
		f := strings.Fields(body)
		if len(f) == 0 {
			st.Skipped++
			continue
		}
		p, err := netip.ParsePrefix(f[0])
		if err != nil || p != p.Masked() || len(f) > 2 {
			return nil, ParseStats{}, i + 1
		}
		var nh uint64
		if len(f) == 2 {
			if nh, err = strconv.ParseUint(f[1], 10, 64); err != nil || nh > uint64(MaxNextHop) {
				return nil, ParseStats{}, i + 1
			}
		}
		if !p.Addr().Is4() {
			st.IPv6++
			continue
		}
		routes = append(routes, Route{p, uint32(nh)})
	}
	switch {
	case tooLong != 0:
		return nil, ParseStats{}, tooLong
	case readErr != nil:
		return nil, ParseStats{}, len(lines) + 1
	}
	st.Routes = len(routes)
	return routes, st, 0
}

// FuzzParseRoutes: ParseRoutes never panics, agrees with the naive reading refParseRoutes (the same
// routes and stats, or an error at the same line), and what it accepts loads and survives a round trip
// through the text format.
func FuzzParseRoutes(f *testing.F) {
	f.Add([]byte("10.0.0.0/8 1\n# c\n\n192.0.2.0/24\n2001:db8::/32 3\n"))
	f.Add([]byte("0.0.0.0/0 65534 # default\n1.2.3.4/32\t7\r\n"))
	f.Add([]byte("10.0.0.0/33\n"))
	f.Add([]byte("10.1.2.3/16 1\n10.0.0.0/8 65535\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add(gzipped("10.0.0.0/8 1\n192.0.2.0/24 2\n")[:30])
	f.Fuzz(func(t *testing.T, data []byte) {
		routes, st, err := ParseRoutes(bytes.NewReader(data))
		want, wantSt, badLine := refParseRoutes(data)
		if err != nil {
			var pe *ParseError
			if routes != nil || !errors.As(err, &pe) {
				t.Fatalf("bad error result: %v %v", routes, err)
			}
			if pe.Line != badLine {
				t.Fatalf("error %v at line %d; the reference finds line %d bad", err, pe.Line, badLine)
			}
			return
		}
		if badLine != 0 || !slices.Equal(routes, want) || st != wantSt {
			t.Fatalf("got %v %+v; the reference gives %v %+v, bad line %d", routes, st, want, wantSt, badLine)
		}
		var text strings.Builder
		for _, r := range routes {
			fmt.Fprintf(&text, "%v %d\n", r.Prefix, r.NextHop)
		}
		again, _, err := ParseRoutes(strings.NewReader(text.String()))
		if err != nil || !slices.Equal(again, routes) {
			t.Fatalf("round trip: %v, %v", err, again)
		}
		var tb Table
		if err := tb.Replace(routes); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseIPRoute: ParseIPRoute never panics; what it accepts is valid (IPv4, canonical, unique
// prefixes; next hops the function assigned), comes from the input (each prefix, gateway and device is
// a word of the input, as net/netip reads it), and survives a round trip through the ip route format.
func FuzzParseIPRoute(f *testing.F) {
	f.Add([]byte(ipRouteSample))
	f.Add([]byte("default via 192.0.2.1 dev eth0\n10.0.0.0/8 proto static\n\tnexthop via 1.2.3.4 dev x\n"))
	f.Add([]byte("blackhole 10.0.0.0/8\nbroadcast 1.2.3.4 dev e\n10.0.0.0/8 via inet6 fe80::1 dev e metric 5\n"))
	f.Add([]byte("default via fe80::1 dev eth0 proto ra metric 1024 pref medium\n10.0.0.0/8 proto static \\\tnexthop via 192.0.2.1 dev d0 weight 1 \\\tnexthop via 198.51.100.1 dev d1 weight 2\n"))
	for _, name := range []string{"table-all.txt", "table-all-oneline.txt", "table-all-details.txt"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "iproute", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var hs HopSet
		routes, st, err := ParseIPRoute(bytes.NewReader(data), hs.Assign)
		if err != nil {
			var pe *ParseError
			if routes != nil || !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("bad error result: %v %v", routes, err)
			}
			return
		}
		text, rerr := decompressed(data)
		lines, _, tooLong := splitLines(text)
		if rerr != nil || tooLong != 0 || st.Lines != len(lines) || st.Routes != len(routes) {
			t.Fatalf("accepted with read error %v, too long line %d; %d lines, stats %+v", rerr, tooLong, len(lines), st)
		}
		words := map[string]bool{}
		prefixes := map[netip.Prefix]bool{}
		addrs := map[netip.Addr]bool{}
		for _, w := range strings.Fields(string(text)) {
			w = strings.TrimSuffix(w, "\\")
			words[w] = true
			if p, err := netip.ParsePrefix(w); err == nil {
				prefixes[p] = true
			} else if a, err := netip.ParseAddr(w); err == nil {
				addrs[a] = true
				prefixes[netip.PrefixFrom(a, a.BitLen())] = true
			} else if w == "default" {
				prefixes[netip.PrefixFrom(netip.IPv4Unspecified(), 0)] = true
			}
		}
		seen := map[netip.Prefix]bool{}
		var again strings.Builder
		for _, r := range routes {
			if !r.Prefix.Addr().Is4() || r.Prefix != r.Prefix.Masked() || int(r.NextHop) >= len(hs.Hops) || seen[r.Prefix] {
				t.Fatalf("invalid or duplicate route %v (%d hops)", r, len(hs.Hops))
			}
			seen[r.Prefix] = true
			h := hs.Hops[r.NextHop]
			drop := h.Flags()&NextHopDrop != 0
			if !prefixes[r.Prefix] || h.Gateway.IsValid() && !addrs[h.Gateway] || h.Dev != "" && !words[h.Dev] ||
				drop == (h.Gateway.IsValid() || h.Dev != "") {
				t.Fatalf("route %v %+v: not from the input, or drop type %v with a next hop", r.Prefix, h, drop)
			}
			fmt.Fprintf(&again, "%s %v", h.Type, r.Prefix)
			if h.Gateway.Is4() {
				fmt.Fprintf(&again, " via %v", h.Gateway)
			} else if h.Gateway.IsValid() {
				fmt.Fprintf(&again, " via inet6 %v", h.Gateway)
			}
			if h.Dev != "" {
				fmt.Fprintf(&again, " dev %s", h.Dev)
			}
			again.WriteString("\n")
		}
		var hs2 HopSet
		routes2, _, err := ParseIPRoute(strings.NewReader(again.String()), hs2.Assign)
		if err != nil || len(routes2) != len(routes) {
			t.Fatalf("round trip of %q: %v, %v", again.String(), routes2, err)
		}
		for i, r := range routes2 {
			if r.Prefix != routes[i].Prefix || hs2.Hops[r.NextHop] != hs.Hops[routes[i].NextHop] {
				t.Fatalf("round trip: route %d is %v %+v, was %v %+v", i, r.Prefix, hs2.Hops[r.NextHop], routes[i].Prefix, hs.Hops[routes[i].NextHop])
			}
		}
	})
}
