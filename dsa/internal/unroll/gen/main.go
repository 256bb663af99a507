// Command gen writes dsa's batch_x4.go from batch.go (run in the dsa directory: go generate).
package main

import (
	"log"
	"os"

	"github.com/wirespeed/wirespeed/dsa/internal/unroll"
)

func main() {
	src, err := os.ReadFile("batch.go")
	if err != nil {
		log.Fatal(err)
	}
	out, err := unroll.BatchLoops(src)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("batch_x4.go", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
