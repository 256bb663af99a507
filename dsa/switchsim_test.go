package dsa

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

func mustSwitch(t testing.TB, name string) *SwitchSide {
	t.Helper()
	s, err := NewSwitchSide(mustTagger(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The switch side writes the RX vectors' tags: for each frame Decode turned into `out`, Encode
// with the Info Decode reported must give a frame the tagger parses to the same Info, and the
// vector's very bytes except where the Info does not determine every bit.
func TestSwitchSideRxVectors(t *testing.T) {
	notExact := map[string]string{
		"edsa " + macs + " dada0000 c0280fff " + et + pl: "FORWARD's VID (4095, bridged) is not in Info: Encode writes 0",
		"ksz8795 " + inner + " 07":                       "bits 7:2 of the tail byte are not in Info",
	}
	n := 0
	for _, v := range rxVectors {
		if v.err != nil {
			continue
		}
		n++
		t.Run(v.tagger, func(t *testing.T) {
			s := mustSwitch(t, v.tagger)
			_, b := oneFrame(t, hx(v.out))
			if err := s.Encode(b, 0, v.want); err != nil {
				t.Fatalf("%s: Encode: %v", v.why, err)
			}
			got, err := parseInfo(s.Tagger(), b.Bytes(0))
			if err != nil || got != v.want {
				t.Fatalf("%s: Parse of the switch's frame: %+v %v, want %+v", v.why, got, err, v.want)
			}
			if why, ok := notExact[v.tagger+" "+v.in]; ok {
				t.Logf("not byte-exact on purpose: %s", why)
				return
			}
			if want := hx(v.in); !bytes.Equal(b.Bytes(0), want) {
				t.Fatalf("%s:\n got % x\nwant % x", v.why, b.Bytes(0), want)
			}
		})
	}
	if n < 25 {
		t.Fatalf("only %d RX vectors checked", n)
	}
}

// The switch side reads the TX vectors' tags: Decode of `out` gives back `in` (plus the format's
// zero padding, with an out-of-band tag in the bytes) and a Dest that, encoded again by the
// tagger, reproduces `out` byte for byte.
func TestSwitchSideTxVectors(t *testing.T) {
	for _, v := range txVectors {
		if v.err != nil {
			continue
		}
		t.Run(v.tagger, func(t *testing.T) {
			s := mustSwitch(t, v.tagger)
			s.TxTimestamp = v.dest.Flags&DestTimestamp != 0
			out := hx(v.out)
			_, b := oneFrame(t, out)
			d, err := s.Decode(b, 0)
			if err != nil {
				t.Fatalf("%s: Decode: %v", v.why, err)
			}
			want := hx(v.in)
			if v.oobTPID != 0 {
				want = append(append(append([]byte{}, want[:12]...), byte(v.oobTPID>>8), byte(v.oobTPID), byte(v.oobTCI>>8), byte(v.oobTCI)), want[12:]...)
			}
			if pad := txPadTo(s.Tagger(), v.dest); len(want) < pad {
				want = append(want, make([]byte, pad-len(want))...)
			}
			if !bytes.Equal(b.Bytes(0), want) {
				t.Fatalf("%s: decoded frame\n got % x\nwant % x", v.why, b.Bytes(0), want)
			}
			if v.tagger == "lan9303" && v.dest.Flags&DestBridged != 0 {
				if d.Flags&DestBridged == 0 || d.Ports != 0 {
					t.Fatalf("%s: got %+v, want the address lookup (DestBridged, no port)", v.why, d)
				}
				d.Ports = v.dest.Ports // the tag does not carry it
			} else if d.Ports != v.dest.Ports || d.Bridge != v.dest.Bridge {
				t.Fatalf("%s: got %+v, want ports %b bridge %d", v.why, d, v.dest.Ports, v.dest.Bridge)
			}
			if err := s.Tagger().Encode(b, 0, d); err != nil {
				t.Fatalf("re-encode %+v: %v", d, err)
			}
			if !bytes.Equal(b.Bytes(0), out) {
				t.Fatalf("%s: re-encoded %+v\n got % x\nwant % x", v.why, d, b.Bytes(0), out)
			}
		})
	}
}

// rxPorts is the highest source port the RX format of tagger can carry that the TX format can
// also address, so that both directions are checked over the same ports.
func maxPort(tg Tagger) int {
	p := tg.Spec().Ports - 1
	switch tg.Name() {
	case "ksz8795", "hellcreek", "lan9303":
		p = min(p, 3)
	case "mtk", "gswip", "qca", "ksz9477", "lan937x", "trailer", "ksz9893":
		p = min(p, 7)
	}
	return p
}

// Round trips over every tagger, every port, and frames of several shapes: what the switch tags
// the tagger decodes to the same port and bytes, and what the tagger tags the switch decodes to
// the same port and bytes (tail and padding formats leave their zero padding).
func TestSwitchSideRoundTrip(t *testing.T) {
	frames := map[string]string{
		"ipv4":   inner,
		"runt":   runt,
		"dot1q":  macs + " 8100a064 " + et + pl,
		"qinq":   macs + " 88a80007 8100000a " + et + pl,
		"big":    macs + " " + et + " " + pl + strings.Repeat("ab", 1400),
		"ethmin": macs + " 88b5",
	}
	for _, name := range Names() {
		s := mustSwitch(t, name)
		tg := s.Tagger()
		spec := tg.Spec()
		for fname, hexf := range frames {
			orig := hx(hexf)
			for port := 0; port <= maxPort(tg); port++ {
				t.Run(fmt.Sprintf("%s/%s/%d", name, fname, port), func(t *testing.T) {
					// RX: switch to CPU.
					_, b := oneFrame(t, orig)
					if err := s.Encode(b, 0, Info{Port: uint16(port)}); err != nil {
						t.Fatalf("switch Encode: %v", err)
					}
					in, err := decodeInfo(tg, b, 0)
					if err != nil || int(in.Port) != port {
						t.Fatalf("Decode: port %d %v, want %d", in.Port, err, port)
					}
					want := orig
					if spec.Position == PosTail && len(want) < 60 {
						want = append(append([]byte{}, orig...), make([]byte, 60-len(orig))...)
					}
					if !bytes.Equal(b.Bytes(0), want) {
						t.Fatalf("RX round trip\n got % x\nwant % x", b.Bytes(0), want)
					}
					// TX: CPU to switch.
					_, b = oneFrame(t, orig)
					d := To(port)
					if name == "none" {
						d = Dest{}
					}
					if err := tg.Encode(b, 0, d); err != nil {
						t.Fatalf("Encode: %v", err)
					}
					got, err := s.Decode(b, 0)
					if err != nil || got.Ports != d.Ports {
						t.Fatalf("switch Decode: %+v %v, want ports %b", got, err, d.Ports)
					}
					want = orig
					if len(want) < spec.PadTo {
						want = append(append([]byte{}, orig...), make([]byte, spec.PadTo-len(orig))...)
					}
					if !bytes.Equal(b.Bytes(0), want) {
						t.Fatalf("TX round trip\n got % x\nwant % x", b.Bytes(0), want)
					}
				})
			}
		}
	}
}

// A KSZ switch with timestamping on: the RX timestamp reaches Info, the TX timestamp field is cut.
func TestSwitchSideTimestamp(t *testing.T) {
	for _, name := range []string{"ksz9477", "lan937x"} {
		s := mustSwitch(t, name)
		s.TxTimestamp = true
		_, b := oneFrame(t, hx(inner))
		if err := s.Encode(b, 0, Info{Port: 2, Flags: InfoTimestamp, Timestamp: 0x8000_0007}); err != nil {
			t.Fatal(err)
		}
		in, err := decodeInfo(s.Tagger(), b, 0)
		if err != nil || in.Port != 2 || in.Flags&InfoTimestamp == 0 || in.Timestamp != 0x8000_0007 {
			t.Fatalf("%s: %+v %v", name, in, err)
		}
		if err := s.Tagger().Encode(b, 0, Dest{Ports: Port(2), Flags: DestTimestamp}); err != nil {
			t.Fatal(err)
		}
		d, err := s.Decode(b, 0)
		if err != nil || d.Ports != Port(2) || d.Flags&DestTimestamp == 0 || !bytes.Equal(b.Bytes(0), hx(inner)) {
			t.Fatalf("%s: %+v %v % x", name, d, err, b.Bytes(0))
		}
	}
}

// EncodeMalformed's frames are rejected for the reason it names, by Parse and by a Conduit; a
// format without an invalid tag leaves the frame alone.
func TestSwitchSideMalformed(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s := mustSwitch(t, name)
			pool, b := oneFrame(t, hx(inner))
			r := s.EncodeMalformed(b, 0, 2)
			switch name {
			case "mtk", "ksz8795", "ksz9477", "ksz9893", "lan937x", "gswip", "hellcreek", "none":
				if r != ReasonNone || !bytes.Equal(b.Bytes(0), hx(inner)) {
					t.Fatalf("reason %v, frame % x", r, b.Bytes(0))
				}
				return
			}
			if r == ReasonNone {
				t.Fatal("no malformed tag for a format that has one")
			}
			if _, err := parseInfo(s.Tagger(), b.Bytes(0)); !errors.Is(err, r.Err()) {
				t.Fatalf("Parse: %v, want %v", err, r.Err())
			}
			c, err := NewConduit(Config{Tagger: s.Tagger()})
			if err != nil {
				t.Fatal(err)
			}
			if n := c.Recv(b, nil); n != 0 || c.RxDrops(r) != 1 || pool.InUse() != 0 {
				t.Fatalf("conduit kept %d, drops[%v] %d, in use %d", n, r, c.RxDrops(r), pool.InUse())
			}
		})
	}
}

