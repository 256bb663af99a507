//go:build dsa_noptp

package main

// ptpBuilt: package dsa was built with -tags dsa_noptp: the classifier is compiled out, and
// "ptp=on" measures a build that cannot classify (the reference for ptp=off).
const ptpBuilt = false
