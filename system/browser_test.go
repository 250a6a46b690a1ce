package system_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/tickets"
)

// stackOption changes the browser stack's API server before it serves.
type stackOption func(t *testing.T, e *e2e, a *api.Server)

// browserStack is the e2e harness plus the browse plane (search, seat maps,
// the live socket fed by the outbox relay), serving the fan web app too.
func browserStack(t *testing.T, opts ...stackOption) (*e2e, string) {
	t.Helper()
	e := newE2E(t)
	a := browserServer(t, e, e.eventID)
	for _, o := range opts {
		o(t, e, a)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return e, srv.URL
}

// browserServer is the API of the browser stacks over the e2e harness: holds,
// bookings and tickets, and the browse plane with its hub and outbox relay
// running (their Redis keys under scope) until the test ends.
func browserServer(t testing.TB, e *e2e, scope string) *api.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	reader := store.NewReader(e.store.Pool())
	cache := seatmap.NewCache(e.redis, e.prefix+scope+":", reader.SectionSeats, seatmap.CacheOptions{})
	hub := seatmap.NewHub(e.redis, e.prefix+scope+":", seatmap.HubOptions{Log: log})
	relay := system.NewRelay(e.cfg, e.store, cache, prometheus.NewRegistry(), log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { hub.Run(ctx); done <- struct{}{} }()
	go func() { relay.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })

	keyring, err := system.TicketKeyring(e.cfg)
	require.NoError(t, err)
	bookings := &booking.Service{Holds: e.holds, Store: e.store, Temporal: e.temporal, Log: log,
		WebhookSecret: e.cfg.StripeWebhookSecret.Reveal(), LateEventGrace: 2 * time.Second, Changes: e.changes}
	bookings.Register(prometheus.NewRegistry())
	return &api.Server{Holds: e.holds, Bookings: bookings, Sessions: e.issuer, Log: log,
		Tickets: &tickets.Wallet{Store: e.store, Keyring: keyring},
		Transfers: &tickets.Transfers{Store: e.store, Keyring: keyring, Mailer: system.Mailer(e.cfg, e.store),
			Limits: store.TransferLimits{PerTicket: 3, OpenPerFan: 10}},
		Resale:   &tickets.Resale{Store: e.store, Mailer: system.Mailer(e.cfg, e.store)},
		Payments: system.PaymentPage(e.cfg), // the test's sandbox and its stand-in for Stripe.js
		Invoices: &invoices.Service{Store: e.store},
		Browse:   &api.Browse{Catalog: catalog.New(reader), Cache: cache, Hub: hub}}
}

// browser starts a headless Chromium (installed through devstack when
// missing: apt is the only network it needs) and returns a context for a
// first tab; every test action is bounded by the test's timeout.
func browser(t testing.TB, within time.Duration) context.Context {
	t.Helper()
	root, err := sharedBrowser()
	if err != nil {
		t.Skipf("no browser: %v", err)
	}
	ctx, cancel := context.WithTimeout(root, within)
	t.Cleanup(cancel)
	// A browser context of its own: storage, cookies and tabs apart from
	// every other test's, closed with the test.
	bctx, bcancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(bcancel)
	require.NoError(t, chromedp.Do(bctx)) // open the first tab
	return bctx
}

// sharedBrowser is one Chromium headless shell (1200x900) for the package's
// tests, each in its own browser context: a full Chromium's start cost
// about two seconds of CPU, which sixty tests paid one by one; the shell
// starts in about half a second. It is closed when the package's tests end.
var sharedBrowser = sync.OnceValues(func() (context.Context, error) {
	exe, err := headlessShell()
	if err != nil {
		return nil, err
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), allocatorOptions(exe, chromedp.WindowSize(1200, 900))...)
	bctx, bcancel := chromedp.NewContext(actx)
	testenv.AtExit(func() { bcancel(); acancel() })
	if err := chromedp.Do(bctx); err != nil { // start the browser
		return nil, err
	}
	return bctx, nil
})

// allocatorOptions are the Chromium flags of every test browser: headless,
// no GPU, no proxy, then extra (later options win).
func allocatorOptions(exe string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.Headless,
		chromedp.DisableGPU, chromedp.Flag("no-proxy-server", true))
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

// browserWith is a browser of the test's own, with further allocator
// options (a window size, Chromium flags); later options win.
func browserWith(t testing.TB, within time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exe, err := chromium()
	if err != nil {
		t.Skipf("no browser: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, allocatorOptions(exe, extra...)...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	require.NoError(t, chromedp.Do(bctx)) // start the browser
	return bctx
}

// chromium finds (or installs) Chromium once for the package's parallel
// tests: two apt installs at once would fight over apt's lock.
var chromium = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	return devstack.EnsureChromium(ctx, devstack.Options{AllowInstall: true, Log: os.Stderr})
})

// headlessShell finds (or installs) the headless shell once, as chromium.
var headlessShell = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	return devstack.EnsureHeadlessShell(ctx, devstack.Options{AllowInstall: true, Log: os.Stderr})
})

