package hotels

import (
	"errors"
	"math"
)

// WalkRisk is the probability that more guests arrive than there are rooms:
// with allotment rooms, booked bookings each showing up independently with
// probability showRate, arrivals X ~ Binomial(booked, showRate) and a walk
// happens when X > allotment. It sums the exact binomial tail in log space
// (no normal approximation), so it stays accurate far into the tail.
func WalkRisk(allotment, booked int, showRate float64) float64 {
	if booked <= allotment || showRate <= 0 {
		return 0
	}
	if showRate >= 1 {
		return 1
	}
	lq, lp := math.Log(showRate), math.Log1p(-showRate)
	lnFact := func(k int) float64 { v, _ := math.Lgamma(float64(k) + 1); return v }
	total := 0.0
	for k := allotment + 1; k <= booked; k++ {
		total += math.Exp(lnFact(booked) - lnFact(k) - lnFact(booked-k) + float64(k)*lq + float64(booked-k)*lp)
	}
	return min(total, 1)
}

// ErrBadRisk says a walk risk or show rate is outside (0, 1).
var ErrBadRisk = errors.New("hotels: walk risk and show rate must be between 0 and 1")

// OverbookLimit is the largest overbooking limit (bookings past the
// allotment) whose walk risk stays at or under maxRisk: revenue management
// picks the risk it accepts, this turns it into a limit.
func OverbookLimit(allotment int, showRate, maxRisk float64) (int, error) {
	if showRate <= 0 || showRate > 1 || maxRisk <= 0 || maxRisk >= 1 || allotment < 0 {
		return 0, ErrBadRisk
	}
	limit := 0
	// The risk grows with every booking past the allotment; the search
	// stops at the first limit over the risk (or at the allotment again, a
	// bound no sane show rate reaches).
	for extra := 1; extra <= max(allotment, 1); extra++ {
		if WalkRisk(allotment, allotment+extra, showRate) > maxRisk {
			break
		}
		limit = extra
	}
	return limit, nil
}
