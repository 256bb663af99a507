//go:build !dsa_noptp

package dsa

// ptpCompiled keeps the optional PTP timestamping branch in Conduit.Recv. Build with
// -tags dsa_noptp to compile it out (used to show that the branch costs nothing when off).
const ptpCompiled = true
