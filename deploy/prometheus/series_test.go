package prometheus

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// counterBase is where every synthetic counter and histogram bucket starts.
// A counter that starts above zero keeps rate() from clamping its
// extrapolation at zero, so every series of a window extrapolates alike and
// a ratio of two rates is exactly the ratio of their increases, which the
// tests can compute by hand.
const counterBase = 1000

// gen renders synthetic series for promqltest's load command: a sample every
// step from time zero to span.
type gen struct {
	step, span time.Duration
	// le formats a histogram bucket's boundary (promLE by default).
	le func(float64) string
}

func newGen(step, span time.Duration) gen { return gen{step: step, span: span, le: promLE} }

// promLE is how Prometheus 3 stores a classic histogram's le label: as a
// float, so an integer boundary gains ".0".
func promLE(b float64) string {
	s := strconv.FormatFloat(b, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// clientLE is how client_golang exposes le, which Prometheus 2 keeps.
func clientLE(b float64) string { return strconv.FormatFloat(b, 'g', -1, 64) }

// times are the sample times from zero to span.
func (g gen) times() []time.Duration {
	var ts []time.Duration
	for t := time.Duration(0); t <= g.span; t += g.step {
		ts = append(ts, t)
	}
	return ts
}

// load is the promqltest script that loads lines.
func (g gen) load(lines ...string) string {
	return fmt.Sprintf("load %s\n  %s\n", promDuration(g.step), strings.Join(lines, "\n  "))
}

// promDuration formats d as a Prometheus duration (15s, 1m).
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

func render(series string, vals []float64) string {
	var b strings.Builder
	b.WriteString(series)
	for _, v := range vals {
		b.WriteByte(' ')
		if math.IsNaN(v) {
			b.WriteString("_")
			continue
		}
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return b.String()
}

// counter is a counter that starts at counterBase and grows by inc(t) in
// the step that ends at t.
func (g gen) counter(series string, inc func(t time.Duration) float64) string {
	var vals []float64
	v := float64(counterBase)
	for i, t := range g.times() {
		if i > 0 {
			v += inc(t)
		}
		vals = append(vals, v)
	}
	return render(series, vals)
}

// gauge is a gauge worth v(t) at t; NaN leaves the sample out.
func (g gen) gauge(series string, v func(t time.Duration) float64) string {
	var vals []float64
	for _, t := range g.times() {
		vals = append(vals, v(t))
	}
	return render(series, vals)
}

// histogram is a classic histogram (its buckets, _count and _sum) that
// observes obs(t) (value: how many times) in the step that ends at t, on
// top of counterBase observations of zero.
func (g gen) histogram(metric, labels string, buckets []float64, obs func(t time.Duration) map[float64]float64) []string {
	bounds := append(append([]float64{}, buckets...), math.Inf(1))
	sort.Float64s(bounds)
	cum := make([][]float64, len(bounds))
	var count, sum []float64
	c, s := float64(counterBase), 0.0
	inBucket := make([]float64, len(bounds))
	for i := range inBucket {
		inBucket[i] = counterBase
	}
	for i, t := range g.times() {
		if i > 0 {
			for v, n := range obs(t) {
				c += n
				s += v * n
				for j, b := range bounds {
					if v <= b {
						inBucket[j] += n
					}
				}
			}
		}
		for j := range bounds {
			cum[j] = append(cum[j], inBucket[j])
		}
		count = append(count, c)
		sum = append(sum, s)
	}
	sep := ""
	if labels != "" {
		sep = ","
	}
	var lines []string
	for j, b := range bounds {
		le := "+Inf"
		if !math.IsInf(b, 1) {
			le = g.le(b)
		}
		lines = append(lines, render(fmt.Sprintf("%s_bucket{%s%sle=%q}", metric, labels, sep, le), cum[j]))
	}
	lines = append(lines,
		render(fmt.Sprintf("%s_count{%s}", metric, labels), count),
		render(fmt.Sprintf("%s_sum{%s}", metric, labels), sum))
	return lines
}

// exponential are client_golang's ExponentialBuckets.
func exponential(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// The buckets Encore's histograms are registered with.
var (
	httpBuckets    = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	holdBuckets    = exponential(0.0005, 2, 14)
	queueBuckets   = exponential(0.5, 2, 16)
	paidBuckets    = exponential(0.25, 2, 12)
	webhookBuckets = exponential(0.05, 2, 14)
)

// each is a constant n per step.
func each(n float64) func(time.Duration) float64 { return func(time.Duration) float64 { return n } }

// scaled is f times k.
func scaled(f func(time.Duration) float64, k float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 { return f(t) * k }
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
