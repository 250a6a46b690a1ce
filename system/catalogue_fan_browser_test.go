package system_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// typedStack is the browser stack whose event sells Adult (the seats'
// €40.00) and Child (€20.00) tickets with a €1.50 service fee, for an
// organisation of the test's own that adds 21 % VAT to its prices, and
// asks every ticket's attendee name (required) and, once per order, where
// the fan heard of it. It returns the stack, its URL and the organisation.
func typedStack(t *testing.T) (*e2e, string, string) {
	t.Helper()
	ctx := context.Background()
	e, base := browserStack(t)
	org := "org_cat_" + e.eventID[4:] // the package's events share a database
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE events SET org_id = $2, service_fee = 150 WHERE id = $1`, []any{e.eventID, org}},
		{`INSERT INTO organisations (id, legal_name, address, vat_id, tax_rate_bp, prices_include_tax, invoice_prefix)
			VALUES ($1, 'Catalogue Live BV', 'Damrak 1, Amsterdam', 'NL000000000B01', 2100, false, 'CAT')`, []any{org}},
		{`INSERT INTO ticket_types (event_id, id, name, position) VALUES ($1, 'adult', 'Adult', 0), ($1, 'child', 'Child', 1)`, []any{e.eventID}},
		{`INSERT INTO ticket_type_prices (event_id, type_id, category, amount)
			VALUES ($1, 'adult', 'standard', 4000), ($1, 'child', 'standard', 2000)`, []any{e.eventID}},
		{`INSERT INTO event_questions (event_id, id, position, label, kind, choices, required, per)
			VALUES ($1, 'name', 0, 'Attendee name', 'text', '{}', true, 'ticket'),
			       ($1, 'heard', 1, 'How did you hear of us?', 'choice', '{radio,friends,online}', false, 'order')`, []any{e.eventID}},
	} {
		_, err := e.store.Pool().Exec(ctx, q.sql, q.args...)
		require.NoError(t, err, q.sql)
	}
	return e, base, org
}

// text is an element's text with its white space folded (” when absent).
func text(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	return js(t, ctx, `(el => el ? el.textContent.replace(/\s+/g, ' ').trim() : '')(document.querySelector('`+selector+`'))`)
}

// TestAFanChoosesAChildTicketSeesItsPriceTheFeeAndTheTaxApartAnswersTheAttendeesNamePaysAndOpensTheInvoice:
// the event's page lists Adult and Child with their prices and the
// service fee; the fan picks a seat, chooses Child for it (the selection's
// price follows), holds it and reads the hold's line as Child at €20.00,
// the fee and the 21 % VAT apart, and the total they make; paid, the
// booking page says the same and its "Invoice (PDF)" fetches the invoice
// with the fan's token (a PDF, numbered with the organisation's prefix).
// Before paying, the hold page asks the attendee's name (a payment without
// it is refused beside the field, nothing charged) and where the fan heard
// of the show; the name is then on the ticket. Cancelled, the booking is
// refunded and offers its credit note beside the invoice.
func TestAFanChoosesAChildTicketSeesItsPriceTheFeeAndTheTaxApartAnswersTheAttendeesNamePaysAndOpensTheInvoice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, base, org := typedStack(t)
	a := browser(t, 4*time.Minute)
	eur := func(minor int64) string {
		return js(t, a, fmt.Sprintf(`new Intl.NumberFormat(undefined, { style: 'currency', currency: 'EUR' }).format(%d / 100)`, minor))
	}
	signInAndOpen(t, a, base, "family_"+e.eventID[4:], e.eventID)

	// The event's page: the types with their prices, and the fee.
	require.Contains(t, text(t, a, `#tickettypes li[data-type=adult]`), "Adult: "+eur(4000))
	require.Contains(t, text(t, a, `#tickettypes li[data-type=child]`), "Child: "+eur(2000))
	require.Contains(t, text(t, a, `#servicefee`), eur(150)+" per ticket")

	// A seat, as Child: the selection's price follows the type.
	seats := pickSeats(t, a, 1)
	require.Equal(t, "adult", js(t, a, `document.querySelector('#selection li[data-seat]').dataset.type`), "the first type unless the fan chooses")
	require.Contains(t, text(t, a, `#selection li[data-seat] .price`), eur(4000))
	js(t, a, `(() => { const s = document.querySelector('#selection select[data-seat]'); s.value = 'child';
		s.dispatchEvent(new Event('change', { bubbles: true })); return 'chosen' })()`)
	waitJS(t, a, `document.querySelector('#selection li[data-seat] .price').textContent`, eur(2000), 5*time.Second)
	require.Equal(t, "child", js(t, a, `document.querySelector('#selection li[data-seat]').dataset.type`))
	requireAccessible(t, a, "the event page with a seat chosen as Child")

	// The hold: Child at its price, the fee and the VAT apart.
	holdID := holdSelection(t, a)
	var total, fees, tax int64
	var itemType string
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT r.total, r.fees, r.tax, i.ticket_type FROM reservations r
		JOIN reservation_items i ON i.reservation_id = r.id WHERE r.id = $1 AND i.seat_id = $2`, holdID, seats[0]).Scan(&total, &fees, &tax, &itemType))
	require.Equal(t, "child", itemType)
	require.EqualValues(t, 150, fees)
	require.EqualValues(t, 452, tax, "21 % of 21.50, added")
	require.EqualValues(t, 2000+150+452, total)
	summary := func(where string) {
		t.Helper()
		line := text(t, a, `.summary li[data-type=child]`)
		require.Contains(t, line, "Child", where)
		require.Contains(t, line, eur(2000), where)
		require.Contains(t, text(t, a, `.summary #fees`), "Service fee", where)
		require.Contains(t, text(t, a, `.summary #fees`), eur(150), where)
		require.Contains(t, text(t, a, `.summary #tax`), "VAT 21%", where)
		require.Contains(t, text(t, a, `.summary #tax`), eur(452), where)
		require.Equal(t, "no", js(t, a, `document.querySelector('.summary #tax').dataset.included`), where)
		require.Contains(t, text(t, a, `.summary .total`), eur(total), where)
	}
	waitJS(t, a, `document.querySelector('.summary #tax') ? 'shown' : ''`, "shown", 10*time.Second)
	summary("the hold")
	requireAccessible(t, a, "the hold with a type, the fee and the tax")

	// The questions: the ticket's attendee and the order's. Paying with
	// the name left out is refused beside its field, and nothing is paid.
	require.Contains(t, text(t, a, `#questions fieldset[data-ticket="0"] legend`), "Ticket 1: A, Row A, Seat 1 · Child")
	require.Equal(t, "true", js(t, a, `document.querySelector('[name="answers.name[0]"]').getAttribute('aria-required')`))
	require.Equal(t, "4", js(t, a, `String(document.querySelectorAll('[name="answers.heard[0]"] option').length)`), "choose, or one of three")
	payWith(t, a, "pm_card_visa")
	waitJS(t, a, `(m => m ? m.textContent : '')(document.querySelector('.field-error[data-field="answers.name[0]"]'))`, "required: Attendee name", 20*time.Second)
	require.Equal(t, "true", js(t, a, `document.querySelector('[name="answers.name[0]"]').getAttribute('aria-invalid')`))
	require.Equal(t, "answers.name[0]", js(t, a, `document.activeElement.name`), "the focus on the question")
	require.Contains(t, text(t, a, `#problem`), "Nothing was charged")
	require.Zero(t, e.count(`SELECT count(*) FROM payments WHERE reservation_id = $1`, holdID))
	requireAccessible(t, a, "the hold with an unanswered question")
	do(t, a, "answer the questions", chromedp.SendKeys(css(`[name="answers.name[0]"]`), "Nora Junior"),
		chromedp.SetValue(css(`[name="answers.heard[0]"]`), "friends"))

	// Paid: the booking says the same, and its invoice opens.
	payWith(t, a, "pm_card_visa")
	waitPaid(t, a, 1)
	waitJS(t, a, `document.querySelector('.summary #tax') ? 'shown' : ''`, "shown", 10*time.Second)
	summary("the booking")
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM invoices WHERE reservation_id = $1 AND kind = 'INVOICE' AND org_id = $2`, holdID, org) == 1
	}, 30*time.Second, 100*time.Millisecond, "the sale's tickets come with the invoice")
	do(t, a, "open the invoice", chromedp.Click(css(`#invoicebtn`)), chromedp.WaitVisible(css(`#invoicelink`)))
	require.Equal(t, "application/pdf", js(t, a, `document.getElementById('invoicelink').dataset.type`))
	require.Regexp(t, `^CAT-\d{4}-000001\.pdf$`, js(t, a, `document.getElementById('invoicelink').dataset.name`))
	require.True(t, strings.HasPrefix(js(t, a, `document.getElementById('invoicelink').href`), "blob:"), "a blob URL: the token rode on the fetch")
	// The same fetch the page made, its answer read here (the page's
	// policy lets it fetch its own origin, not its blob URLs).
	got, err := chromedp.Run(a, chromedp.Evaluate[string](`fetch('/v1/bookings/`+holdID+`/invoice.pdf', { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('token') } })
		.then(async r => r.status + ' ' + r.headers.get('Content-Type') + ' ' + (await r.text()).slice(0, 5))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, "200 application/pdf %PDF-", got)
	require.Empty(t, js(t, a, `document.getElementById('credit-notebtn') ? 'shown' : ''`), "no credit note before a refund")
	requireAccessible(t, a, "the paid booking with its invoice")

	// The answers were kept, and the ticket names its attendee.
	var heard string
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT value FROM booking_answers WHERE reservation_id = $1 AND question_id = 'heard'`, holdID).Scan(&heard))
	require.Equal(t, "friends", heard)
	js(t, a, `(() => { location.hash = '#/tickets'; return 'tickets' })()`)
	waitJS(t, a, `(p => p ? p.textContent : '')(document.querySelector('#tickets .attendee'))`, "Attendee: Nora Junior", 20*time.Second)

	// Cancelled within the policy: refunded, with a credit note beside the
	// invoice.
	do(t, a, "the booking again", chromedp.Navigate(base+"/#/booking/"+holdID), chromedp.WaitVisible(css(`#cancelbtn`)))
	do(t, a, "cancel the booking, confirming once", chromedp.Click(css(`#cancelbtn`)), chromedp.WaitVisible(css(`#cancelbtn[data-sure=yes]`)),
		chromedp.Click(css(`#cancelbtn`)))
	waitJS(t, a, `(s => s ? s.dataset.status || '' : '')(document.getElementById('bstatus'))`, "REFUNDED", 60*time.Second)
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM invoices WHERE reservation_id = $1 AND kind = 'CREDIT_NOTE'`, holdID) == 1
	}, 30*time.Second, 100*time.Millisecond, "the refund's credit note")
	do(t, a, "open the credit note", chromedp.Click(css(`#credit-notebtn`)), chromedp.WaitVisible(css(`#credit-notelink`)))
	require.Equal(t, "application/pdf", js(t, a, `document.getElementById('credit-notelink').dataset.type`))
	require.Regexp(t, `^CAT-\d{4}-000002\.pdf$`, js(t, a, `document.getElementById('credit-notelink').dataset.name`), "the next number")
	require.Equal(t, "shown", js(t, a, `document.getElementById('invoicebtn') ? 'shown' : ''`), "the invoice stays")
	requireAccessible(t, a, "the refunded booking with its invoice and credit note")
}