// The switch side rejects what the CPU never sends.
func TestSwitchSideDecodeErrors(t *testing.T) {
	cases := []struct {
		tagger, frame string
		err           error
	}{
		{"edsa", inner, ErrNotTagged},
		{"edsa", macs + " dada0000 00180000 " + et + pl, ErrBadTag}, // TO_CPU from the CPU
		{"dsa", macs + " 401a0000 " + et + pl, ErrBadTag},           // code bits set in FROM_CPU
		{"brcm", macs + " 00000005 " + et + pl, ErrBadTag},          // opcode 0: the RX format
		{"qca", macs + " 8004 " + et + pl, ErrBadTag},               // FROM_CPU bit clear
		{"mtk", macs + " 03020000 " + et + pl, ErrBadTag},           // b0 3
		{"mtk", macs + " 00820000 " + et + pl, ErrBadTag},           // b1 bit 7: mainline never sets it
		{"mtk", macs + " 00420000 " + et + pl, ErrBadTag},           // b1 bit 6 (SA_DIS): mainline never sets it
		{"rtl4a", inner, ErrNotTagged},
		{"rtl8_4", macs + " 88990500 00200001 " + et + pl, ErrBadTag},
		{"ocelot-8021q", macs + " 81000064 " + et + pl, ErrNotTagged},
		{"ar9331", "3240 " + inner, ErrBadTag}, // FROM_CPU bit clear: the RX format
		{"gswip", "00000000 " + inner, ErrBadTag},
		{"hellcreek", inner + " 03", ErrBadTag}, // two ports in a single-port field
		{"lan9303", macs + " 81000002 " + et + pl, ErrBadTag},
		{"trailer", inner + " 80030000", ErrBadTag},
		{"lan937x", inner + " 0001", ErrBadTag}, // valid bit 13 clear
		{"ksz9477", "0011", ErrTruncated},
		{"edsa", macs + " dada", ErrTruncated},
	}
	for _, c := range cases {
		s := mustSwitch(t, c.tagger)
		in := hx(c.frame)
		_, b := oneFrame(t, in)
		before := b.Frames[0]
		if _, err := s.Decode(b, 0); !errors.Is(err, c.err) {
			t.Errorf("%s % x: %v, want %v", c.tagger, in, err, c.err)
		}
		if b.Frames[0] != before || !bytes.Equal(b.Bytes(0), in) {
			t.Errorf("%s: failed Decode changed the frame", c.tagger)
		}
	}
	if _, err := NewSwitchSide(otherTagger{}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("foreign tagger: %v", err)
	}
}

