package rehearsal

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// figure is one PNG of the report.
type figure struct {
	File    string // name in the output folder
	Title   string
	Caption string
}

// The plots' colours, distinct in print and for most colour blindness.
var (
	blue   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	orange = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	green  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	red    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	purple = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	grey   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
)

const (
	plotWidth  = 9 * vg.Inch
	plotHeight = 4 * vg.Inch
)

// plot draws every figure into dir and returns them in report order.
func (rn *run) plot(dir string) ([]figure, error) {
	r := rn.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	end := time.Duration(0)
	for _, s := range r.samples {
		end = max(end, s.at)
	}
	width := bucketOf(end)
	opened := marks{opened: r.opened.Seconds()}
	for _, c := range r.chaos {
		if strings.HasPrefix(c.What, "kill ") || strings.HasPrefix(c.What, "fault ") {
			opened.kills = append(opened.kills, c.AfterS)
			opened.what = append(opened.what, partOf(c.What))
		}
	}
	figs := []struct {
		figure
		draw func(path string) error
	}{
		{figure{"queue.png", "Waiting room: queue depth, admissions and capacity",
			"Top: fans in line, as the room counts them (/metrics) and as the rehearsal's fans see themselves. " +
				"Bottom: admissions a second against the room's capacity and the fans inside checkout (active leases). " +
				"The dashed line is the opening; in a chaos rehearsal, each dotted red line a kill or a fault thrown."}, func(p string) error { return rn.plotQueue(p, opened) }},
		{figure{"hold_latency.png", "Hold latency over time",
			fmt.Sprintf("p50, p90 and p99 of POST /v1/holds per %s, every answered attempt (granted or refused).", width)},
			func(p string) error { return plotHoldLatency(p, r.holdLat, width, opened) }},
		{figure{"goodput.png", "Goodput: paid bookings a second",
			fmt.Sprintf("Bookings seen PAID per second, in buckets of %s, by the moment PAID was seen.", width)},
			func(p string) error { return plotGoodput(p, r.bookings, width, opened) }},
		{figure{"saga_lag.png", "Saga lag: checkout to PAID",
			"Each paid booking: from its checkout's answer (or the completed 3-D Secure challenge) to PAID seen by the fan " +
				"(who polls about once a second), by the moment of the checkout; the line is the p99 per bucket."},
			func(p string) error { return plotSagaLag(p, r.bookings, width, opened) }},
		{figure{"errors.png", "Answers that were problems, by type",
			"Every answer that was not a success, by problem type (no-answer: no HTTP answer; http-N: not a problem document). " +
				"seat-unavailable is contention for the same seats; payment-declined is the declined card of the mix."},
			func(p string) error { return plotErrors(p, r.failures) }},
		{figure{"fairness.png", "Fairness: place in the queue against time of purchase",
			"Each paid fan: their place in the waiting room (admitted before them plus their position once the sale was open) " +
				"against the moment their checkout was answered. First in, first out makes a rising band; Kendall's tau-b is in the summary."},
			func(p string) error { return plotFairness(p, r.bookings, opened.opened) }},
		{figure{"resources.png", "Resources: memory, goroutines and connections",
			"From top: the API process's resident memory and goroutines (its admin listener's /metrics; with --split, the first API's), " +
				"PostgreSQL's connections to the stack's database and Redis's used memory, every second. In a soak each must stay flat: " +
				"the summary's growth compares the last quarter with the second."},
			func(p string) error { return rn.plotResources(p, opened) }},
	}
	out := make([]figure, 0, len(figs))
	for _, f := range figs {
		if err := f.draw(filepath.Join(dir, f.File)); err != nil {
			return nil, fmt.Errorf("%s: %w", f.File, err)
		}
		out = append(out, f.figure)
	}
	return out, nil
}

