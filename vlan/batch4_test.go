package vlan

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestUnrolledBlocksIdentical: in every four-frame loop of batch4.go the four per-frame blocks are
// one text that differs only in its `const k = N * frameSize` line, N = 0, 1, 2, 3 in order (so a
// fix made to one block and not the others fails here, not only where the differential tests
// happen to reach that block).
func TestUnrolledBlocksIdentical(t *testing.T) {
	src, err := os.ReadFile("batch4.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs := regexp.MustCompile(`(?s)\nfunc (\w+Run4)\(.*?\n}\n`).FindAllStringSubmatch(string(src), -1)
	if len(funcs) != 8 {
		t.Fatalf("found %d x4 functions, want 8", len(funcs))
	}
	kline := regexp.MustCompile(`(?m)^\t\t\tconst k = (\d) \* frameSize\n`)
	for _, f := range funcs {
		body := f[0]
		locs := kline.FindAllStringSubmatchIndex(body, -1)
		if len(locs) != 4 {
			t.Fatalf("%s: %d blocks, want 4", f[1], len(locs))
		}
		var blocks []string
		for i, l := range locs {
			if got := body[l[2]:l[3]]; got != string(rune('0'+i)) {
				t.Fatalf("%s: block %d has k = %s", f[1], i, got)
			}
			// A block runs from its const line to the closing brace at its own indentation.
			rest := body[l[1]:]
			end := strings.Index(rest, "\n\t\t}\n")
			if end < 0 {
				t.Fatalf("%s: block %d not closed", f[1], i)
			}
			blocks = append(blocks, rest[:end])
		}
		for i := 1; i < 4; i++ {
			if blocks[i] != blocks[0] {
				t.Errorf("%s: block %d differs from block 0:\n%s\n---\n%s", f[1], i, blocks[i], blocks[0])
			}
		}
	}
}