type otherTagger struct{ Tagger }

func TestSwitchSideAllocs(t *testing.T) {
	for _, name := range Names() {
		s := mustSwitch(t, name)
		_, b := oneFrame(t, hx(inner))
		f0 := b.Frames[0]
		tg := s.Tagger()
		var in Info // outside the closure: a pointer passed to an interface method escapes
		allocs := testing.AllocsPerRun(100, func() {
			b.Frames[0] = f0
			_ = s.Encode(b, 0, Info{Port: 1})
			_ = tg.Decode(b, 0, &in)
			_ = tg.Encode(b, 0, To(1))
			_, _ = s.Decode(b, 0)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per round trip", name, allocs)
		}
	}
}

// FuzzSwitchSide: Decode of arbitrary bytes never panics, leaves a failed frame untouched, and a
// successful one at least an Ethernet header, no longer than before plus what a merged VLAN tag
// gives back; what it reads agrees with the naive reading of the kernel's TX layout (naiveTx:
// the port mask and the frame behind the tag) wherever that layout is a plain tag; the Dest it
// found, when the tagger accepts it, survives a tag/decode round trip.
func FuzzSwitchSide(f *testing.F) {
	for _, v := range txVectors {
		f.Add(hx(v.out), v.tagger, v.dest.Flags&DestTimestamp != 0)
	}
	names := Names()
	fx := newFuzzFrames(f)
	f.Fuzz(func(t *testing.T, data []byte, name string, ts bool) {
		if len(data) > fuzzMaxLen {
			data = data[:fuzzMaxLen]
		}
		tg, err := ByName(name)
		if err != nil {
			tg = mustTagger(t, names[len(name)%len(names)])
		}
		name = tg.Name()
		s, _ := NewSwitchSide(tg)
		s.TxTimestamp = ts
		b := fx.load(data)
		before := b.Frames[0]
		d, err := s.Decode(b, 0)
		if err != nil {
			if b.Frames[0] != before || !bytes.Equal(b.Bytes(0), data) {
				t.Fatal("failed Decode changed the frame")
			}
			return
		}
		if n := len(b.Bytes(0)); n < frame.EtherLen || n > len(data) {
			t.Fatalf("Decode: %d -> %d bytes", len(data), n)
		}
		if plainTxTag(name, data, ts) {
			inner, mask := naiveTx(name, data)
			if name == "lan9303" && d.Flags&DestBridged != 0 {
				mask = 0 // USE_ALR: no port
			}
			if uint32(d.Ports) != mask || !bytes.Equal(b.Bytes(0), inner) {
				t.Fatalf("switch Decode %+v\n got % x\nnaive mask %#x\nwant % x", d, b.Bytes(0), mask, inner)
			}
		}
		if ts && (name == "ksz9477" || name == "lan937x") {
			d.Flags |= DestTimestamp
		}
		if tg.Encode(b, 0, d) != nil {
			return
		}
		d2, err := s.Decode(b, 0)
		if err != nil {
			t.Fatalf("Decode of Encode(%+v): %v (% x)", d, err, b.Bytes(0))
		}
		if d2.Ports != d.Ports || d2.Bridge != d.Bridge {
			t.Fatalf("round trip %+v -> %+v", d, d2)
		}
	})
}

// plainTxTag reports that data, which the switch side decoded, carries its TX tag as naiveTx
// reads it: not a Marvell tag with the "tagged" bit or an mtk tag merged with a VLAN tag (the
// switch side restores the VLAN tag), not a tag_8021q bridge VID (no port), not a KSZ tag with
// the timestamp field (naiveTx leaves those 4 bytes in the frame), not "none".
func plainTxTag(name string, data []byte, ts bool) bool {
	switch name {
	case "none":
		return false
	case "dsa":
		return data[12]&0x20 == 0
	case "edsa":
		return data[16]&0x20 == 0
	case "mtk":
		return data[12] == 0
	case "ocelot-8021q", "vsc73xx-8021q", "sja1105":
		_, _, vbid, _ := ParseTag8021QVID(uint16(data[14])<<8 | uint16(data[15]))
		return vbid == 0
	case "ksz9477", "lan937x":
		return !ts
	}
	return true
}