// newPlot is a plot with the report's titles and a grid.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// addLine adds a named line of the points that are numbers; none, no line.
func addLine(p *plot.Plot, name string, c color.Color, dashed bool, xs, ys []float64) error {
	var pts plotter.XYs
	for i := range xs {
		if !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
			pts = append(pts, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addScatter adds one dot a point, named in the legend; no points, no
// dots.
func addScatter(p *plot.Plot, name string, c color.Color, radius vg.Length, pts plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = c, radius, draw.CircleGlyph{}
	p.Add(sc)
	p.Legend.Add(name, sc)
	return nil
}

// marks are the moments a timeline marks: the opening, and every kill of
// a chaos rehearsal (seconds from the start).
type marks struct {
	opened float64
	kills  []float64
	// what names each kill on the plot ("api2", "redis"), beside kills.
	what []string
}

// markOpening draws a dashed grey vertical line at the opening, when the
// sale opened during the rehearsal, and a dotted red one at every kill.
func markOpening(p *plot.Plot, m marks) {
	top := math.Max(p.Y.Max, 1)
	line := func(x float64, c color.Color, dashes []vg.Length) {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return
		}
		l.Color, l.Dashes = c, dashes
		p.Add(l)
	}
	if m.opened > 0 {
		line(m.opened, grey, []vg.Length{vg.Points(2), vg.Points(2)})
	}
	for _, k := range m.kills {
		line(k, killRed, []vg.Length{vg.Points(1), vg.Points(3)})
	}
	if len(m.what) == len(m.kills) && len(m.kills) > 0 {
		pts := make(plotter.XYs, len(m.kills))
		for i, k := range m.kills {
			pts[i] = plotter.XY{X: k, Y: p.Y.Min + (top-p.Y.Min)*0.03}
		}
		if l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: m.what}); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i].Color = killRed
				l.TextStyle[i].Rotation = math.Pi / 2 // read upwards from the foot of its line
				l.TextStyle[i].Font.Size = vg.Points(9)
			}
			l.Offset = vg.Point{X: vg.Points(-2)}
			p.Add(l)
		}
	}
}

// partOf is the part a break's mark names: "kill api2" is api2, "kill
// redis (master; ...)" redis, "fault psp (...)" psp faults.
func partOf(what string) string {
	rest, fault := strings.CutPrefix(what, "fault ")
	if !fault {
		rest = strings.TrimPrefix(what, "kill ")
	}
	name, _, _ := strings.Cut(rest, " ")
	if fault {
		return name + " faults"
	}
	return name
}

// killRed marks a chaos rehearsal's kills.
var killRed = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}

// saveTimeline writes a plot over the rehearsal's time to path: its axes
// made drawable and the opening marked.
func saveTimeline(p *plot.Plot, opened marks, path string) error {
	ensureRange(p)
	markOpening(p, opened)
	return p.Save(plotWidth, plotHeight, path)
}

// ensureRange gives an empty plot axes to draw.
func ensureRange(p *plot.Plot) {
	if p.X.Max <= p.X.Min {
		p.X.Min, p.X.Max = 0, 1
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Min, p.Y.Max = 0, 1
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
}

func (rn *run) plotQueue(path string, opened marks) error {
	ss := rn.rec.samples
	at := make([]float64, len(ss))
	depth, own, admitRate, capacity, leases := make([]float64, len(ss)), make([]float64, len(ss)),
		make([]float64, len(ss)), make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		at[i] = s.at.Seconds()
		depth[i], own[i], capacity[i], leases[i] = s.depth, float64(s.waiting), s.capacity, s.leases
		admitRate[i] = math.NaN()
		if i > 0 {
			dt := (s.at - ss[i-1].at).Seconds()
			if dt > 0 {
				admitRate[i] = float64(s.admitted-ss[i-1].admitted) / dt
				if !math.IsNaN(s.admittedTotal) && !math.IsNaN(ss[i-1].admittedTotal) {
					admitRate[i] = (s.admittedTotal - ss[i-1].admittedTotal) / dt
				}
			}
		}
	}
	top := newPlot("Waiting room", "", "fans in line")
	if err := addLine(top, "queue depth (/metrics)", blue, false, at, depth); err != nil {
		return err
	}
	if err := addLine(top, "fans queueing (rehearsal)", orange, true, at, own); err != nil {
		return err
	}
	top.Legend.Top = false // the line fills the top right
	ensureRange(top)
	markOpening(top, opened)
	bottom := newPlot("", "seconds since the rehearsal started", "fans")
	if err := addLine(bottom, "admitted a second", green, false, at, admitRate); err != nil {
		return err
	}
	if err := addLine(bottom, "capacity", red, true, at, capacity); err != nil {
		return err
	}
	if err := addLine(bottom, "inside checkout (leases)", purple, false, at, leases); err != nil {
		return err
	}
	bottom.Legend.Left = true // capacity and leases climb on the right
	ensureRange(bottom)
	markOpening(bottom, opened)
	return saveStacked(path, top, bottom)
}

