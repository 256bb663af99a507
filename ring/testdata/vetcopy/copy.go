// Package vetcopy copies ring values on purpose: ring's vet test expects go
// vet's copylocks check to report every function here.
package vetcopy

import "github.com/wirespeed/wirespeed/ring"

// Deref copies an SPSC.
func Deref(r *ring.SPSC[int]) int {
	c := *r
	return c.Cap()
}

// ByValue takes a FanIn by value.
func ByValue(f ring.FanIn[int]) int { return f.N() }

// Out returns a FanOut by value.
func Out(f *ring.FanOut[int]) ring.FanOut[int] { return *f }
