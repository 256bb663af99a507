package dsa

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// fuzzMaxLen is the longest input a fuzz target interprets; the rest of a longer input is cut
// off, not skipped. Every tag sits within the first 22 or the last 9 bytes of a frame and the
// padding rules end at 64 bytes, so 256 bytes reach every branch, and the fuzzer's minimisation
// (which tries removing every span of an interesting input: quadratic in its length) stays
// within a few thousand runs instead of stalling the search for its full minute.
const fuzzMaxLen = 256

// fuzzFrames holds the batches a fuzz target reuses across runs (one run at a time per process),
// so that a run allocates no pool: a fresh one per run costs several times the run itself.
type fuzzFrames struct {
	one, five       *frame.Batch
	oneFr, fiveFr   []frame.Frame // the descriptors as allocated
	onePool, fivePl *frame.Pool
}

func newFuzzFrames(t testing.TB) *fuzzFrames {
	fx := &fuzzFrames{}
	fx.onePool, fx.one = oneFrame(t, nil)
	fx.oneFr = append([]frame.Frame(nil), fx.one.Frames...)
	var err error
	fx.fivePl, err = frame.NewPool(&frame.PoolConfig{Buffers: 8, BufSize: 2048, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	fx.five = frame.NewBatch(5)
	if n, _ := fx.fivePl.Alloc(fx.five, 5); n != 5 {
		t.Fatal("alloc")
	}
	fx.fiveFr = append([]frame.Frame(nil), fx.five.Frames...)
	return fx
}

// load resets the one-frame batch to data (a fresh descriptor, as oneFrame gives).
func (fx *fuzzFrames) load(data []byte) *frame.Batch {
	copy(fx.one.Frames, fx.oneFr)
	setFrame(fx.one, 0, data)
	return fx.one
}

// loadFive is fiveFrames on the reused batch.
func (fx *fuzzFrames) loadFive(data []byte, like frame.Frame) (*frame.Batch, []frame.Frame) {
	b := fx.five
	copy(b.Frames, fx.fiveFr)
	for k := range 5 {
		setFrame(b, k, data)
		f := &b.Frames[k]
		f.Head, f.Tail = like.Head, min(f.Tail, like.Tail)
		f.Flags, f.TPID, f.TCI = like.Flags, like.TPID, like.TCI
	}
	return b, append([]frame.Frame(nil), b.Frames...)
}

// fuzzTagger checks, for arbitrary bytes: Decode does what the kernel's rcv does
// (kernelDecode: outcome, bytes left, Info, trapped mark); Parse, the general per-frame code and
// DecodeBatch (one frame and five) agree with it; a failed Decode leaves the frame untouched.
// Encode toward an arbitrary Dest does what the kernel's xmit does (kernelEncode: outcome,
// bytes, where an out-of-band tag ends up), the general code and EncodeBatch agree, and a failed
// Encode leaves the frame untouched.
func fuzzTagger(f *testing.F, name string) {
	tg, err := ByName(name)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seedsFor(name) {
		f.Add(s.data, s.port, s.flags)
	}
	spec := tg.Spec()
	fx := newFuzzFrames(f)
	ins, rs := make([]Info, 1), make([]Reason, 1)
	ins5, rs5 := make([]Info, 5), make([]Reason, 5)
	f.Fuzz(func(t *testing.T, data []byte, port uint8, flags uint8) {
		if len(data) > fuzzMaxLen {
			data = data[:fuzzMaxLen]
		}
		pin, perr := parseInfo(tg, data)
		b := fx.load(data)
		fr := &b.Frames[0]
		if flags&0x80 != 0 {
			fr.Flags |= frame.FlagVLAN
			fr.TPID, fr.TCI = 0x8100, uint16(port)<<4|uint16(flags)
			if flags&0x40 != 0 {
				fr.TPID = 0x88a8
			}
		}
		before := *fr
		in, err := decodeInfo(tg, b, 0)
		if err != perr || (err == nil && in != pin) {
			t.Fatalf("Decode %+v %v, Parse %+v %v", in, err, pin, perr)
		}
		k := kernelDecode(name, data)
		if err != k.err {
			t.Fatalf("Decode: %v, kernel rcv: %v", err, k.err)
		}
		if err != nil {
			if *fr != before || !bytes.Equal(b.Bytes(0), data) {
				t.Fatal("failed Decode changed the frame")
			}
		} else {
			if in != k.in || !bytes.Equal(b.Bytes(0), k.out) {
				t.Fatalf("Decode %+v\n got % x\nkernel rcv %+v\nwant % x", in, b.Bytes(0), k.in, k.out)
			}
			if trapped := fr.Flags&frame.FlagTrapped != 0; trapped != k.trapped || fr.Flags&^frame.FlagTrapped != before.Flags {
				t.Fatalf("Decode flags %v (before %v), kernel rcv trapped %v", fr.Flags, before.Flags, k.trapped)
			}
			if len(data)-len(b.Bytes(0)) != in.Removed() || int(in.TagLen) > spec.RxLen {
				t.Fatalf("Decode: %d -> %d bytes, Removed %d, TagLen %d, RxLen %d", len(data), len(b.Bytes(0)), in.Removed(), in.TagLen, spec.RxLen)
			}
		}
		// DecodeBatch and the general per-frame code (decodeOne, behind Decode's fast path) agree
		// with Decode: outcome, Info, descriptor and bytes.
		afterFr, afterBytes := *fr, append([]byte(nil), b.Bytes(0)...)
		*fr = before
		setFrame(b, 0, data)
		var gin Info
		if gerr := general(tg).decodeOne(b.Mem, fr, &gin).Err(); gerr != err || *fr != afterFr || !bytes.Equal(b.Bytes(0), afterBytes) ||
			(err == nil && gin != in) {
			t.Fatalf("general %v %+v, Decode %v %+v", gerr, gin, err, in)
		}
		*fr = before
		setFrame(b, 0, data)
		n := tg.DecodeBatch(b, ins, rs)
		if rs[0].Err() != err || (n == 1) != (err == nil) || *fr != afterFr || !bytes.Equal(b.Bytes(0), afterBytes) ||
			(err == nil && ins[0] != in) {
			t.Fatalf("DecodeBatch %d %v %+v, Decode %v %+v", n, rs[0], ins[0], err, in)
		}
		// The same frame five times in one batch (four through the unrolled loop, one after it).
		b5, orig5 := fx.loadFive(data, before)
		n = tg.DecodeBatch(b5, ins5, rs5)
		for k := range 5 {
			if rs5[k].Err() != err || rel(b5.Frames[k], orig5[k]) != rel(afterFr, before) || !bytes.Equal(b5.Bytes(k), afterBytes) ||
				(err == nil && ins5[k] != in) {
				t.Fatalf("DecodeBatch of 5, frame %d: %d %v %+v, Decode %v %+v", k, n, rs5[k], ins5[k], err, in)
			}
		}
		// Encode the original bytes.
		*fr = before
		setFrame(b, 0, data)
		d := Dest{Ports: Port(int(port & 31)), Switch: flags >> 5, Prio: port >> 5, Bridge: flags & 3,
			Flags: DestFlags(flags>>4) & (DestPad<<1 - 1)}
		if flags&8 != 0 {
			d.Ports |= Port(int(flags & 7))
		}
		pre := *fr
		err = tg.Encode(b, 0, d)
		kt := kernelEncode(name, data, pre.Flags&frame.FlagVLAN != 0, pre.TPID, pre.TCI, d)
		if err != kt.err {
			t.Fatalf("Encode toward %+v: %v, kernel xmit: %v", d, err, kt.err)
		}
		if err == nil && (!bytes.Equal(b.Bytes(0), kt.out) || (fr.Flags&frame.FlagVLAN != 0) != kt.oobLeft) {
			t.Fatalf("Encode toward %+v (flags %v)\n got % x\nwant % x (kernel xmit, out-of-band tag left %v)", d, fr.Flags, b.Bytes(0), kt.out, kt.oobLeft)
		}
		// EncodeBatch and the general per-frame code (encode) agree with Encode.
		encFr, encBytes := *fr, append([]byte(nil), b.Bytes(0)...)
		*fr = pre
		setFrame(b, 0, data)
		if gerr := general(tg).encode(b.Mem, fr, d).Err(); gerr != err || *fr != encFr || !bytes.Equal(b.Bytes(0), encBytes) {
			t.Fatalf("general encode %v, Encode %v", gerr, err)
		}
		*fr = pre
		setFrame(b, 0, data)
		n = tg.EncodeBatch(b, d, rs)
		if rs[0].Err() != err || (n == 1) != (err == nil) || *fr != encFr || !bytes.Equal(b.Bytes(0), encBytes) {
			t.Fatalf("EncodeBatch %d %v, Encode %v", n, rs[0], err)
		}
		b5, orig5 = fx.loadFive(data, pre)
		n = tg.EncodeBatch(b5, d, rs5)
		for k := range 5 {
			if rs5[k].Err() != err || rel(b5.Frames[k], orig5[k]) != rel(encFr, pre) || !bytes.Equal(b5.Bytes(k), encBytes) {
				t.Fatalf("EncodeBatch of 5, frame %d: %d %v, Encode %v", k, n, rs5[k], err)
			}
		}
		if err != nil && (*fr != pre || !bytes.Equal(b.Bytes(0), data)) {
			t.Fatal("failed Encode changed the frame")
		}
	})
}

type seed struct {
	data  []byte
	port  uint8
	flags uint8
}

// seedsFor: the tagger's vectors, oracle frames, a runt and an empty frame.
func seedsFor(name string) []seed {
	var out []seed
	for _, v := range rxVectors {
		if v.tagger == name {
			out = append(out, seed{hx(v.in), 1, 0})
		}
	}
	for _, v := range txVectors {
		if v.tagger == name && v.err == nil {
			out = append(out, seed{hx(v.in), uint8(v.dest.Ports.First() & 0xff), uint8(v.dest.Flags) << 4})
		}
	}
	out = append(out, seed{naiveRx(name, hx(inner), 0, 1%rxWidth[name]), 2, 0x80}, seed{hx(runt), 0, 0}, seed{nil, 0, 0})
	return out
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/Fuzz*/ from seedsFor when DSA_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("DSA_WRITE_SEEDS") != "1" {
		t.Skip("set DSA_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	for _, name := range Names() {
		dir := filepath.Join("testdata", "fuzz", fuzzName(name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seedsFor(name) {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbyte(%q)\nbyte(%q)\n", s.data, s.port, s.flags)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fuzzTargets maps each tag protocol name to its fuzz target, read from the FuzzX functions of
// this file (each a one-line call of fuzzTagger), so that a new format needs only its target.
// Tests run in the package directory; the file is read when a test asks.
var fuzzTargets = sync.OnceValue(func() map[string]string {
	src, err := os.ReadFile("fuzz_test.go")
	if err != nil {
		panic(err)
	}
	m := map[string]string{}
	for _, sm := range regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\) +\{ fuzzTagger\(f, "([^"]+)"\) \}$`).FindAllSubmatch(src, -1) {
		m[string(sm[2])] = string(sm[1])
	}
	return m
})

// fuzzName is the fuzz target of a tag protocol name ("" if it has none).
func fuzzName(name string) string { return fuzzTargets()[name] }

func TestFuzzTargetsCoverAllTaggers(t *testing.T) {
	for _, n := range Names() {
		if fuzzName(n) == "" {
			t.Errorf("no fuzz target for %s", n)
		}
		if _, err := os.Stat(filepath.Join("testdata", "fuzz", fuzzName(n))); err != nil {
			t.Errorf("no seed corpus for %s: %v", n, err)
		}
	}
}

func FuzzNone(f *testing.F)         { fuzzTagger(f, "none") }
func FuzzDSA(f *testing.F)          { fuzzTagger(f, "dsa") }
func FuzzEDSA(f *testing.F)         { fuzzTagger(f, "edsa") }
func FuzzBrcm(f *testing.F)         { fuzzTagger(f, "brcm") }
func FuzzBrcmPrepend(f *testing.F)  { fuzzTagger(f, "brcm-prepend") }
func FuzzQCA(f *testing.F)          { fuzzTagger(f, "qca") }
func FuzzMTK(f *testing.F)          { fuzzTagger(f, "mtk") }
func FuzzKSZ8795(f *testing.F)      { fuzzTagger(f, "ksz8795") }
func FuzzKSZ9477(f *testing.F)      { fuzzTagger(f, "ksz9477") }
func FuzzKSZ9893(f *testing.F)      { fuzzTagger(f, "ksz9893") }
func FuzzLAN937x(f *testing.F)      { fuzzTagger(f, "lan937x") }
func FuzzRTL4A(f *testing.F)        { fuzzTagger(f, "rtl4a") }
func FuzzRTL84(f *testing.F)        { fuzzTagger(f, "rtl8_4") }
func FuzzRTL84T(f *testing.F)       { fuzzTagger(f, "rtl8_4t") }
func FuzzOcelot8021Q(f *testing.F)  { fuzzTagger(f, "ocelot-8021q") }
func FuzzVSC73xx8021Q(f *testing.F) { fuzzTagger(f, "vsc73xx-8021q") }
func FuzzSJA1105(f *testing.F)      { fuzzTagger(f, "sja1105") }
func FuzzAR9331(f *testing.F)       { fuzzTagger(f, "ar9331") }
func FuzzGSWIP(f *testing.F)        { fuzzTagger(f, "gswip") }
func FuzzHellcreek(f *testing.F)    { fuzzTagger(f, "hellcreek") }
func FuzzLAN9303(f *testing.F)      { fuzzTagger(f, "lan9303") }
func FuzzTrailer(f *testing.F)      { fuzzTagger(f, "trailer") }
