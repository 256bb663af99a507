//go:build !dsa_noptp

package dsa

// ptpCompiled keeps the optional PTP timestamping branch in Conduit.Recv. Build with
// -tags dsa_noptp to compile it out (BenchmarkConduitPTP compares the builds).
const ptpCompiled = true

// errNoPTP is never returned in this build.
var errNoPTP error
