package fib

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzTableOps decodes the input into operations, 6 bytes each, and checks the table against the naive
// reference after every lookup and at the end:
//
//	b[0]&3: 0 insert, 1 delete, 2 lookup, 3 start/finish a batch (changes then go through Apply)
//	b[0]>>2: next hop (0..63); b[1]&3 picks the first address byte (10..13), b[2..4] the rest; b[5]%33: length
//
// The narrow address space makes prefixes nest and collide.
func FuzzTableOps(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 24, 4, 0, 1, 2, 9, 32, 2, 0, 1, 2, 3, 0, 1, 0, 1, 2, 3, 24, 2, 0, 1, 2, 3, 0})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 1, 0, 0, 0, 16, 3, 0, 0, 0, 0, 0, 2, 1, 0, 5, 5, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		tb := New()
		ref := newRef()
		var pending []Change
		batch := false
		var addrs []uint32
		check := func(a uint32) {
			want, wok := ref.lookup(a)
			got, ok := tb.LookupU32(a)
			if got != want || ok != wok {
				t.Fatalf("LookupU32(%v) = %d,%v; want %d,%v", u32ToAddr(a), got, ok, want, wok)
			}
		}
		for ; len(data) >= 6; data = data[6:] {
			op, nh := data[0]&3, uint32(data[0]>>2)
			a := uint32(10+data[1]&3)<<24 | uint32(data[2])<<16 | uint32(data[3])<<8 | uint32(data[4])
			l := int(data[5] % 33)
			addrs = append(addrs, a, a&maskOf(l), a|^maskOf(l))
			p := pfx(a, l)
			switch op {
			case 0:
				ref.insert(a, l, nh)
				if batch {
					pending = append(pending, Change{Prefix: p, NextHop: nh})
				} else if err := tb.Insert(p, nh); err != nil {
					t.Fatal(err)
				}
			case 1:
				existed := ref.delete(a, l)
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
		for i, a := range addrs {
			check(a)
			if want, _ := ref.lookup(a); out[i] != want {
				t.Fatalf("LookupBatch(%v) = %d; want %d", u32ToAddr(a), out[i], want)
			}
		}
		if !slices.Equal(tb.Routes(), ref.routes()) {
			t.Fatalf("Routes() = %v; want %v", tb.Routes(), ref.routes())
		}
	})
}

// FuzzParseRoutes: ParseRoutes never panics; what it accepts is valid, loads, and survives a round trip
// through the text format.
func FuzzParseRoutes(f *testing.F) {
	f.Add([]byte("10.0.0.0/8 1\n# c\n\n192.0.2.0/24\n2001:db8::/32 3\n"))
	f.Add([]byte("0.0.0.0/0 65534 # default\n1.2.3.4/32\t7\r\n"))
	f.Add([]byte("10.0.0.0/33\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		routes, st, err := ParseRoutes(bytes.NewReader(data))
		if err != nil {
			if routes != nil {
				t.Fatal("routes returned with an error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		if st.Routes != len(routes) {
			t.Fatalf("stats %+v for %d routes", st, len(routes))
		}
		var text strings.Builder
		for _, r := range routes {
			if !r.Prefix.Addr().Is4() || r.Prefix != r.Prefix.Masked() || r.NextHop > MaxNextHop {
				t.Fatalf("invalid route %v", r)
			}
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

// FuzzParseIPRoute: ParseIPRoute never panics and returns only valid IPv4 routes with assigned next hops.
func FuzzParseIPRoute(f *testing.F) {
	f.Add([]byte(ipRouteSample))
	f.Add([]byte("default via 192.0.2.1 dev eth0\n10.0.0.0/8 proto static\n\tnexthop via 1.2.3.4 dev x\n"))
	f.Add([]byte("blackhole 10.0.0.0/8\nbroadcast 1.2.3.4 dev e\n10.0.0.0/8 via inet6 fe80::1 dev e metric 5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var hs HopSet
		routes, _, err := ParseIPRoute(bytes.NewReader(data), hs.Assign)
		if err != nil {
			var pe *ParseError
			if routes != nil || !errors.As(err, &pe) {
				t.Fatalf("bad error result: %v %v", routes, err)
			}
			return
		}
		seen := map[Route]bool{}
		for _, r := range routes {
			if !r.Prefix.Addr().Is4() || r.Prefix != r.Prefix.Masked() || int(r.NextHop) >= len(hs.Hops) {
				t.Fatalf("invalid route %v (%d hops)", r, len(hs.Hops))
			}
			if seen[Route{Prefix: r.Prefix}] {
				t.Fatalf("duplicate prefix %v", r.Prefix)
			}
			seen[Route{Prefix: r.Prefix}] = true
		}
	})
}
