package lacp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// kernelLACPDU is struct lacpdu_header of include/net/bond_3ad.h, field for field, decoded by
// encoding/binary: an oracle that shares no code with ParseLACPDU.
type kernelLACPDU struct {
	Dst, Src                   [6]byte
	Proto                      uint16
	Subtype, Version           uint8
	ActorType, ActorLen        uint8
	ActorSysPrio               uint16
	ActorSystem                [6]byte
	ActorKey                   uint16
	ActorPortPrio, ActorPort   uint16
	ActorState                 uint8
	Reserved31                 [3]byte
	PartnerType, PartnerLen    uint8
	PartnerSysPrio             uint16
	PartnerSystem              [6]byte
	PartnerKey                 uint16
	PartnerPortPrio            uint16
	PartnerPort                uint16
	PartnerState               uint8
	Reserved32                 [3]byte
	CollectorType, CollectorLn uint8
	CollectorMaxDelay          uint16
	Reserved12                 [12]byte
	TermType, TermLen          uint8
	Reserved50                 [50]byte
}

// kernelMarker is struct bond_marker_header.
type kernelMarker struct {
	Dst, Src          [6]byte
	Proto             uint16
	Subtype, Version  uint8
	TLVType, TLVLen   uint8
	RequesterPort     uint16
	RequesterSystem   [6]byte
	RequesterTransID  uint32
	Pad               uint16
	TermType, TermLen uint8
	Reserved90        [90]byte
}

func init() {
	if binary.Size(kernelLACPDU{}) != FrameLen || binary.Size(kernelMarker{}) != FrameLen {
		panic("oracle struct sizes")
	}
}

func oracleLACP(f []byte) (k kernelLACPDU, ok bool) {
	if len(f) < FrameLen {
		return k, false
	}
	binary.Read(bytes.NewReader(f[:FrameLen]), binary.BigEndian, &k)
	return k, true
}

func oracleMarker(f []byte) (k kernelMarker, ok bool) {
	if len(f) < FrameLen {
		return k, false
	}
	binary.Read(bytes.NewReader(f[:FrameLen]), binary.BigEndian, &k)
	return k, true
}

func infoOf(prio uint16, sys [6]byte, key, pprio, port uint16, st uint8) Info {
	return Info{SystemPriority: prio, System: frame.MAC(sys), Key: key, PortPriority: pprio, Port: port, State: State(st)}
}

// checkOracle compares a frame DecodeFrame accepted with the struct oracle's reading of it.
func checkOracle(t *testing.T, f []byte, p *PDU) {
	t.Helper()
	switch p.Subtype {
	case SubtypeLACP:
		k, ok := oracleLACP(f)
		if !ok {
			t.Fatalf("accepted a %d-byte frame", len(f))
		}
		if k.Dst != SlowProtocolsMAC || k.Proto != EtherType || k.Subtype != 1 || k.ActorType != 1 || k.ActorLen != 20 || k.PartnerType != 2 || k.PartnerLen != 20 {
			t.Fatalf("accepted a frame the oracle rejects: %+v", k)
		}
		want := LACPDU{
			Version:           k.Version,
			Actor:             infoOf(k.ActorSysPrio, k.ActorSystem, k.ActorKey, k.ActorPortPrio, k.ActorPort, k.ActorState),
			Partner:           infoOf(k.PartnerSysPrio, k.PartnerSystem, k.PartnerKey, k.PartnerPortPrio, k.PartnerPort, k.PartnerState),
			CollectorMaxDelay: k.CollectorMaxDelay,
		}
		if p.LACP != want || p.Src != frame.MAC(k.Src) {
			t.Fatalf("decoded %+v from %x, oracle %+v", p.LACP, p.Src, want)
		}
	case SubtypeMarker:
		k, ok := oracleMarker(f)
		if !ok {
			t.Fatalf("accepted a %d-byte frame", len(f))
		}
		if k.Dst != SlowProtocolsMAC || k.Proto != EtherType || k.Subtype != 2 || (k.TLVType != 1 && k.TLVType != 2) || k.TLVLen != 16 {
			t.Fatalf("accepted a marker the oracle rejects: %+v", k)
		}
		want := Marker{Version: k.Version, Response: k.TLVType == 2, RequesterPort: k.RequesterPort,
			RequesterSystem: frame.MAC(k.RequesterSystem), TransactionID: k.RequesterTransID}
		if p.Marker != want {
			t.Fatalf("decoded %+v, oracle %+v", p.Marker, want)
		}
	default:
		t.Fatalf("accepted subtype %d", p.Subtype)
	}
}