// fanTab opens another isolated browser context (its own storage: another
// fan) in the same browser.
func fanTab(t *testing.T, first context.Context) context.Context {
	ctx, cancel := chromedp.NewContext(first, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run of a context opens its tab, which lives as long as
	// that run's context: open it here, on the test's, not in a step's.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// twoFansOnTheMap starts the browser stack and a browser (bounded by within)
// with two fans, each in a browser context of their own, signed in and on
// the seat map of the stack's event. It returns the stack's URL and the two
// fans' tabs.
func twoFansOnTheMap(t *testing.T, within time.Duration) (string, context.Context, context.Context) {
	t.Helper()
	e, base := browserStack(t)
	a := browser(t, within)
	b := fanTab(t, a)
	signInAndOpen(t, a, base, "fana_"+e.eventID[4:], e.eventID)
	signInAndOpen(t, b, base, "fanb_"+e.eventID[4:], e.eventID)
	return base, a, b
}

// signInAndOpen signs a fan in with the demo form and opens the event's
// seat map, waiting until its first bitmap is drawn.
func signInAndOpen(t *testing.T, ctx context.Context, base, user, eventID string) {
	t.Helper()
	signIn(t, ctx, base, user)
	do(t, ctx, "open the event", chromedp.Navigate(base+"/#/event/"+eventID), chromedp.WaitVisible(css(`#map canvas[data-version]`)))
}

// signIn signs a fan in with the fan app's demo form.
func signIn(t *testing.T, ctx context.Context, base, user string) {
	t.Helper()
	do(t, ctx, "sign in "+user,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`#signin input[name=user]`)),
		chromedp.SendKeys(css(`#signin input[name=user]`), user),
		chromedp.SendKeys(css(`#signin input[name=email]`), user+"@example.com"),
		chromedp.Focus(css(`#signin button`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#signout`)))
}

// do runs browser actions as one named step of a test. When the step
// fails, the tab's screenshot is saved under .encore/test/screenshots (named
// for the test and the step) and the failure names the file, so a broken
// flow shows what the fan saw.
func do(t testing.TB, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	// The step gets a minute of its own, so the tab outlives a stuck step
	// long enough to be photographed.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(sctx, append([]chromedp.Action[chromedp.Void]{front()}, actions...)...); err != nil {
		shot := screenshot(t, ctx, step)
		// The fan app keeps the cause of an error page it showed (errorView),
		// and a problem it is showing (a refused hold, a declined card) says
		// what the API answered: both name why a step never came.
		ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
		cause, _ := chromedp.Run(ectx, chromedp.Evaluate[string](`(document.getElementById('main') || {dataset: {}}).dataset.error || ''`))
		problem, _ := chromedp.Run(ectx, chromedp.Evaluate[string](`(() => { const p = document.getElementById('problem');
			return p && !p.hidden ? (p.dataset.type || '') + ' ' + p.textContent.trim() : '' })()`))
		at, _ := chromedp.Run(ectx, chromedp.Evaluate[string](`location.hash`))
		ecancel()
		t.Fatalf("step %q: %v (screenshot: %s; page error: %q; problem shown: %q; at %q)", step, err, shot, cause, problem, at)
	}
}

// screenshot saves the tab's full page as a PNG and returns its path (or
// why it could not).
func screenshot(t testing.TB, ctx context.Context, step string) string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), ".encore", "test", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name()+"-"+step, "_")
	if len(name) > 180 {
		name = name[:180]
	}
	path := filepath.Join(dir, name+".png")
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _ = chromedp.Run(sctx, front())
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "none: " + err.Error()
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err.Error()
	}
	return path
}

// front makes the tab the active one: Chrome gives a hidden tab no
// animation frames, and some waits (and every screenshot) need one, so a
// test that moves between two fans' tabs brings each forward first.
func front() chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.BringToFront, cdp.Empty{})
		return chromedp.Void{}, err
	}
}

// css is a CSS selector (a plain string is a DOM search).
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// js evaluates an expression for its string value.
func js(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err, expr)
	return v
}

