package system_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
)

// BenchmarkSeatMapInChromium measures the fan app's whole-venue seat map of
// the demo night (20,000 seats in 21 sections) in headless Chromium. Each
// iteration:
//
//   - navigates to the event's page with the browser's HTTP cache off (a
//     first visit) and reads the "seatmap:interactive" mark: navigation
//     start to every seat drawn and the map taking keys and pointers
//     (interactive_ms);
//   - holds a random available seat through the API as another fan, then
//     releases it, and reads from the page how long each invalidation took
//     from arriving on the live socket to the frame drawn with the new
//     bitmap (repaint_ms, the median of both; repaint_max_ms), and from
//     sending the request to that frame (request_to_paint_ms);
//   - scripts a pan and a zoom of the whole map (120 frames each, one step
//     a frame) and reads the intervals between animation frames and the
//     map's own drawing time per frame;
//   - measures two ceilings in the same page: fetching every section's seat
//     JSON and bitmap with no drawing (ceiling_fetch_ms), and filling
//     20,000 arcs at the seats' places on a blank canvas of the map's size
//     (ceiling_arcs_ms, beside full_paint_ms: the map drawing the same
//     view, both flushed by a one-pixel read).
//
// Sub-benchmarks: encore_dev, against a running `encore dev`
// (ENCORE_BENCH_URL, loopback only; skipped without it), the configuration
// a user runs and the headline; test_stack, the in-test stack of the
// browser tests with the demo data seeded (PostgreSQL and Redis from
// testenv). ENCORE_BENCH_EVENT names another event.
func BenchmarkSeatMapInChromium(b *testing.B) {
	b.Run("encore_dev", func(b *testing.B) {
		st := newStack(b)
		benchSeatMap(b, st, st.event())
	})
	b.Run("test_stack", func(b *testing.B) {
		base := seatMapStack(b)
		event := os.Getenv("ENCORE_BENCH_EVENT")
		if event == "" {
			event = demo.DemoNightID
		}
		benchSeatMap(b, &stack{b: b, base: base, http: &http.Client{Timeout: 30 * time.Second}}, event)
	})
}

// seatMapFigures are one iteration's figures, in milliseconds.
type seatMapFigures struct {
	Interactive, Fetched, CeilingFetch, CeilingArcs, CeilingBlit, FullPaint float64
	Repaints, RepaintFetches, RequestToPaint                                []float64
	PanFrames, PanDraws, ZoomFrames, ZoomDraws                              []float64
}

func benchSeatMap(b *testing.B, st *stack, eventID string) {
	ctx := browser(b, 15*time.Minute)
	b.Logf("browser: %s", evalJS[string](b, ctx, `navigator.userAgent`))
	do(b, ctx, "turn the HTTP cache off", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
		return err
	}))
	run := fmt.Sprintf("smap%d", time.Now().UnixNano())
	var all []seatMapFigures
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		all = append(all, seatMapIteration(b, ctx, st, eventID, fmt.Sprintf("%s_%d", run, i)))
	}
	b.StopTimer()

	var f seatMapFigures
	for _, it := range all {
		f.Repaints = append(f.Repaints, it.Repaints...)
		f.RepaintFetches = append(f.RepaintFetches, it.RepaintFetches...)
		f.RequestToPaint = append(f.RequestToPaint, it.RequestToPaint...)
		f.PanFrames = append(f.PanFrames, it.PanFrames...)
		f.PanDraws = append(f.PanDraws, it.PanDraws...)
		f.ZoomFrames = append(f.ZoomFrames, it.ZoomFrames...)
		f.ZoomDraws = append(f.ZoomDraws, it.ZoomDraws...)
	}
	median := func(get func(seatMapFigures) float64) float64 {
		v := make([]float64, 0, len(all))
		for _, it := range all {
			v = append(v, get(it))
		}
		return quantile(v, 50)
	}
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.Interactive }), "interactive_ms")
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.Fetched }), "seats_fetched_ms")
	b.ReportMetric(quantile(f.Repaints, 50), "repaint_ms")
	b.ReportMetric(quantile(f.Repaints, 100), "repaint_max_ms")
	b.ReportMetric(quantile(f.RepaintFetches, 50), "repaint_fetch_ms")
	b.ReportMetric(quantile(f.RequestToPaint, 50), "request_to_paint_ms")
	b.ReportMetric(quantile(f.PanFrames, 50), "pan_frame_p50_ms")
	b.ReportMetric(quantile(f.PanFrames, 95), "pan_frame_p95_ms")
	b.ReportMetric(quantile(f.PanDraws, 95), "pan_draw_p95_ms")
	b.ReportMetric(quantile(f.ZoomFrames, 50), "zoom_frame_p50_ms")
	b.ReportMetric(quantile(f.ZoomFrames, 95), "zoom_frame_p95_ms")
	b.ReportMetric(quantile(f.ZoomDraws, 95), "zoom_draw_p95_ms")
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.FullPaint }), "full_paint_ms")
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.CeilingFetch }), "ceiling_fetch_ms")
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.CeilingArcs }), "ceiling_arcs_ms")
	b.ReportMetric(median(func(f seatMapFigures) float64 { return f.CeilingBlit }), "ceiling_blit_ms")
}

