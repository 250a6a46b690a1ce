// Package defaults fills in the settings an options struct was given
// without. Encore's option types (backpressure.Bounds, outbox.Options,
// seatmap.CacheOptions, waitingroom.Risk, ...) read a number that is zero or
// negative as not set; each constructor names its defaults with one Fill a
// field, so the default sits on the line of the field it fills.
package defaults

// number is what a setting counts in: sizes, rates, fractions, durations.
type number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Fill sets *v to d when *v is zero or negative (not set).
func Fill[T number](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
