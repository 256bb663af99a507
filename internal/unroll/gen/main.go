// Command gen writes the unrolled batch loops of one package (internal/unroll's Packages) in the
// current directory: `gen dsa` writes dsa's batch_x4.go, `gen lag` lag's xor_unrolled.go. The
// packages run it by go generate (go generate ./dsa, go generate ./lag).
package main

import (
	"fmt"
	"log"
	"os"

	"github.com/wirespeed/wirespeed/internal/unroll"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) != 2 || unroll.Packages[os.Args[1]] == nil {
		log.Fatal("usage: gen dsa|lag (in the package's directory)")
	}
	p := unroll.Packages[os.Args[1]]
	out, err := p.Generate(".")
	if err != nil {
		log.Fatal(fmt.Errorf("unroll %s: %w", p.Name, err))
	}
	if err := os.WriteFile(p.Out, out, 0o644); err != nil {
		log.Fatal(err)
	}
}
