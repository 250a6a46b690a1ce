// Package pricing is Encore's price rule: a scarcity multiplier from a
// section's occupancy, and a promotion discount, both in basis points and both
// applied with integer arithmetic and half-up rounding. The price it returns is
// frozen on the reservation item at hold time and is the price charged.
package pricing

import (
	"errors"
	"time"

	"github.com/encore-tickets/encore/money"
)

// Basis points: 10,000 is 1.0x.
const (
	BaseBps       = 10000
	HalfFullBps   = 12500 // from 50% occupancy
	NearlyFullBps = 15000 // from 80% occupancy
	LastWeekBps   = 500   // added within 7 days of the show
	CapBps        = 15000 // never more than 1.5x
)

// ErrInvalid is returned for a negative price or a discount out of range.
var ErrInvalid = errors.New("pricing: invalid input")

// Multiplier returns the surge multiplier in basis points for a section with
// occupied of total units taken, for a show starting at startsAt seen at now.
// Occupancy is read from a committed snapshot, not serialised: two buyers in
// the same instant may see the same figure, which is why the frozen quote, not
// the browse price, is what counts.
func Multiplier(occupied, total int64, startsAt, now time.Time) int {
	if total < 1 {
		total = 1
	}
	if occupied < 0 {
		occupied = 0
	}
	pct := occupied * 100 / total
	m := BaseBps
	switch {
	case pct >= 80:
		m = NearlyFullBps
	case pct >= 50:
		m = HalfFullBps
	}
	if startsAt.Sub(now) <= 7*24*time.Hour {
		m += LastWeekBps
	}
	return min(m, CapBps)
}

// Quote is one unit's frozen price.
type Quote struct {
	Base        int64 // base price, minor units
	SurgeBps    int
	Discount    int64 // minor units taken off by the promotion
	PriceAtLock int64 // what the fan pays for the unit
}

// Price applies the multiplier and then the discount to a base price.
// Both roundings are half-up on the non-negative integers involved.
func Price(base int64, surgeBps, discountBps int) (Quote, error) {
	if base < 0 || surgeBps < BaseBps || surgeBps > CapBps || discountBps < 0 || discountBps > 10000 {
		return Quote{}, ErrInvalid
	}
	product, err := money.MulInt(base, int64(surgeBps))
	if err != nil {
		return Quote{}, err
	}
	gross := product/10000 + boolInt(product%10000 >= 5000)
	dprod, err := money.MulInt(gross, int64(discountBps))
	if err != nil {
		return Quote{}, err
	}
	discount := dprod/10000 + boolInt(dprod%10000 >= 5000)
	return Quote{Base: base, SurgeBps: surgeBps, Discount: discount, PriceAtLock: gross - discount}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Tax is the tax at rateBp basis points in amount (minor units), rounded
// half up: with included, amount is the gross price and the tax is the part
// of it that is tax (amount × rate / (1 + rate)); otherwise amount is net
// and the tax comes on top (amount × rate). A negative amount (a credit)
// is taxed as its opposite, negated.
func Tax(amount int64, rateBp int, included bool) int64 {
	if rateBp <= 0 || amount == 0 {
		return 0
	}
	if amount < 0 {
		return -Tax(-amount, rateBp, included)
	}
	r := int64(rateBp)
	if included {
		return (amount*r*2 + (10000 + r)) / (2 * (10000 + r))
	}
	return (amount*r + 5000) / 10000
}
