//go:build !dsa_noptp

package main

// ptpBuilt: package dsa was built with its PTP classifier (the default).
const ptpBuilt = true