// saveStacked draws plots one above the other, their x axes aligned.
func saveStacked(path string, ps ...*plot.Plot) error {
	img := vgimg.New(plotWidth, plotHeight*vg.Length(len(ps))*0.8)
	dc := draw.New(img)
	rows := make([][]*plot.Plot, len(ps))
	for i, p := range ps {
		rows[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(rows, draw.Tiles{Rows: len(ps), Cols: 1, PadY: vg.Millimeter * 3, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}, dc)
	for i, p := range ps {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func plotHoldLatency(path string, holds []timed, width time.Duration, opened marks) error {
	p := newPlot("Hold latency", "seconds since the rehearsal started", "milliseconds")
	at, p50, p90, p99 := latencyPercentiles(holds, width)
	for _, l := range []struct {
		name string
		c    color.Color
		ys   []float64
	}{{"p50", blue, p50}, {"p90", orange, p90}, {"p99", red, p99}} {
		if err := addLine(p, l.name, l.c, false, at, l.ys); err != nil {
			return err
		}
	}
	return saveTimeline(p, opened, path)
}

func plotGoodput(path string, bs []booking, width time.Duration, opened marks) error {
	p := newPlot("Goodput", "seconds since the rehearsal started", "paid bookings a second")
	var at, rate []float64
	for i, b := range bucketed(bs, func(b booking) time.Duration { return b.paidAt }, width) {
		at = append(at, (float64(i)+0.5)*width.Seconds())
		rate = append(rate, float64(len(b))/width.Seconds())
	}
	if err := addLine(p, "paid bookings a second", green, false, at, rate); err != nil {
		return err
	}
	return saveTimeline(p, opened, path)
}

func plotSagaLag(path string, bs []booking, width time.Duration, opened marks) error {
	p := newPlot("Saga lag", "checkout answered, seconds since the rehearsal started", "checkout to PAID, seconds")
	var pts plotter.XYs
	for _, b := range bs {
		pts = append(pts, plotter.XY{X: b.checkoutAt.Seconds(), Y: (b.paidAt - b.checkoutAt).Seconds()})
	}
	if err := addScatter(p, "a booking", blue, vg.Points(1.5), pts); err != nil {
		return err
	}
	lags := make([]timed, len(bs))
	for i, b := range bs {
		lags[i] = timed{at: b.checkoutAt, took: b.paidAt - b.checkoutAt}
	}
	at, _, _, p99 := latencyPercentiles(lags, width)
	for i := range p99 {
		p99[i] /= 1000
	}
	if err := addLine(p, "p99", red, false, at, p99); err != nil {
		return err
	}
	return saveTimeline(p, opened, path)
}

func plotErrors(path string, failures map[string]map[string]int) error {
	byType := map[string]int{}
	for _, m := range failures {
		for name, c := range m {
			byType[name] += c
		}
	}
	names := sortedKeys(byType)
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(byType[a], byType[b]) }) // most at the top
	p := newPlot("Problems by type", "answers", "")
	if len(names) == 0 {
		names, byType = []string{"none"}, map[string]int{"none": 0}
	}
	vals := make(plotter.Values, len(names))
	for i, n := range names {
		vals[i] = float64(byType[n])
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return err
	}
	bc.Horizontal, bc.Color, bc.LineStyle.Width = true, orange, 0
	p.Add(bc)
	p.NominalY(names...)
	p.X.Min = 0
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	h := max(plotHeight, vg.Length(len(names))*vg.Points(22)+vg.Inch)
	return p.Save(plotWidth, h, path)
}

func plotFairness(path string, bs []booking, opened float64) error {
	var pts plotter.XYs
	var xs, ys []float64
	for _, b := range bs {
		if !math.IsNaN(b.place) {
			pts = append(pts, plotter.XY{X: b.place, Y: b.checkoutAt.Seconds() - opened})
			xs, ys = append(xs, b.place), append(ys, b.checkoutAt.Seconds())
		}
	}
	title := "Fairness"
	if tau, ok := KendallTauB(xs, ys); ok {
		title = fmt.Sprintf("Fairness: Kendall tau-b %.3f over %d paid fans", tau, len(xs))
	}
	p := newPlot(title, "place in the queue", "checkout answered, seconds after opening")
	p.Legend.Left = true
	if err := addScatter(p, "a paid fan", purple, vg.Points(2), pts); err != nil {
		return err
	}
	ensureRange(p)
	return p.Save(plotWidth, plotHeight, path)
}