// oracleAccepts says whether DecodeFrame must accept f, from the struct oracle alone.
func oracleAccepts(f []byte) bool {
	if k, ok := oracleLACP(f); ok && k.Dst == SlowProtocolsMAC && k.Proto == EtherType {
		switch k.Subtype {
		case 1:
			return k.ActorType == 1 && k.ActorLen == 20 && k.PartnerType == 2 && k.PartnerLen == 20
		case 2:
			m, _ := oracleMarker(f)
			return (m.TLVType == 1 || m.TLVType == 2) && m.TLVLen == 16
		}
	}
	return false
}

func readVectors(t testing.TB, name string) [][]byte {
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out [][]byte
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		b, err := hex.DecodeString(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, b)
	}
	return out
}

// TestOVSVectors decodes LACPDUs Open vSwitch sent and writes them back byte for byte.
func TestOVSVectors(t *testing.T) {
	vs := readVectors(t, "testdata/ovs-lacpdu.txt")
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	for i, f := range vs {
		var p PDU
		if err := DecodeFrame(f, &p); err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		checkOracle(t, f, &p)
		out := make([]byte, FrameLen)
		if err := PutLACPFrame(out, p.Src, &p.LACP); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, f[:FrameLen]) {
			t.Fatalf("vector %d re-encoded:\n%x\nwant\n%x", i, out, f)
		}
	}
	// The first vector, field by field (from ovs-appctl lacp/show at capture time).
	var p PDU
	DecodeFrame(vs[0], &p)
	want := LACPDU{Version: 1,
		Actor:   Info{SystemPriority: 65534, System: frame.MAC{2, 0, 0, 0, 0x0a, 1}, Key: 3, PortPriority: 65535, Port: 3, State: 0xbf},
		Partner: Info{State: StateTimeout}}
	if p.LACP != want {
		t.Fatalf("vector 0: %+v, want %+v", p.LACP, want)
	}
	if got := p.LACP.Actor.State.String(); got != "activity timeout aggregation synchronized collecting distributing expired" {
		t.Fatalf("state string %q", got)
	}
}

func randInfo(r *rand.Rand) Info {
	var m frame.MAC
	for i := range m {
		m[i] = byte(r.Uint32())
	}
	return Info{SystemPriority: uint16(r.Uint32()), System: m, Key: uint16(r.Uint32()), PortPriority: uint16(r.Uint32()),
		Port: uint16(r.Uint32()), State: State(r.Uint32())}
}

// TestRoundTrip: random PDUs written and read back, checked against the struct oracle, with the
// reserved bytes zero.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := frame.MAC{2, 1, 2, 3, 4, 5}
	buf := make([]byte, FrameLen+7)
	for i := 0; i < 2000; i++ {
		for j := range buf {
			buf[j] = 0xa5 // PutXxx must clear what it does not set
		}
		var p PDU
		if i%2 == 0 {
			l := LACPDU{Version: uint8(r.UintN(3)), Actor: randInfo(r), Partner: randInfo(r), CollectorMaxDelay: uint16(r.Uint32())}
			if err := PutLACPFrame(buf, src, &l); err != nil {
				t.Fatal(err)
			}
			if err := DecodeFrame(buf, &p); err != nil {
				t.Fatal(err)
			}
			if l.Version == 0 {
				l.Version = Version
			}
			if p.LACP != l {
				t.Fatalf("round trip %+v -> %+v", l, p.LACP)
			}
			k, _ := oracleLACP(buf)
			if k.Reserved31 != [3]byte{} || k.Reserved32 != [3]byte{} || k.Reserved12 != [12]byte{} || k.Reserved50 != [50]byte{} ||
				k.CollectorType != 3 || k.CollectorLn != 16 || k.TermType != 0 || k.TermLen != 0 {
				t.Fatalf("reserved or TLV bytes: %+v", k)
			}
		} else {
			m := Marker{Version: uint8(r.UintN(3)), Response: r.UintN(2) == 1, RequesterPort: uint16(r.Uint32()),
				RequesterSystem: randInfo(r).System, TransactionID: r.Uint32()}
			if err := PutMarkerFrame(buf, src, &m); err != nil {
				t.Fatal(err)
			}
			if err := DecodeFrame(buf, &p); err != nil {
				t.Fatal(err)
			}
			if m.Version == 0 {
				m.Version = Version
			}
			if p.Marker != m {
				t.Fatalf("round trip %+v -> %+v", m, p.Marker)
			}
			k, _ := oracleMarker(buf)
			if k.Pad != 0 || k.TermType != 0 || k.TermLen != 0 || k.Reserved90 != [90]byte{} {
				t.Fatalf("reserved bytes: %+v", k)
			}
		}
		if buf[FrameLen] != 0xa5 {
			t.Fatal("wrote past FrameLen")
		}
		if p.Src != src {
			t.Fatalf("source %v", p.Src)
		}
		checkOracle(t, buf, &p)
	}
}

