package system_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/waitingroom"
)

// withSweeper runs the hold sweeper, so an expired hold frees its seats (and
// tells the live maps) without anyone touching them.
func withSweeper(t *testing.T, e *e2e, _ *api.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.holds.RunSweeper(ctx, 500*time.Millisecond, 100); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// withFlashSale adds a metered event whose waiting room lets one fan into
// checkout at a time (for 30 seconds each), with its admitter running, and
// returns the event's ID through id.
func withFlashSale(id *string) stackOption {
	return func(t *testing.T, e *e2e, a *api.Server) {
		*id = "evt_" + testenv.RandomSuffix()
		require.NoError(t, demo.Create(context.Background(), e.store.Pool(), demo.Event{ID: *id, Title: "Flash " + (*id)[4:],
			Artist: "Queue Testers", VenueID: "ven_flash", VenueName: "Flash Club", City: "C", Currency: "EUR",
			StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour), Metered: true,
			Sections: []demo.Section{{ID: "sec_" + (*id)[4:], Name: "Floor", Rows: 4, PerRow: 10, BasePrice: 5000}}}))
		rdb, prefix := testenv.Redis(t)
		room := waitingroom.New(rdb, e.store.Holds, []byte("flash-sale-pass-seed-for-tests-only"), waitingroom.Options{
			Prefix: prefix + "wr" + testenv.RandomSuffix() + ":", Capacity: 1, MinCapacity: 1, MaxCapacity: 1,
			// A fan who releases a hold keeps their place until their
			// admission window ends (a buyer's ends when they have paid).
			Tick: 200 * time.Millisecond, PassTTL: 30 * time.Second})
		room.Register(prometheus.NewRegistry())
		admitThrough(t, e, a, room)
	}
}

// admitThrough runs room's admitter until the test ends (then closes the
// room) and puts the stack's holds and API behind the room's passes.
func admitThrough(t *testing.T, e *e2e, a *api.Server, room *waitingroom.Room) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { room.Admitter().Run(ctx, ""); close(done) }()
	t.Cleanup(func() { cancel(); <-done; room.Close() })
	e.holds.Admission = room.Passes()
	a.Room = room
}

// pickSeats selects the first n seats of the first row with the keyboard.
func pickSeats(t *testing.T, ctx context.Context, n int) []string {
	t.Helper()
	return pickSeatsFrom(t, ctx, 0, n)
}

// pickSeatsFrom selects n seats of the first row with the keyboard, from
// the seat after the first skip.
func pickSeatsFrom(t *testing.T, ctx context.Context, skip, n int) []string {
	t.Helper()
	acts := []chromedp.Action[chromedp.Void]{chromedp.Focus(css(`#map canvas`))}
	for i := 0; i < skip; i++ {
		acts = append(acts, chromedp.KeyEvent(kb.ArrowRight))
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			acts = append(acts, chromedp.KeyEvent(kb.ArrowRight))
		}
		acts = append(acts, chromedp.KeyEvent(kb.Enter))
	}
	do(t, ctx, "pick seats", acts...)
	waitJS(t, ctx, `String(document.querySelectorAll('#selection li[data-seat]').length)`, strconv.Itoa(n), 10*time.Second)
	return strings.Split(js(t, ctx, `[...document.querySelectorAll('#selection li[data-seat]')].map(li => li.dataset.seat).join(',')`), ",")
}

// holdSelection presses "Hold these seats" and waits for the hold page.
func holdSelection(t *testing.T, ctx context.Context) string {
	t.Helper()
	// Pressed from the page, looked up as it is pressed: the selection
	// panel is redrawn when the map's version moves or a sign-in restores
	// the seats, and a node found a moment earlier is then gone.
	waitJS(t, ctx, `(() => { const b = document.getElementById('hold'); if (!b || b.disabled) return '';
		b.click(); return 'pressed' })()`, "pressed", 20*time.Second)
	do(t, ctx, "hold", chromedp.WaitVisible(css(`#countdown`)))
	return strings.TrimPrefix(js(t, ctx, `location.hash`), "#/hold/")
}

