package system_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// TestAFanResellsATicketAtFaceValueAfterTheCapIsNamedAndAnotherFanBuysItOnTheResalePage:
// in the fan app, a seller who bought a seat lists it from "My tickets"
// above the organiser's cap (face value) and is told the cap on the price
// field, then lists it at face value and sees it listed with what they
// receive. A second fan follows "Resale tickets" from the event's page,
// presses Buy, pays on the ordinary hold page and has the ticket, with a
// code of their own, in "My tickets"; the seller's "My listings" shows it
// sold and the payout refunded to their card.
func TestAFanResellsATicketAtFaceValueAfterTheCapIsNamedAndAnotherFanBuysItOnTheResalePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, base := browserStack(t)
	_, err := e.store.Pool().Exec(ctx, `UPDATE events SET resale_enabled = true, resale_max_price_bp = 10000, resale_fee_bp = 500 WHERE id = $1`, e.eventID)
	require.NoError(t, err)
	seller, buyer := "seller_"+e.eventID[4:], "buyer_"+e.eventID[4:]

	a := browser(t, 6*time.Minute)
	signInAndOpen(t, a, base, seller, e.eventID)
	pickSeats(t, a, 1)
	holdSelection(t, a)
	payWith(t, a, "pm_card_visa")
	waitPaid(t, a, 1)
	var face int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT i.price_at_lock FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
		WHERE r.event_id = $1 AND r.user_id = $2 AND r.status = 'PAID'`, e.eventID, seller).Scan(&face))
	fee := (face*500 + 5000) / 10000
	eur := func(minor int64) string {
		return js(t, a, fmt.Sprintf(`new Intl.NumberFormat(undefined, { style: 'currency', currency: 'EUR' }).format(%d / 100)`, minor))
	}

	// Sell: the price is prefilled with what the seller paid.
	js(t, a, `(() => { location.hash = '#/tickets'; return 'tickets' })()`)
	waitJS(t, a, `document.querySelector('#tickets img[data-payload]') && document.querySelector('#tickets .resale details') ? 'ready' : ''`, "ready", 20*time.Second)
	js(t, a, `(() => { document.querySelector('#tickets .resale details').open = true; return 'open' })()`)
	waitJS(t, a, `document.querySelector('#tickets .sellform input[name=price]').value`, fmt.Sprintf("%d.%02d", face/100, face%100), 15*time.Second)
	price := `#tickets .sellform input[name=price]`
	clear := `(() => { document.querySelector('` + price + `').value = ''; return 'cleared' })()`

	// Above the cap: refused on the field, naming the cap.
	js(t, a, clear)
	do(t, a, "list above the cap", chromedp.SendKeys(css(price), fmt.Sprintf("%d.%02d", (face+500)/100, (face+500)%100)),
		chromedp.Focus(css(price)), chromedp.KeyEvent(kb.Enter))
	waitJS(t, a, `(p => p.hidden ? '' : p.textContent)(document.querySelector('#tickets .sellform .problem-inline'))`,
		"The organiser caps resale of this ticket at "+eur(face)+".", 15*time.Second)
	require.Equal(t, "true", js(t, a, `document.querySelector('`+price+`').getAttribute('aria-invalid') || ''`))
	require.Zero(t, e.count(`SELECT count(*) FROM resale_listings WHERE event_id = $1`, e.eventID), "nothing listed above the cap")
	requireAccessible(t, a, "the sell form naming the cap")

	// At face value: listed, with the fee and what the seller receives.
	js(t, a, clear)
	do(t, a, "list at face value", chromedp.SendKeys(css(price), fmt.Sprintf("%d.%02d", face/100, face%100)),
		chromedp.Focus(css(price)), chromedp.KeyEvent(kb.Enter))
	listed := `#tickets li[data-status=LISTED] [data-status=ACTIVE]`
	waitJS(t, a, `(p => p ? 'listed' : '')(document.querySelector('`+listed+`'))`, "listed", 20*time.Second)
	text := js(t, a, `document.querySelector('`+listed+`').textContent.replace(/\s+/g, ' ')`)
	require.Contains(t, text, "Listed for resale at "+eur(face))
	require.Contains(t, text, "you receive "+eur(face-fee))
	require.Contains(t, text, "fee of "+eur(fee))
	require.Equal(t, "0", js(t, a, `String(document.querySelectorAll('#tickets img').length)`), "a listed ticket shows no code")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM resale_listings WHERE event_id = $1 AND status = 'ACTIVE' AND price = $2`, e.eventID, face))
	requireAccessible(t, a, "a listed ticket")

	// The buyer: from the event's page to its resale tickets, Buy, pay.
	b := fanTab(t, a)
	signInAndOpen(t, b, base, buyer, e.eventID)
	do(t, b, "open the resale tickets", chromedp.Click(css(`#resalelink`)), chromedp.WaitVisible(css(`#listings li[data-listing] button`)))
	require.Equal(t, "1", js(t, b, `String(document.querySelectorAll('#listings li[data-listing]').length)`))
	offer := js(t, b, `document.querySelector('#listings li[data-listing]').textContent.replace(/\s+/g, ' ')`)
	require.Contains(t, offer, eur(face))
	require.Contains(t, offer, "face value "+eur(face))
	requireAccessible(t, b, "the resale tickets")
	do(t, b, "buy it", chromedp.Focus(css(`#listings li[data-listing] button`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#countdown`)))
	require.True(t, strings.HasPrefix(js(t, b, `location.hash`), "#/hold/"), "the ordinary hold page")
	payWith(t, b, "pm_card_visa")
	waitPaid(t, b, 1)
	js(t, b, `(() => { location.hash = '#/tickets'; return 'tickets' })()`)
	waitJS(t, b, `document.querySelector('#tickets img[data-payload]') ? 'drawn' : ''`, "drawn", 20*time.Second)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE event_id = $1 AND user_id = $2 AND status = 'VALID'`, e.eventID, buyer))

	// The seller's listings: sold, the payout back on their card (the
	// saga's last money step, waited for in the database).
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM resale_listings WHERE event_id = $1 AND status = 'SOLD' AND payout_status = 'PAID'`, e.eventID) == 1
	}, 60*time.Second, 200*time.Millisecond, "the seller is paid")
	do(t, a, "the seller's listings", chromedp.Navigate(base+"/#/listings"), chromedp.WaitVisible(css(`#mylistings li[data-status=SOLD]`)))
	sold := js(t, a, `document.querySelector('#mylistings li[data-status=SOLD]').textContent.replace(/\s+/g, ' ')`)
	require.Contains(t, sold, "Sold")
	require.Contains(t, sold, eur(face-fee)+" refunded to your card")
	requireAccessible(t, a, "my listings")
	do(t, a, "the seller's tickets", chromedp.Navigate(base+"/#/tickets"), chromedp.WaitVisible(css(`#tickets li[data-status=TRANSFERRED]`)))
	require.Contains(t, js(t, a, `document.querySelector('#tickets li[data-status=TRANSFERRED]').textContent`), "Sold on resale")
}