// TestDecodeErrors: each way a frame is refused, with its sentinel.
func TestDecodeErrors(t *testing.T) {
	good := readVectors(t, "testdata/ovs-lacpdu.txt")[0]
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	marker := make([]byte, FrameLen)
	PutMarkerFrame(marker, frame.MAC{2}, &Marker{TransactionID: 7})
	modm := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), marker...)) }
	cases := []struct {
		name string
		f    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"header only", good[:14], ErrTruncated},
		{"one byte short", good[:FrameLen-1], ErrTruncated},
		{"dst", mod(func(b []byte) []byte { b[5] = 3; return b }), ErrNotSlow},
		{"ethertype", mod(func(b []byte) []byte { b[13] = 0x0a; return b }), ErrNotSlow},
		{"tagged", mod(func(b []byte) []byte { return append(append(b[:12:12], 0x81, 0, 0, 1), b[12:]...) }), ErrNotSlow},
		{"subtype 3 (OAM)", mod(func(b []byte) []byte { b[14] = 3; return b }), ErrSubtype},
		{"subtype 0", mod(func(b []byte) []byte { b[14] = 0; return b }), ErrSubtype},
		{"actor type", mod(func(b []byte) []byte { b[16] = 2; return b }), ErrTLV},
		{"actor len", mod(func(b []byte) []byte { b[17] = 19; return b }), ErrTLV},
		{"partner type", mod(func(b []byte) []byte { b[36] = 1; return b }), ErrTLV},
		{"partner len", mod(func(b []byte) []byte { b[37] = 21; return b }), ErrTLV},
		{"marker tlv 3", modm(func(b []byte) []byte { b[16] = 3; return b }), ErrTLV},
		{"marker len", modm(func(b []byte) []byte { b[17] = 22; return b }), ErrTLV},
		{"marker short", marker[:FrameLen-1], ErrTruncated},
	}
	for _, c := range cases {
		var p PDU
		if err := DecodeFrame(c.f, &p); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if oracleAccepts(c.f) {
			t.Errorf("%s: the oracle accepts it", c.name)
		}
	}
	// Accepted: version 2, a non-zero collector or terminator, bytes after the PDU.
	for _, f := range [][]byte{
		mod(func(b []byte) []byte { b[15] = 2; return b }),
		mod(func(b []byte) []byte { b[56] = 9; b[72] = 1; b[123] = 0xff; return b }),
		mod(func(b []byte) []byte { return append(b, 1, 2, 3, 4) }),
	} {
		var p PDU
		if err := DecodeFrame(f, &p); err != nil {
			t.Errorf("%x: %v", f, err)
		}
	}
	short := make([]byte, PDULen-1)
	if _, err := ParseLACPDU(short); err != ErrTruncated {
		t.Error(err)
	}
	if _, err := ParseMarker(short); err != ErrTruncated {
		t.Error(err)
	}
	if PutLACPDU(short, &LACPDU{}) != ErrTruncated || PutMarker(short, &Marker{}) != ErrTruncated ||
		PutLACPFrame(make([]byte, FrameLen-1), frame.MAC{}, &LACPDU{}) != ErrTruncated ||
		PutMarkerFrame(make([]byte, FrameLen-1), frame.MAC{}, &Marker{}) != ErrTruncated {
		t.Error("short buffers accepted")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{0: "none", StateActivity | StateAggregation: "activity aggregation",
		StateExpired: "expired", StateSync | StateCollecting | StateDistributing: "synchronized collecting distributing"} {
		if got := s.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint8(s), got, want)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	f := readVectors(t, "testdata/ovs-lacpdu.txt")[0]
	var p PDU
	out := make([]byte, FrameLen)
	if n := testing.AllocsPerRun(100, func() {
		DecodeFrame(f, &p)
		PutLACPFrame(out, p.Src, &p.LACP)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
