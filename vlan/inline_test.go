package vlan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/gocmd"
)

// checkFast holds the inlined fast functions (parseStd, pushStd, popStd, setTCIStd) to the general
// paths on edgeBatches: batch a goes through the package-level functions, batch b through the fast
// function directly (which must change nothing, descriptor or byte, when it declines a frame) and
// then the general path for the frames it declined, batch c through the general paths only. The
// three must agree frame by frame, result by result and byte for byte. Parse is also held to the
// naive reference.
func checkFast(t *testing.T, what string, src func() chooser) {
	t.Helper()
	same := func(op string, x, y *frame.Batch) {
		t.Helper()
		sameArena(t, what+" "+op, x, y)
	}
	// window returns the bytes a fast function may touch for frame f (from 4 bytes before Off to
	// 22 after), clipped to the arena, as a copy.
	window := func(x *frame.Batch, f frame.Frame) []byte {
		lo, hi := max(int(f.Off)-HeaderLen, 0), min(int(f.Off)+EthLen+HeaderLen, len(x.Mem))
		return append([]byte(nil), x.Mem[lo:hi]...)
	}
	declined := func(op string, x *frame.Batch, i int, f0 frame.Frame, w0 []byte) {
		t.Helper()
		if x.Frames[i] != f0 || !bytes.Equal(window(x, f0), w0) {
			t.Fatalf("%s %s: fast function declined frame %d %+v but changed it to %+v", what, op, i, f0, x.Frames[i])
		}
	}
	stdTPIDs := []uint16{TPID8021Q, TPID8021AD}

	a, b, c := edgeBatches(src())
	// Every Header starts as a leftover (callers reuse one across frames): a parse must write
	// every field, and a declining parseStd none.
	stale := Header{Outer: Tag{0x1111, 0x2222}, Inner: Tag{0x3333, 0x4444}, EtherType: 0xdead, N: 0xff, Len: 0xff}
	for i := range a.Frames {
		ha, hb, hc := stale, stale, stale
		erra := Parse(a.Bytes(i), &ha)
		var errb error
		if !parseStd(b.Bytes(i), &hb) {
			if hb != stale {
				t.Fatalf("%s: parseStd declined frame %d but wrote %+v", what, i, hb)
			}
			errb = std.parse(b.Bytes(i), &hb)
		}
		errc := std.parse(c.Bytes(i), &hc)
		hn, errn := naiveParse(stdTPIDs, c.Bytes(i))
		if ha != hb || ha != hc || (erra == nil && ha != hn) || erra != errb || erra != errc || erra != errn {
			t.Fatalf("%s frame %d: Parse %+v %v, fast %+v %v, general %+v %v, reference %+v %v", what, i, ha, erra, hb, errb, hc, errc, hn, errn)
		}
	}

	for i := range a.Frames {
		erra := SetTCI(a, i, 0x5678)
		errb := error(nil)
		if f0, w0 := b.Frames[i], window(b, b.Frames[i]); !setTCIStd(b, i, 0x5678) {
			declined("settci", b, i, f0, w0)
			errb = std.setTCI(b, i, 0x5678)
		}
		errc := std.setTCI(c, i, 0x5678)
		if erra != errb || erra != errc {
			t.Fatalf("%s frame %d: SetTCI %v, fast %v, general %v", what, i, erra, errb, errc)
		}
	}
	same("settci fast", a, b)
	same("settci general", a, c)

	for i := range a.Frames {
		ta, erra := Pop(a, i)
		f0, w0 := b.Frames[i], window(b, b.Frames[i])
		tb, okb := popStd(0, b, i)
		errb := error(nil)
		if !okb {
			declined("pop", b, i, f0, w0)
			tb, errb = std.popPad(b, i)
		}
		if _, ok := popStd(1, c, i); ok { // a parser with extra TPIDs never takes the fast path
			t.Fatalf("%s frame %d: popStd with n=1 popped", what, i)
		}
		tc, errc := std.pop(c, i, true)
		if ta != tb || ta != tc || erra != errb || erra != errc {
			t.Fatalf("%s frame %d: Pop %v %v, fast %v %v, general %v %v", what, i, ta, erra, tb, errb, tc, errc)
		}
	}
	same("pop fast", a, b)
	same("pop general", a, c)

	tag := Tag{TPID8021Q, 0x2345}
	for i := range a.Frames {
		erra := Push(a, i, tag)
		errb := error(nil)
		if f0, w0 := b.Frames[i], window(b, b.Frames[i]); !pushStd(b, i, tag) {
			declined("push", b, i, f0, w0)
			errb = pushGeneral(b, i, tag)
		}
		errc := pushGeneral(c, i, tag)
		if erra != errb || erra != errc {
			t.Fatalf("%s frame %d: Push %v, fast %v, general %v", what, i, erra, errb, errc)
		}
	}
	same("push fast", a, b)
	same("push general", a, c)
	recycleEdge(a, b, c)
}