// payWith pays on the hold page with a payment method through the
// development shortcut beside the payment form (adding it to the list
// first when it is a card the test made at the provider).
func payWith(t *testing.T, ctx context.Context, pm string) {
	t.Helper()
	// The payment form is mounted first (its frame moves the list down).
	waitJS(t, ctx, `document.getElementById('main').dataset.paymentForm || ''`, "ready", 30*time.Second)
	waitJS(t, ctx, `(() => { const d = document.getElementById('testpay'); if (!d || d.hidden) return '';
		d.open = true; const s = document.querySelector('#testform select[name=pm]');
		if (![...s.options].some(o => o.value === '`+pm+`')) s.add(new Option('My card', '`+pm+`'), 0);
		s.value = '`+pm+`'; return d.open && !document.getElementById('testbtn').disabled ? s.value : '' })()`, pm, 10*time.Second)
	// Pressed from the page: a tab in the background (another fan's is in
	// front) lays nothing out, so the browser would call it unfocusable.
	js(t, ctx, `(() => { document.getElementById('testbtn').click(); return 'pressed' })()`)
}

// waitPaid waits for the booking page to say PAID with a drawn QR code per
// ticket.
func waitPaid(t *testing.T, ctx context.Context, tickets int) {
	t.Helper()
	waitJS(t, ctx, `document.getElementById('bstatus') ? document.getElementById('bstatus').dataset.status || '' : location.href`, "PAID", 90*time.Second)
	waitJS(t, ctx, `String([...document.querySelectorAll('#tickets img')].filter(i => i.complete && i.naturalWidth > 0).length)`,
		strconv.Itoa(tickets), 20*time.Second)
}

// qrPixels is the first ticket's QR code as drawn, for comparing codes.
const qrPixels = `(() => { const i = document.querySelector('#tickets img'); const c = document.createElement('canvas');
	c.width = i.naturalWidth; c.height = i.naturalHeight; c.getContext('2d').drawImage(i, 0, 0); return c.toDataURL() })()`

func TestAFanSearchesPicksTwoSeatsPaysAndSeesTwoTicketsWhoseCodesRotateWhileAnotherFanSeesTheSeatsGoWithinASecond(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t)
	title := "Demo Night " + e.eventID[4:]
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE events SET title = $2 WHERE id = $1`, e.eventID, title)
	require.NoError(t, err)
	a := browser(t, 4*time.Minute)
	b := fanTab(t, a)

	// Fan A signs in and finds the event by typing part of its name.
	signIn(t, a, base, "searcher_"+e.eventID[4:])
	do(t, a, "search", chromedp.SendKeys(css(`#q`), "Demo Night "+e.eventID[4:8]), chromedp.WaitVisible(css(`#suggest li`)))
	require.Equal(t, title, js(t, a, `document.querySelector('#suggest li').textContent`))
	do(t, a, "choose the suggestion", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	require.Equal(t, "#/event/"+e.eventID, js(t, a, `location.hash`))

	// Fan B watches the same section.
	signInAndOpen(t, b, base, "watcher_"+e.eventID[4:], e.eventID)
	seats := pickSeats(t, a, 2)
	require.Len(t, seats, 2)
	for _, s := range seats {
		waitJS(t, b, `document.querySelector('#map').seatmap.stateById('`+s+`')`, "available", 5*time.Second)
	}
	// B notes the moment each seat stops being available; A notes when its
	// hold was answered. Both tabs share the machine's clock.
	js(t, b, `(() => { const m = document.querySelector('#map').seatmap; window.goneAt = {};
		const ids = `+"`"+strings.Join(seats, ",")+"`"+`.split(',');
		const iv = setInterval(() => { for (const id of ids) if (!window.goneAt[id] && m.stateById(id) !== 'available') window.goneAt[id] = Date.now();
			if (Object.keys(window.goneAt).length === ids.length) clearInterval(iv); }, 10); return 'watching' })()`)
	js(t, a, `(() => { const f = window.fetch; window.fetch = async (...args) => { const r = await f(...args);
		if (String(args[0]) === '/v1/holds' && r.status === 201) window.heldAt = Date.now(); return r; }; return 'ok' })()`)
	holdSelection(t, a)
	waitJS(t, b, `String(Object.keys(window.goneAt).length)`, "2", 10*time.Second)
	heldAt, _ := strconv.ParseInt(js(t, a, `String(window.heldAt)`), 10, 64)
	for _, s := range seats {
		goneAt, _ := strconv.ParseInt(js(t, b, `String(window.goneAt['`+s+`'])`), 10, 64)
		lag := time.Duration(goneAt-heldAt) * time.Millisecond
		t.Logf("seat %s shown taken on the other fan's map %v after the hold", s, lag)
		require.Less(t, lag, time.Second, "seat %s turns taken on the watching map within a second", s)
	}

	// A pays with the first test method of the development list and gets
	// two tickets.
	require.Equal(t, "pm_card_visa", js(t, a, `document.querySelector('#testform select[name=pm]').value`))
	payWith(t, a, "pm_card_visa")
	waitPaid(t, a, 2)
	require.ElementsMatch(t, seats, strings.Split(js(t, a, `[...document.querySelectorAll('#tickets img')].map(i => i.dataset.seat).join(',')`), ","))

	// The code rotates: after a window the drawn code is another.
	first := js(t, a, qrPixels)
	deadline := time.Now().Add(40 * time.Second)
	for js(t, a, qrPixels) == first {
		require.True(t, time.Now().Before(deadline), "the QR code changed within a window and a half")
		time.Sleep(500 * time.Millisecond)
	}
	requireSoldOnceReloaded(t, b, seats...)
}