// waitJS polls a JavaScript expression until it yields want.
func waitJS(t *testing.T, ctx context.Context, expr, want string, within time.Duration) {
	t.Helper()
	var got string
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err == nil {
			got = v
			if got == want {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: want %q, last %q (screenshot: %s)", expr, want, got, screenshot(t, ctx, "wait"))
}

// requireSoldOnceReloaded is what another fan's map shows of seats just
// sold: still taken (held) with no reload, since a sale changes no seat's
// availability and sends no invalidation, and sold once the page reads the
// map again (reloaded until it does: a snapshot cached before the sale
// lives for the cache's TTL).
func requireSoldOnceReloaded(t *testing.T, b context.Context, seats ...string) {
	t.Helper()
	exprs := make([]string, len(seats))
	for i, s := range seats {
		exprs[i] = `document.querySelector('#map').seatmap.stateById('` + s + `')`
	}
	states := `[` + strings.Join(exprs, ", ") + `].join(',')`
	allAre := func(state string) string { return strings.TrimSuffix(strings.Repeat(state+",", len(seats)), ",") }
	waitJS(t, b, states, allAre("held"), 5*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := chromedp.Run(b, chromedp.Reload())
		require.NoError(t, err)
		var got string
		for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
			if v, err := chromedp.Run(b, chromedp.Evaluate[string](states)); err == nil && !strings.Contains(","+v+",", ",,") && v != "" {
				got = v
				break
			}
		}
		if got == allAre("sold") {
			return
		}
		require.True(t, time.Now().Before(deadline), "seats %v sold on a reloaded map: last %q", seats, got)
		time.Sleep(500 * time.Millisecond)
	}
}

func TestAFanBuysASeatChosenWithTheKeyboardAndAnotherFanSeesItGoLive(t *testing.T) {
	t.Parallel()
	base, a, b := twoFansOnTheMap(t, 4*time.Minute)
	js(t, b, `window.notReloaded = 'yes'`)

	// Fan A: the keyboard alone picks the third seat of the first row.
	require.NoError(t, chromedp.Do(a,
		chromedp.Focus(css(`#map canvas`)),
		chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#selection li[data-seat]`)),
	))
	seat := js(t, a, `document.querySelector('#selection li[data-seat]').dataset.seat`)
	require.Equal(t, js(t, a, `document.querySelector('#map').seatmap.seats[2].id`), seat, "the third seat of the first row")
	require.True(t, strings.HasSuffix(seat, "-3"), seat)
	waitJS(t, a, `document.getElementById('announce').textContent.includes('seat 3, selected') ? 'said' : ''`, "said", 5*time.Second)
	waitJS(t, b, `document.querySelector('#map').seatmap.stateById('`+seat+`')`, "available", 5*time.Second)

	// Hold, and the countdown runs.
	require.NoError(t, chromedp.Do(a, chromedp.Focus(css(`#hold`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#countdown`))))
	first := js(t, a, `document.getElementById('countdown').textContent`)
	require.Regexp(t, regexp.MustCompile(`^\d+:\d\d$`), first)
	waitJS(t, a, `document.getElementById('countdown').textContent !== '`+first+`' ? 'runs' : ''`, "runs", 5*time.Second) // the countdown runs

	// Fan B's map turns the seat to held with no reload (the live socket).
	waitJS(t, b, `document.querySelector('#map').seatmap.stateById('`+seat+`')`, "held", 30*time.Second)

	// Pay with a card typed into the payment form (the provider's frame),
	// the keyboard alone; the booking page follows the saga.
	typeCard(t, a, "4242424242424242")
	require.NoError(t, chromedp.Do(a, chromedp.Focus(css(`#paybtn`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#bstatus`))))
	waitJS(t, a, `document.getElementById('bstatus').dataset.status`, "PAID", 90*time.Second)
	waitJS(t, a, `(() => { const i = document.querySelector('#tickets img'); return i && i.src.startsWith('data:image/') && i.complete && i.naturalWidth > 0 ? 'shown' : '' })()`,
		"shown", 20*time.Second)

	// Still taken on B's map, with no reload; sold once it is read again.
	waitJS(t, b, `window.notReloaded`, "yes", time.Second)
	requireSoldOnceReloaded(t, b, seat)

	// "My tickets" lists the ticket with its rotating code.
	require.NoError(t, chromedp.Do(a, chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`#tickets img`))))
	waitJS(t, a, `(() => { const i = document.querySelector('#tickets img'); return i && i.complete && i.naturalWidth > 0 ? i.dataset.seat : '' })()`,
		seat, 20*time.Second)
	require.Regexp(t, `^A, Row [A-Z]+, Seat \d+$`, js(t, a, `document.querySelector('#tickets h3').textContent`), "the ticket names its seat for people")
}

func TestAFanWithAStaleMapIsToldTheSeatWasTakenAndOfferedAlternatives(t *testing.T) {
	t.Parallel()
	_, a, b := twoFansOnTheMap(t, 3*time.Minute)

	// Both pick the first seat; B's map stops following the live socket
	// (a dropped connection), so it still shows the seat free.
	for _, ctx := range []context.Context{a, b} {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Focus(css(`#map canvas`)), chromedp.KeyEvent(" "),
			chromedp.WaitVisible(css(`#selection li[data-seat]`))))
	}
	js(t, b, `document.querySelector('#map').seatmap.close(), 'closed'`)
	require.NoError(t, chromedp.Do(a, chromedp.Focus(css(`#hold`)), chromedp.KeyEvent(kb.Enter)))
	waitJS(t, a, `document.getElementById('countdown') ? 'held' : document.getElementById('problem').textContent`, "held", 20*time.Second)

	require.NoError(t, chromedp.Do(b, chromedp.Focus(css(`#hold`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#problem`))))
	kind := js(t, b, `document.getElementById('problem').dataset.type`)
	text := js(t, b, `document.getElementById('problem').textContent`)
	require.Equal(t, "/problems/seat-unavailable", kind)
	require.Contains(t, text, "just taken")
	require.True(t, strings.Contains(text, "Take the alternative seats"), "the alternatives are offered: %s", text)
}

// press clicks the element sel as the element (its click()), not at its
// place on the screen: a page still laying itself out moves the place, and
// a loaded CI runner's click then lands beside it or does nothing.
func press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + strconv.Quote(sel) + `).click()`)
}