// quantile is the p-th percentile (nearest rank) of v; 0 for none.
func quantile(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

const mapJS = `document.querySelector('#map').seatmap`

func seatMapIteration(b *testing.B, ctx context.Context, st *stack, eventID, fan string) seatMapFigures {
	var f seatMapFigures
	do(b, ctx, "open the event", chromedp.Navigate("about:blank"),
		chromedp.Navigate(st.base+"/#/event/"+eventID),
		chromedp.WaitVisible(css(`#map canvas[data-interactive]`)))
	f.Interactive = evalJS[float64](b, ctx, `performance.getEntriesByName('seatmap:interactive')[0].startTime`)
	f.Fetched = evalJS[float64](b, ctx, `performance.getEntriesByName('seatmap:fetched')[0].startTime`)
	seats := evalJS[int](b, ctx, mapJS+`.seats.length`)
	sections := evalJS[int](b, ctx, mapJS+`.sections.filter(s => s.count).length`)
	if seats < 20000 && os.Getenv("ENCORE_BENCH_EVENT") == "" {
		b.Fatalf("%d seats on the map; the demo night has 20,000", seats)
	}
	// Every section followed live (its reset heard) and no bitmap in flight.
	waitEval(b, ctx, `(() => { const m = `+mapJS+`; return m.sections.every(s => !s.count || (s.live && !s.inflight)) })()`, time.Minute)

	// An invalidation each for a hold and its release, by another fan.
	token := st.session(fan)
	pick := strings.SplitN(evalJS[string](b, ctx, `(() => { const m = `+mapJS+`, free = [];
		for (let i = 0; i < m.seats.length; i++) if (m.status[i] === 0) free.push(i);
		const i = free[Math.floor(Math.random() * free.length)];
		return m.seats[i].id + ' ' + m.sections[m.sec[i]].id })()`), " ", 2)
	seat, section := pick[0], pick[1]
	repainted := func(since time.Time) {
		expr := fmt.Sprintf(`(() => { const r = %s.repaints.find(r => r.section === %q && r.at > %d); return r ? [r.ms, r.fetch, r.at] : null })()`,
			mapJS, section, since.UnixMilli())
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if r, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](expr)); err == nil && len(r) == 3 {
				f.Repaints = append(f.Repaints, r[0])
				f.RepaintFetches = append(f.RepaintFetches, r[1])
				f.RequestToPaint = append(f.RequestToPaint, r[2]-float64(since.UnixMicro())/1000)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.Fatalf("no repaint of %s within 30 s (screenshot: %s)", section, screenshot(b, ctx, "repaint"))
	}
	sent := time.Now()
	var hold struct {
		HoldID string `json:"hold_id"`
	}
	if code, kind := st.callProblem(http.MethodPost, "/v1/holds", token, map[string]any{"event_id": eventID, "seat_ids": []string{seat}}, &hold); code != http.StatusCreated {
		b.Fatalf("hold %s: %s", seat, kind)
	}
	repainted(sent)
	if got := evalJS[string](b, ctx, mapJS+`.stateById('`+seat+`')`); got != "held" {
		b.Fatalf("after the hold the map shows %s as %q", seat, got)
	}
	sent = time.Now()
	if code, kind := st.callProblem(http.MethodDelete, "/v1/holds/"+hold.HoldID, token, nil, nil); code != http.StatusNoContent {
		b.Fatalf("release %s: %s", hold.HoldID, kind)
	}
	repainted(sent)

	// Frames: a scripted pan and zoom of the whole map, one step a frame.
	frames := func(step string) ([]float64, []float64) {
		out, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Frames, Draws []float64 }](`(async () => {
			const m = `+mapJS+`, next = () => new Promise(r => requestAnimationFrame(r));
			m.fit(); await next(); await next();
			const w = m.canvas.getBoundingClientRect().width, h = m.canvas.getBoundingClientRect().height;
			const before = m.drawTimes.length, frames = [];
			let last = await next();
			for (let i = 0; i < 120; i++) {
				const t = await next(); frames.push(t - last); last = t;
				`+step+`
			}
			await next();
			return { Frames: frames, Draws: m.drawTimes.slice(-120) };
		})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatalf("scripted frames: %v", err)
		}
		return out.Frames, out.Draws
	}
	f.PanFrames, f.PanDraws = frames(`m.panBy(i % 60 < 30 ? 6 : -6, i % 60 < 30 ? 3 : -3);`)
	f.ZoomFrames, f.ZoomDraws = frames(`m.zoom(i < 60 ? 1.04 : 1 / 1.04, w / 2, h / 2);`)

	// Ceilings in the same page: the data alone, and 20,000 arcs alone.
	f.CeilingFetch = evalJS[float64](b, ctx, `(async () => {
		const m = `+mapJS+`, t0 = performance.now();
		await Promise.all(m.sections.filter(s => s.count).map(s => Promise.all([
			fetch(m.base(s) + '/seats', { cache: 'no-store' }).then(r => r.json()),
			fetch(m.base(s) + '/seats.bin', { cache: 'no-store' }).then(r => r.arrayBuffer())])));
		return performance.now() - t0 })()`, chromedp.EvalAwaitPromise)
	paint := evalJS[[]float64](b, ctx, `(async () => {
		const m = `+mapJS+`, next = () => new Promise(r => requestAnimationFrame(r));
		m.fit(); await next();
		const dpr = devicePixelRatio || 1, { width: w, height: h } = m.canvas.getBoundingClientRect(), v = m.view;
		const c = document.createElement('canvas'); c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
		const ctx = c.getContext('2d'); ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		const r = Math.max(m.minRadius * v.k, 0.5), arcs = [], full = [], blit = [];
		const img = ctx.createImageData(c.width, c.height), px = new Uint32Array(img.data.buffer);
		for (let k = 0; k < 5; k++) {
			let t0 = performance.now();
			ctx.clearRect(0, 0, w, h);
			const p = new Path2D();
			for (let i = 0; i < m.seats.length; i++) {
				const x = m.xs[i] * v.k + v.x, y = m.ys[i] * v.k + v.y;
				p.moveTo(x + r, y); p.arc(x, y, r, 0, 6.2832);
			}
			ctx.fillStyle = '#1e7a3a'; ctx.fill(p); ctx.getImageData(0, 0, 1, 1);
			arcs.push(performance.now() - t0);
			await next();
			t0 = performance.now();
			m.paint(); m.canvas.getContext('2d').getImageData(0, 0, 1, 1);
			full.push(performance.now() - t0);
			await next();
			t0 = performance.now();
			px.fill(0); ctx.putImageData(img, 0, 0); ctx.getImageData(0, 0, 1, 1);
			blit.push(performance.now() - t0);
			await next();
		}
		for (const a of [arcs, full, blit]) a.sort((a, b) => a - b);
		return [arcs[2], full[2], blit[2]] })()`, chromedp.EvalAwaitPromise)
	f.CeilingArcs, f.FullPaint, f.CeilingBlit = paint[0], paint[1], paint[2]
	b.Logf("%d seats in %d sections: interactive %.0f ms (seats fetched at %.0f ms); repaints %.1f ms (bitmap fetches %.1f ms, request to paint %.1f ms); full paint %.1f ms; ceilings: fetch %.0f ms, %d arcs %.1f ms, blank blit %.1f ms; pan frames p50 %.1f p95 %.1f ms; zoom frames p50 %.1f p95 %.1f ms",
		seats, sections, f.Interactive, f.Fetched, f.Repaints, f.RepaintFetches, f.RequestToPaint, f.FullPaint, f.CeilingFetch, seats, f.CeilingArcs, f.CeilingBlit,
		quantile(f.PanFrames, 50), quantile(f.PanFrames, 95), quantile(f.ZoomFrames, 50), quantile(f.ZoomFrames, 95))
	return f
}

// seatMapStack is browserStack for a benchmark (the browser tests' stack:
// the e2e harness plus the browse plane and the outbox relay), with the
// demo data seeded.
func seatMapStack(b *testing.B) string {
	b.Helper()
	e := newE2E(b)
	seedDemoOnce.Do(func() { seedDemoErr = demo.Seed(context.Background(), e.store.Pool(), time.Now()) })
	if seedDemoErr != nil {
		b.Fatalf("seed the demo data: %v", seedDemoErr)
	}
	a := browserServer(b, e, "smap"+testenv.RandomSuffix())
	srv := httptest.NewServer(a.Handler())
	b.Cleanup(srv.Close)
	return srv.URL
}

var (
	seedDemoOnce sync.Once
	seedDemoErr  error
)

// evalJS evaluates an expression (a promise with chromedp.EvalAwaitPromise)
// for its value.
func evalJS[T any](tb testing.TB, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	tb.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		tb.Fatalf("%s: %v (screenshot: %s)", expr, err, screenshot(tb, ctx, "eval"))
	}
	return v
}

// waitEval polls a boolean expression until it is true.
func waitEval(tb testing.TB, ctx context.Context, expr string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s: not true within %v (screenshot: %s)", expr, within, screenshot(tb, ctx, "wait"))
}