func TestTwoFansInTheFlashSaleQueueAreAdmittedInTheOrderTheyJoinedAndBothBuy(t *testing.T) {
	t.Parallel()
	var flash string
	e, base := browserStack(t, withFlashSale(&flash))
	a := browser(t, 5*time.Minute)
	b := fanTab(t, a)
	signIn(t, a, base, "first_"+flash[4:])
	signIn(t, b, base, "second_"+flash[4:])

	// The event page of a metered event sends the fan to its waiting room.
	do(t, a, "first fan opens the event", chromedp.Navigate(base+"/#/event/"+flash), chromedp.WaitVisible(css(`#qstate`)))
	// A is let in (one at a time) and lands on the seat map with a pass.
	do(t, a, "first fan admitted", chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	require.NotEmpty(t, js(t, a, `sessionStorage.getItem('pass:`+flash+`') || ''`))

	// (The address changes in the page: a navigation within the document.)
	js(t, b, `location.hash = '#/event/`+flash+`'`)
	do(t, b, "second fan opens the event", chromedp.WaitVisible(css(`#qstate`)))
	waitJS(t, b, `document.getElementById('qstate').dataset.status`, "waiting", 20*time.Second)
	waitJS(t, b, `document.getElementById('qstate').dataset.position`, "1", 10*time.Second)
	require.Contains(t, js(t, b, `document.getElementById('qstate').textContent`), "next in line")
	waitJS(t, b, `document.getElementById('qconn').dataset.state`, "live", 10*time.Second)

	// While A shops, B keeps waiting; A buys, and then B is let in.
	pickSeats(t, a, 2)
	holdSelection(t, a)
	require.Equal(t, "waiting", js(t, b, `document.getElementById('qstate').dataset.status`), "the second fan waits while the first is in checkout")
	payWith(t, a, e.pay.card())
	waitPaid(t, a, 2)

	do(t, b, "second fan admitted after the first bought", chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	pickSeatsFrom(t, b, 2, 1) // the first fan bought the first two
	holdSelection(t, b)
	payWith(t, b, e.pay.card())
	waitPaid(t, b, 1)
	require.Equal(t, 3, e.count(`SELECT count(*) FROM tickets t JOIN reservations r ON r.id = t.reservation_id WHERE r.event_id = $1`, flash))
}

// oneSeatHeld is a fan of a new stack holding one seat, on the hold page.
func oneSeatHeld(t *testing.T, fan string) (e *e2e, a context.Context, hold string) {
	t.Helper()
	e, base := browserStack(t)
	a = browser(t, 4*time.Minute)
	signInAndOpen(t, a, base, fan+"_"+e.eventID[4:], e.eventID)
	pickSeats(t, a, 1)
	return e, a, holdSelection(t, a)
}

func TestAFanConfirmsThreeDSecureOnTheBanksPageAndComesBackToAPaidBooking(t *testing.T) {
	t.Parallel()
	e, a, hold := oneSeatHeld(t, "secure")
	payWith(t, a, "pm_card_threeDSecure2Required")

	// The provider's challenge page, in the same tab.
	do(t, a, "the bank's page", chromedp.WaitVisible(`//button[@value="complete"]`))
	require.True(t, strings.HasPrefix(js(t, a, `location.href`), e.pspURL), "the challenge is the provider's page")
	do(t, a, "confirm", chromedp.Click(`//button[@value="complete"]`))
	do(t, a, "back on the booking page", chromedp.WaitVisible(css(`#bstatus`)))
	require.Equal(t, "#/booking/"+hold, js(t, a, `location.hash`))
	waitPaid(t, a, 1)
	require.Empty(t, js(t, a, `location.search`), "the provider's parameters are cleaned from the address")
}

func TestADeclinedCardIsExplainedAndAnotherCardPaysForTheSameHold(t *testing.T) {
	t.Parallel()
	e, a, hold := oneSeatHeld(t, "declined")
	payWith(t, a, "pm_card_chargeDeclined")
	do(t, a, "the decline is explained", chromedp.WaitVisible(css(`#problem`)))
	waitJS(t, a, `document.getElementById('problem').dataset.type`, "/problems/payment-declined", 30*time.Second)
	require.Contains(t, js(t, a, `document.getElementById('problem').textContent`), "try another card")
	require.Equal(t, "#/hold/"+hold, js(t, a, `location.hash`), "the fan stays on the hold")
	require.Equal(t, "false", js(t, a, `String(document.getElementById('testbtn').disabled)`))

	payWith(t, a, e.pay.card())
	waitPaid(t, a, 1)
	require.Equal(t, "#/booking/"+hold, js(t, a, `location.hash`))
}

func TestAHoldLeftAloneExpiresOnScreenAndItsSeatsReturnToTheMap(t *testing.T) {
	t.Parallel()
	e, base := browserStack(t, withSweeper)
	// The shortest hold an event may have.
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE events SET hold_ttl_seconds = 30 WHERE id = $1`, e.eventID)
	require.NoError(t, err)
	a := browser(t, 4*time.Minute)
	b := fanTab(t, a)
	signInAndOpen(t, a, base, "idle_"+e.eventID[4:], e.eventID)
	signInAndOpen(t, b, base, "viewer_"+e.eventID[4:], e.eventID)
	seats := pickSeats(t, a, 2)
	holdSelection(t, a)
	for _, s := range seats {
		waitJS(t, b, `document.querySelector('#map').seatmap.stateById('`+s+`')`, "held", 10*time.Second)
	}

	// Nobody touches anything: the countdown reaches 0:00 and says so.
	waitJS(t, a, `document.getElementById('countdown').textContent`, "0:00", 45*time.Second)
	waitJS(t, a, `document.getElementById('problem').dataset.type`, "/problems/hold-expired", 5*time.Second)
	require.Equal(t, "true", js(t, a, `String(document.getElementById('paybtn').disabled)`))

	// The seats come back on the other fan's live map, and on the first
	// fan's when they go back to choose again.
	for _, s := range seats {
		waitJS(t, b, `document.querySelector('#map').seatmap.stateById('`+s+`')`, "available", 20*time.Second)
	}
	do(t, a, "choose again", chromedp.Click(`//div[@id="problem"]/button[contains(., "Choose seats again")]`),
		chromedp.WaitVisible(css(`#map canvas[data-version]`)))
	for _, s := range seats {
		waitJS(t, a, `document.querySelector('#map').seatmap.stateById('`+s+`')`, "available", 10*time.Second)
	}
}
