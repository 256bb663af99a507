// Package bench holds wirespeed's comparison benchmarks against peer libraries and plain reference
// implementations. It is a separate module so that the library's go.mod stays lean: the peers (such as
// github.com/gaissmai/bart) are dependencies of this module only.
//
// Run, for example:
//
//	cd bench && go test -run '^$' -bench FIBLookup -count 6 | tee fib.txt
//	go run golang.org/x/perf/cmd/benchstat@latest fib.txt
package bench
