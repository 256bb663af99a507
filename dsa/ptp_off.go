//go:build dsa_noptp

package dsa

// ptpCompiled is false: Conduit.Recv has no timestamping branch at all (build tag dsa_noptp).
const ptpCompiled = false
