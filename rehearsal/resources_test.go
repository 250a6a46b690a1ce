package rehearsal

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// series is n samples of f(i), for the resources of one run.
func series(n int, f func(i int) sample) []sample {
	out := make([]sample, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func TestASoakWithSteadyResourcesIsFlatAndOneThatLeaksIsNot(t *testing.T) {
	t.Parallel()
	steady := series(120, func(i int) sample {
		// A warm-up, then noise around a level: flat.
		rss := 200e6 + 5e6*math.Sin(float64(i))
		if i < 20 {
			rss = 100e6 + 5e6*float64(i)
		}
		return sample{rss: rss, goroutines: 300 + float64(i%7), pgConns: 24, redisBytes: 2e6 + float64(i%3)*1e4}
	})
	r := resources(steady)
	require.NotNil(t, r)
	require.True(t, r.Flat, "%+v", r)
	require.InDelta(t, 1, r.RSSBytes.Growth, 0.05)
	require.Equal(t, 24.0, r.PostgresConnections.Max)

	burst := series(120, func(i int) sample {
		g := 50.0
		if i > 95 && i < 105 { // a passing burst in the last quarter
			g = 140
		}
		return sample{rss: 200e6, goroutines: g, pgConns: 24, redisBytes: 2e6}
	})
	r = resources(burst)
	require.True(t, r.Flat, "%+v", r)
	require.Empty(t, r.Grew, "a burst that passes is not growth")

	leaking := series(120, func(i int) sample {
		return sample{rss: 200e6 + 2e6*float64(i), goroutines: 300 + 10*float64(i), pgConns: 24, redisBytes: math.NaN()}
	})
	r = resources(leaking)
	require.NotNil(t, r)
	require.False(t, r.Flat, "memory grows without bound")
	require.Greater(t, r.Goroutines.Growth, MaxGrowth)
	require.Equal(t, []string{"rss_bytes", "goroutines"}, r.Grew)
	require.Nil(t, r.RedisMemoryBytes, "a resource never measured has no trend")

	pool := series(120, func(i int) sample {
		c := 35.0
		if i > 100 { // grown to its size after a burst, and staying there
			c = 49
		}
		return sample{rss: 200e6, goroutines: 50, pgConns: c, redisBytes: 2e6}
	})
	r = resources(pool)
	require.True(t, r.Flat, "connections are bounded by their pools: named, not failed")
	require.Equal(t, []string{"postgres_connections"}, r.Grew)
}

func TestTooFewSamplesMakeNoTrendAndASoakWithoutThemFails(t *testing.T) {
	t.Parallel()
	require.Nil(t, resources(series(5, func(int) sample { return sample{rss: 1, goroutines: 1, pgConns: 1, redisBytes: 1} })))
	require.True(t, (&Summary{Soak: true}).Failed(), "a soak that measured nothing cannot say it was flat")
	require.False(t, (&Summary{}).Failed())
	require.True(t, (&Summary{Soak: true, Resources: &Resources{Flat: false}}).Failed())
	require.False(t, (&Summary{Soak: true, Resources: &Resources{Flat: true}}).Failed())
}

func TestABreaksMarkNamesItsPartOnThePlots(t *testing.T) {
	t.Parallel()
	for what, part := range map[string]string{
		"kill api2": "api2", "kill redis (master; the sentinel fails over)": "redis",
		"kill postgres (primary crashed)": "postgres", "fault psp (lost answers, duplicate, out-of-order and late webhooks)": "psp faults",
	} {
		require.Equal(t, part, partOf(what), what)
	}
}
