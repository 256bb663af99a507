// Package stats has the small statistics the bench harnesses share.
package stats

import "slices"

// Median returns the median of xs (the mean of the middle two for an even count), 0 for none. xs is
// not changed.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
