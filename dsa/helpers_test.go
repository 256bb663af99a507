package dsa

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// Test frames. Every vector is built from these pieces so that each tag's bytes stand out.
const (
	// DA 00:11:22:33:44:55, SA 00:aa:bb:cc:dd:ee.
	macs = "001122334455 00aabbccddee"
	// Link-local DA 01:80:c2:00:00:0e (LLDP), same SA: KSZ sets its override bit for these.
	llMacs = "0180c200000e 00aabbccddee"
	et     = "0800"
	// IPv4 10.0.0.1 -> 10.0.0.2, UDP 1234 -> 5678, 18 data bytes: 46 bytes, so macs+et+pl = 60.
	pl = "4500002e 00004000 401126bd 0a000001 0a000002" + " 04d2162e 001a0000" +
		" 00010203 04050607 08090a0b 0c0d0e0f 1011"
	inner = macs + " " + et + " " + pl
	// A 42-byte ARP request: tail taggers and brcm pad it before tagging.
	runt = macs + " 0806 0001 0800 06 04 0001 00aabbccddee 0a000001 000000000000 0a000002"
)

// hx decodes hex with spaces.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// zeros is n zero bytes in hex.
func zeros(n int) string { return strings.Repeat("00", n) }

// oneFrame returns a pool and a batch holding one frame with the given bytes (64 bytes of
// headroom, ample tailroom).
func oneFrame(t testing.TB, data []byte) (*frame.Pool, *frame.Batch) {
	t.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8, BufSize: 2048, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(4)
	if n, _ := pool.Alloc(b, 1); n != 1 {
		t.Fatal("alloc")
	}
	setFrame(b, 0, data)
	return pool, b
}

// fiveFrames returns a batch of five frames (buffers laid out as oneFrame's), each with the given
// bytes and like's Head, Tail (at most), Flags, TPID and TCI, and the descriptors before.
func fiveFrames(t testing.TB, data []byte, like frame.Frame) (*frame.Batch, []frame.Frame) {
	t.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8, BufSize: 2048, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(5)
	if n, _ := pool.Alloc(b, 5); n != 5 {
		t.Fatal("alloc")
	}
	for k := range 5 {
		setFrame(b, k, data)
		f := &b.Frames[k]
		f.Head, f.Tail = like.Head, min(f.Tail, like.Tail)
		f.Flags, f.TPID, f.TCI = like.Flags, like.TPID, like.TCI
	}
	return b, append([]frame.Frame(nil), b.Frames...)
}

func setFrame(b *frame.Batch, i int, data []byte) {
	f := &b.Frames[i]
	if !f.Resize(len(data)) {
		panic("frame too long")
	}
	copy(f.Data(b.Mem), data)
}

func mustTagger(t testing.TB, name string) Tagger {
	t.Helper()
	tg, err := ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// decodeInfo is Tagger.Decode returning the Info, for tests that compare it.
func decodeInfo(tg Tagger, b *frame.Batch, i int) (Info, error) {
	var in Info
	err := tg.Decode(b, i, &in)
	return in, err
}

// parseInfo is Tagger.Parse returning the Info.
func parseInfo(tg Tagger, p []byte) (Info, error) {
	var in Info
	err := tg.Parse(p, &in)
	return in, err
}

// txPadTo is the length Encode pads a frame to before tagging it toward d: the format's PadTo,
// or 60 for mtk with DestPad.
func txPadTo(tg Tagger, d Dest) int {
	if tg.Name() == "mtk" && d.Flags&DestPad != 0 {
		return 60
	}
	return tg.Spec().PadTo
}