// TestFastPathsTaken: the fast functions do take the common frames (untagged and 802.1Q parse,
// push, pop of a 64-byte frame, TCI rewrite), so the tests above compare something.
func TestFastPathsTaken(t *testing.T) {
	p := newPool(t)
	fb := load(t, p, gpFrame(t, nil, 46), gpFrame(t, []Tag{C(10)}, 46))
	var h Header
	if !parseStd(fb.Bytes(0), &h) || h.N != 0 || !parseStd(fb.Bytes(1), &h) || h.N != 1 || h.Outer != C(10) {
		t.Fatalf("parseStd declined a common frame: %+v", h)
	}
	if !setTCIStd(fb, 1, 7) || setTCIStd(fb, 0, 7) {
		t.Fatal("setTCIStd")
	}
	if !pushStd(fb, 0, C(5)) {
		t.Fatal("pushStd declined an untagged 64-byte frame with headroom")
	}
	if tg, ok := popStd(0, fb, 0); !ok || tg != C(5) {
		t.Fatalf("popStd: %v %v", tg, ok)
	}
	if tg, ok := popStd(0, fb, 1); !ok || tg != (Tag{TPID8021Q, 7}) {
		t.Fatalf("popStd: %v %v", tg, ok)
	}
}

// TestFastMatchesGeneralRandom: checkFast on many random edge batches (TestEdges and FuzzEdges run
// it too).
func TestFastMatchesGeneralRandom(t *testing.T) {
	for seed := uint64(1000); seed < 1200; seed++ {
		checkFast(t, fmt.Sprintf("seed %d", seed), func() chooser { return rand.New(rand.NewPCG(seed, 11)) })
	}
}

// TestInlined: the per-frame functions and their fast paths are inlined into a caller (here the
// benchmarks), and mem.go's helpers into theirs, which is what their speed rests on. Correctness does not: a piece that is not inlined
// is a call. Allocations do, in one case: where the dispatchers (xxxVia) are not inlined, as under
// -gcflags=-l (debug builds), their function parameters are unknown functions, so Parse's *Header
// escapes and Parse allocates; TestZeroAllocs holds for optimized builds. TestInlined asks the
// compiler (go test -c -gcflags=-m, with the caller's GOFLAGS cleared), so it needs the go command;
// it is skipped in -short mode and where go is not found.
func TestInlined(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m")
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		// Inlining costs depend on the target: where the compiler does not merge byte loads,
		// encoding/binary's calls cost more and some leaf pieces stay calls (correct, slower).
		t.Skip("inlining measured on amd64 and arm64 only")
	}
	out := gocmd.Run(t, nil, "test", "-c", "-o", os.DevNull, "-gcflags=-m", ".")
	for _, fn := range []string{"Parse", "parseVia", "parseStd", "parseUntagged", "parseTagged", "parseDot1Q", "parseQinQ", "Push", "pushVia", "pushStd", "pushCheck", "pushMove",
		"Pop", "popVia", "popStd", "popCheck", "popMove", "SetTCI", "setTCIVia", "setTCIStd"} {
		if !regexp.MustCompile(`bench_test\.go:\d+:\d+: inlining call to ` + fn + `\b`).Match(out) {
			t.Errorf("%s is not inlined into the benchmarks", fn)
		}
	}
	// mem.go's helpers are inlined wherever they are called (and each is called).
	for _, fn := range []string{"word32", "putOuter", "putInner", "frameAt", "counterAt"} {
		if !regexp.MustCompile(`mem\.go:\d+:\d+: can inline ` + fn + `\b`).Match(out) {
			t.Errorf("%s cannot be inlined", fn)
		}
		if !regexp.MustCompile(`\.go:\d+:\d+: inlining call to ` + fn + `\b`).Match(out) {
			t.Errorf("%s is not inlined into its callers", fn)
		}
	}
}

// TestPortable runs this package's tests again built with -tags vlan_portable: the field-by-field
// and indexed paths that big-endian targets take instead of mem.go's word accesses and pointer
// arithmetic, which a default build on this machine does not run. The child's TestDigest writes
// memDigest, which must equal this build's. Skipped in -short mode (the child runs with -short)
// and where go is not found.
func TestPortable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the package's tests with -tags vlan_portable")
	}
	file := filepath.Join(t.TempDir(), "digest")
	out := gocmd.Run(t, []string{"VLAN_DIGEST=" + file}, "test", "-short", "-count=1", "-tags", "vlan_portable", ".")
	t.Logf("%s", out)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the vlan_portable build wrote no digest: %v", err)
	}
	if want := memDigest(t); string(got) != want {
		t.Fatalf("vlan_portable build computes digest %s, this build %s", got, want)
	}
}

// sameArena fails t unless x and y have the same descriptors and byte-identical arenas (two copies
// of one batch, one run through a fast path and one through the reference).
func sameArena(t *testing.T, what string, x, y *frame.Batch) {
	t.Helper()
	for i := range x.Frames {
		if x.Frames[i] != y.Frames[i] {
			t.Fatalf("%s: frame %d\n %+v\n %+v", what, i, x.Frames[i], y.Frames[i])
		}
	}
	if !bytes.Equal(x.Mem, y.Mem) {
		t.Fatalf("%s: arenas differ", what)
	}
}
