// Package money holds the one representation of an amount in Encore: integer
// minor units with the ISO 4217 currency beside them. There are no floats.
package money

import (
	"errors"
	"math"
)

// Money is an amount in minor units (cents) of Currency.
type Money struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// ErrOverflow is returned when arithmetic would leave the int64 range.
var ErrOverflow = errors.New("money: overflow")

// ErrCurrencyMismatch is returned when adding amounts of two currencies.
var ErrCurrencyMismatch = errors.New("money: currency mismatch")

// Add returns a+b, refusing to mix currencies or overflow.
func (m Money) Add(o Money) (Money, error) {
	if m.Currency != o.Currency {
		return Money{}, ErrCurrencyMismatch
	}
	s, err := AddInt(m.Amount, o.Amount)
	return Money{Amount: s, Currency: m.Currency}, err
}

// AddInt adds two minor-unit amounts with an overflow check.
func AddInt(a, b int64) (int64, error) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, ErrOverflow
	}
	return a + b, nil
}

// MulInt multiplies with an overflow check.
func MulInt(a, b int64) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, ErrOverflow
	}
	return c, nil
}
