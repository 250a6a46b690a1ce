package rehearsal

import (
	"context"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
)

// ServerSample is what the stack's servers say at one moment.
type ServerSample struct {
	// PostgresConnections to the stack's database (pg_stat_activity).
	PostgresConnections float64
	// RedisMemoryBytes is Redis's used_memory.
	RedisMemoryBytes float64
}

// Servers reads the stack's servers for the resources plot and the soak's
// verdict (Config.Servers).
type Servers func(ctx context.Context) (ServerSample, error)

// Trend is one resource over the rehearsal.
type Trend struct {
	First float64 `json:"first"`
	Last  float64 `json:"last"`
	Max   float64 `json:"max"`
	// Growth is the median of the last quarter of the samples over the
	// median of the second quarter (the first is warm-up): 1 is flat, 1.5
	// half as much again. Medians, so a passing burst does not read as
	// growth.
	Growth float64 `json:"growth"`
}

// Resources are the stack's resources over a rehearsal: the API process's
// resident memory and goroutines (from its admin listener's /metrics),
// PostgreSQL's connections and Redis's memory (Config.Servers). A
// resource not measured is absent.
type Resources struct {
	RSSBytes            *Trend `json:"rss_bytes,omitempty"`
	Goroutines          *Trend `json:"goroutines,omitempty"`
	PostgresConnections *Trend `json:"postgres_connections,omitempty"`
	RedisMemoryBytes    *Trend `json:"redis_memory_bytes,omitempty"`
	// Flat: neither memory (the API's resident memory, Redis's) grew by
	// more than MaxGrowth: what a leak would show.
	Flat bool `json:"flat"`
	// Grew names every resource, memory or not, that grew by more than
	// MaxGrowth: goroutines or connections that grew and stayed are worth
	// a look even when bounded (a pool grown to its size after a burst).
	Grew []string `json:"grew,omitempty"`
}

// MaxGrowth is the most a resource may grow (Trend.Growth) in a soak that
// is flat: a leak grows without bound, a warm cache or a pool at its size
// does not.
const MaxGrowth = 1.25

// trendOf is the trend of the samples that are numbers; nil with fewer
// than eight.
func trendOf(vs []float64) *Trend {
	vs = slices.DeleteFunc(slices.Clone(vs), func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
	if len(vs) < 8 {
		return nil
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	q := len(vs) / 4
	t := &Trend{First: vs[0], Last: vs[len(vs)-1], Max: slices.Max(vs), Growth: 1}
	if base := median(vs[q : 2*q]); base > 0 {
		t.Growth = median(vs[len(vs)-q:]) / base
	}
	return t
}

// resources sums up the samples.
func resources(ss []sample) *Resources {
	pick := func(f func(sample) float64) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return out
	}
	r := &Resources{
		RSSBytes:            trendOf(pick(func(s sample) float64 { return s.rss })),
		Goroutines:          trendOf(pick(func(s sample) float64 { return s.goroutines })),
		PostgresConnections: trendOf(pick(func(s sample) float64 { return s.pgConns })),
		RedisMemoryBytes:    trendOf(pick(func(s sample) float64 { return s.redisBytes })),
	}
	r.Flat = r.RSSBytes != nil || r.RedisMemoryBytes != nil
	measured := false
	for _, t := range []struct {
		name   string
		tr     *Trend
		memory bool
	}{{"rss_bytes", r.RSSBytes, true}, {"goroutines", r.Goroutines, false},
		{"postgres_connections", r.PostgresConnections, false}, {"redis_memory_bytes", r.RedisMemoryBytes, true}} {
		if t.tr == nil {
			continue
		}
		measured = true
		if t.tr.Growth > MaxGrowth {
			r.Grew = append(r.Grew, t.name)
			if t.memory {
				r.Flat = false
			}
		}
	}
	if !measured {
		return nil
	}
	return r
}

// plotResources draws the four resources one above the other.
func (rn *run) plotResources(path string, m marks) error {
	ss := rn.rec.samples
	at := make([]float64, len(ss))
	rss, gr, pg, rd := make([]float64, len(ss)), make([]float64, len(ss)), make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		at[i] = s.at.Seconds()
		rss[i], gr[i], pg[i], rd[i] = s.rss/(1<<20), s.goroutines, s.pgConns, s.redisBytes/(1<<20)
	}
	panels := []struct {
		title, unit, name string
		ys                []float64
	}{
		{"Resources", "MiB", "API process resident memory", rss},
		{"", "goroutines", "API process goroutines", gr},
		{"", "connections", "PostgreSQL connections", pg},
		{"", "MiB", "Redis used memory", rd},
	}
	var ps []*plot.Plot
	for i, p := range panels {
		x := ""
		if i == len(panels)-1 {
			x = "seconds since the rehearsal started"
		}
		pl := newPlot(p.title, x, p.unit)
		if err := addLine(pl, p.name, []color.Color{blue, orange, green, purple}[i], false, at, p.ys); err != nil {
			return err
		}
		ensureRange(pl)
		markOpening(pl, m)
		ps = append(ps, pl)
	}
	return saveStacked(path, ps...)
}
