// Command gen rewrites xor_unrolled.go from xor.go in the current directory (package lag): run by
// go generate ./lag.
package main

import (
	"log"
	"os"

	"github.com/wirespeed/wirespeed/lag/internal/unroll"
)

func main() {
	src, err := os.ReadFile("xor.go")
	if err != nil {
		log.Fatal(err)
	}
	out, err := unroll.Unrolled(src, unroll.Loops, unroll.Factor)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("xor_unrolled.go", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
