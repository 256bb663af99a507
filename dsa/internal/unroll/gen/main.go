// Command gen writes dsa's batch_x4.go from the batch loops of batch.go and the tag_*.go files
// (run in the dsa directory: go generate).
package main

import (
	"log"
	"os"

	"github.com/wirespeed/wirespeed/dsa/internal/unroll"
)

func main() {
	srcs, err := unroll.PackageSources(".")
	if err != nil {
		log.Fatal(err)
	}
	out, err := unroll.BatchLoops(srcs...)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("batch_x4.go", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
