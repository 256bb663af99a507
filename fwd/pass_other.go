//go:build !amd64 || purego || fwd_portable

package fwd

import (
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

func rxLoop(fe unsafe.Pointer, p, q int, t *portTab) (int, int) { return rxLoopGo(fe, p, q, t) }

func txLoop(fe, ne unsafe.Pointer, p int, ab unsafe.Pointer, na uint64, mp unsafe.Pointer) int {
	return txLoopGo(fe, ne, p, ab, na, mp)
}

func prefetchFrames(mem unsafe.Pointer, fr []frame.Frame) {}
