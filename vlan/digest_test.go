package vlan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// memDigest runs every path that mem.go's helpers serve (Parse, SetTCI, Pop and Push with their
// fast paths, ClassifyInPlace's fast loops, Apply) over seeded edge batches and returns a hash of
// everything they leave: headers, errors, descriptors, arenas, counters. A default build and a
// vlan_portable build (no unsafe access) must compute the same digest.
func memDigest(t testing.TB) string {
	h := sha256.New()
	put := func(vs ...any) {
		for _, v := range vs {
			fmt.Fprintf(h, "%v|", v)
		}
	}
	p9100, _ := NewParser(TPID9100)
	for seed := uint64(0); seed < 40; seed++ {
		for _, mk := range []func(chooser) (*frame.Batch, *frame.Batch, *frame.Batch){edgeBatches, denseEdgeBatches} {
			a, b, c := mk(rand.New(rand.NewPCG(seed, 13)))
			recycleEdge(b, c)
			for i := range a.Frames {
				for _, p := range []*Parser{&std, &p9100} {
					var hd Header
					err := p.Parse(a.Bytes(i), &hd)
					put(hd, err)
				}
			}
			for i := range a.Frames {
				put(SetTCI(a, i, 0x5a5a))
			}
			for i := range a.Frames {
				tg, err := Pop(a, i)
				put(tg, err)
			}
			for i := range a.Frames {
				put(Push(a, i, Tag{TPID8021Q, 0x0123}))
			}
			hashBatch(h, a)
			recycleEdge(a)
		}
		dst, src := frame.MAC{2, 0, 0, 0, 0, 0xd}, frame.MAC{2, 0, 0, 0, 0, 5}
		for di, d := range classifyDemuxes(t) {
			var rws []Rewrite
			for _, id := range d.Interfaces() {
				rw, err := d.Rewrite(id, dst, src, frame.TypeIPv4)
				if err != nil {
					t.Fatal(err)
				}
				rws = append(rws, rw)
			}
			for _, port := range []uint16{0, 1, PerFramePort} {
				b := classifyEdgeBatches(rand.New(rand.NewPCG(seed, 17)))[0]
				w := d.NewWorker()
				put(di, port, w.ClassifyInPlace(port, b), w.Drops())
				for i := range b.Frames {
					put(w.Apply(b, i, &rws[i%len(rws)]))
				}
				put(w.local)
				hashBatch(h, b)
				recycleEdge(b)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashBatch writes b's descriptors and arena into h.
func hashBatch(h hash.Hash, b *frame.Batch) {
	binary.Write(h, binary.LittleEndian, b.Frames)
	h.Write(b.Mem)
}

// TestDigest writes memDigest to the file $VLAN_DIGEST, for TestPortable, which runs it in a
// vlan_portable build; without the variable it has nothing to do.
func TestDigest(t *testing.T) {
	out := os.Getenv("VLAN_DIGEST")
	if out == "" {
		t.Skip("VLAN_DIGEST not set (TestPortable sets it)")
	}
	if err := os.WriteFile(out, []byte(memDigest(t)), 0o644); err != nil {
		t.Fatal(err)
	}
}
