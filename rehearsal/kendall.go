package rehearsal

import "math"

// KendallTauB is Kendall's rank correlation between x and y with the tau-b
// correction for ties:
//
//	tau_b = (C - D) / sqrt((n0 - n1) (n0 - n2))
//
// where C and D count the concordant and discordant pairs, n0 = n(n-1)/2
// all pairs, n1 the pairs tied in x and n2 the pairs tied in y (a pair tied
// in both counts in both). It is 1 when y orders the points exactly as x
// does, -1 when exactly the reverse, near 0 when unrelated. ok is false
// when it is undefined: fewer than two points, different lengths, or every
// x (or every y) the same.
//
// Here x is a fan's place in the waiting room and y the moment the fan
// bought: a fair first-in, first-out room gives a tau near 1, diluted only
// by how long fans take to choose and pay. Quadratic in the points, which
// are paid bookings (at most the seats on sale).
func KendallTauB(x, y []float64) (tau float64, ok bool) {
	n := len(x)
	if n < 2 || len(y) != n {
		return 0, false
	}
	var concordant, discordant, tiedX, tiedY float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := sign(x[j]-x[i]), sign(y[j]-y[i])
			switch {
			case dx == 0 && dy == 0:
				tiedX++
				tiedY++
			case dx == 0:
				tiedX++
			case dy == 0:
				tiedY++
			case dx == dy:
				concordant++
			default:
				discordant++
			}
		}
	}
	pairs := float64(n) * float64(n-1) / 2
	den := math.Sqrt((pairs - tiedX) * (pairs - tiedY))
	if den == 0 || math.IsNaN(den) {
		return 0, false
	}
	return (concordant - discordant) / den, true
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
