package money

import (
	"strconv"
	"strings"
)

// exponents are the ISO 4217 minor-unit exponents that differ from 2: how
// many digits of an amount in minor units follow the decimal point.
var exponents = map[string]int{
	// No minor unit.
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0,
	"PYG": 0, "RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	// Thousandths.
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
	// Ten-thousandths (units of account).
	"CLF": 4, "UYW": 4,
}

// Exponent is the currency's ISO 4217 minor-unit exponent: 0 for JPY (an
// amount of 15000 is ¥15000), 3 for KWD (1500 is 1.500 dinars), 2 for the
// rest. The currency code is matched case-insensitively.
func Exponent(currency string) int {
	if e, ok := exponents[strings.ToUpper(currency)]; ok {
		return e
	}
	return 2
}

// Decimal is the amount in major units as a plain decimal with the
// currency's exponent, no grouping and no currency: "150.00", "15000",
// "1.500", "-0.05".
func (m Money) Decimal() string {
	exp := Exponent(m.Currency)
	neg := m.Amount < 0
	// The magnitude of MinInt64 does not fit an int64: format unsigned.
	mag := uint64(m.Amount)
	if neg {
		mag = -mag
	}
	digits := strconv.FormatUint(mag, 10)
	if exp > 0 {
		if len(digits) <= exp {
			digits = strings.Repeat("0", exp-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-exp] + "." + digits[len(digits)-exp:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// Format is the amount as a fan reads it in any language: the ISO 4217
// code, a space, and the decimal with the currency's minor unit ("EUR
// 150.00", "JPY 15000", "KWD 1.500", "EUR -1.50"). Codes rather than
// symbols: "$" alone names a dozen currencies, and the code reads the same
// in every locale.
func Format(m Money) string {
	cur := strings.ToUpper(m.Currency)
	if cur == "" {
		return m.Decimal()
	}
	return cur + " " + m.Decimal()
}
