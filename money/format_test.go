package money_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/money"
)

func TestFormatWritesEachCurrencyWithItsMinorUnit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   money.Money
		want string
	}{
		{"euros have two decimals", money.Money{Amount: 15000, Currency: "EUR"}, "EUR 150.00"},
		{"dollars have two decimals", money.Money{Amount: 1999, Currency: "USD"}, "USD 19.99"},
		{"a few cents keep their leading zero", money.Money{Amount: 5, Currency: "USD"}, "USD 0.05"},
		{"yen have no minor unit", money.Money{Amount: 15000, Currency: "JPY"}, "JPY 15000"},
		{"won have no minor unit", money.Money{Amount: 70000, Currency: "KRW"}, "KRW 70000"},
		{"dinars have three decimals", money.Money{Amount: 1500, Currency: "KWD"}, "KWD 1.500"},
		{"a fils is a thousandth of a dinar", money.Money{Amount: 7, Currency: "BHD"}, "BHD 0.007"},
		{"zero euros", money.Money{Amount: 0, Currency: "EUR"}, "EUR 0.00"},
		{"zero yen", money.Money{Amount: 0, Currency: "JPY"}, "JPY 0"},
		{"zero dinars", money.Money{Amount: 0, Currency: "KWD"}, "KWD 0.000"},
		{"a negative amount puts the sign on the number", money.Money{Amount: -150, Currency: "EUR"}, "EUR -1.50"},
		{"a negative small amount", money.Money{Amount: -5, Currency: "KWD"}, "KWD -0.005"},
		{"a negative yen amount", money.Money{Amount: -300, Currency: "JPY"}, "JPY -300"},
		{"a lower-case code is upper-cased", money.Money{Amount: 100, Currency: "eur"}, "EUR 1.00"},
		{"the smallest int64 does not overflow", money.Money{Amount: math.MinInt64, Currency: "JPY"}, "JPY -9223372036854775808"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, money.Format(c.in))
		})
	}
}

func TestExponentFollowsISO4217(t *testing.T) {
	t.Parallel()
	for cur, want := range map[string]int{"EUR": 2, "USD": 2, "GBP": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3,
		"JOD": 3, "OMR": 3, "TND": 3, "IQD": 3, "LYD": 3, "jpy": 0, "XYZ": 2} {
		require.Equal(t, want, money.Exponent(cur), cur)
	}
}
