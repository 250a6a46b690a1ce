package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// providerEvent fetches the sandbox's latest event of typ for intent.
func (p provider) providerEvent(typ vocab.ProviderEvent, intentID string) []byte {
	e := p.e
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.pspURL+"/v1/events?limit=100", nil)
	req.Header.Set("Authorization", "Bearer sk_test_encore_sandbox")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&page))
	for _, raw := range page.Data {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Object struct {
					ID string `json:"id"`
				} `json:"object"`
			} `json:"data"`
		}
		require.NoError(e.t, json.Unmarshal(raw, &ev))
		if ev.Type == string(typ) && ev.Data.Object.ID == intentID {
			return raw
		}
	}
	e.t.Fatalf("no %s event for %s", typ, intentID)
	return nil
}

// deliver posts a provider event to the webhook endpoint, signed as the
// provider signs it.
func (p provider) deliver(payload []byte) int {
	e := p.e
	req, _ := http.NewRequest(http.MethodPost, e.api.URL+"/v1/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", psp.Sign(payload, e.cfg.StripeWebhookSecret.Reveal(), time.Now()))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// authorisedCheckout holds seats for fan, checks out with a card of its own
// and returns the booking, the checkout's answer and the sandbox's
// authorisation event for it: with onlyEvents the sandbox does not deliver
// it, so the test delivers it (or a forgery of it) itself.
func (e *e2e) authorisedCheckout(fan string, seats ...string) (string, map[string]any, []byte) {
	e.t.Helper()
	id, co := e.checkedOut(fan, e.pay.card(), seats...)
	return id, co, e.pay.providerEvent(vocab.EventAuthorised, co["payment"].(map[string]any)["intent_id"].(string))
}

// rewriteEvent is a provider event with idSuffix added to its ID (none: the
// same ID) and edit applied to the payment intent it carries, as an attacker
// or a broken relay would send it.
func (p provider) rewriteEvent(event []byte, idSuffix string, edit func(intent map[string]any)) []byte {
	e := p.e
	e.t.Helper()
	var ev map[string]any
	require.NoError(e.t, json.Unmarshal(event, &ev))
	ev["id"] = ev["id"].(string) + idSuffix
	edit(ev["data"].(map[string]any)["object"].(map[string]any))
	out, err := json.Marshal(ev)
	require.NoError(e.t, err)
	return out
}

// onlyEvents keeps the sandbox from delivering the authorisation itself, so
// the test delivers it.
func onlyEvents(types ...string) e2eOption {
	return func(c *psp.Config) { c.EnabledEvents = types }
}

func TestEightIdenticalWebhooksInParallelGiveOnePaidBookingOneTicketSetAndOneEmail(t *testing.T) {
	t.Parallel()
	e := newE2E(t, onlyEvents("payment_intent.succeeded"))
	fan := e.fanWithEmail("asha", "asha@example.com")
	id, co, event := e.authorisedCheckout(fan, e.seat(0, 1), e.seat(0, 2))
	require.Equal(t, string(vocab.BookingAuthorised), co["status"])
	intentID := co["payment"].(map[string]any)["intent_id"].(string)
	require.NotEmpty(t, co["payment"].(map[string]any)["client_secret"])

	codes := make([]int, 8)
	parallel(len(codes), len(codes), func(i int) { codes[i] = e.pay.deliver(event) })
	for _, c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	// Tickets and the notification follow the capture: wait for the last
	// step, then check each count once.
	e.waitNotified(id)
	_, b := e.call(http.MethodGet, "/v1/bookings/"+id, fan, nil)
	require.Len(t, b["tickets"], 2)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM reservations WHERE id = $1 AND status = 'PAID'`, id))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, id))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM seats WHERE reservation_id = $1 AND status = 'SOLD'`, id))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_events WHERE intent_id = $1 AND type = $2`, intentID, vocab.EventAuthorised))
	mails, err := filepath.Glob(filepath.Join(e.mailbox, "mailbox", "*.eml"))
	require.NoError(t, err)
	require.Len(t, mails, 1)
	mail, err := os.ReadFile(mails[0])
	require.NoError(t, err)
	require.Contains(t, string(mail), "\r\nTo: <asha@example.com>\r\n", "the confirmation goes to the token's email")
	require.Equal(t, "CAPTURED", e.paymentStatus(id))

	// The same event ID with other content is refused.
	tampered := e.pay.rewriteEvent(event, "", func(intent map[string]any) { intent["amount_capturable"] = 1 })
	require.Equal(t, http.StatusConflict, e.pay.deliver(tampered))
}

func (e *e2e) paymentStatus(id string) string {
	var s string
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), `SELECT status FROM payments WHERE reservation_id = $1`, id).Scan(&s))
	return s
}

// paymentFlagged is why the booking's payment was flagged for a person to
// look at, nil while it is not.
func (e *e2e) paymentFlagged(id string) *string {
	var flagged *string
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), `SELECT flagged FROM payments WHERE reservation_id = $1`, id).Scan(&flagged))
	return flagged
}

// TestAForgedAuthorisationIsActedOnAsTheProviderTellsIt delivers,
// correctly signed, a forgery of the sandbox's authorisation of a checkout
// under an event ID of its own. The saga reads the payment from the
// provider before it acts, so what the forgery changed counts for nothing:
// the provider says the hold's total is authorised for this booking, and
// the booking sells for that total.
func TestAForgedAuthorisationIsActedOnAsTheProviderTellsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fan, idSuffix string
		row                 int
		forge               func(intent map[string]any)
	}{
		{"a wrong amount", "mallory", "_forged", 1, func(intent map[string]any) {
			intent["amount_capturable"] = 1
			intent["amount"] = 1
		}},
		{"a reference naming another booking", "victim", "_other", 10, func(intent map[string]any) {
			intent["metadata"] = map[string]any{"booking_id": "00000000-0000-4000-8000-000000000000"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a stack of its own
			e := newE2E(t, onlyEvents("payment_intent.succeeded"))
			fan, seat := e.fan(tc.fan), e.seat(tc.row, 1)
			id, _, event := e.authorisedCheckout(fan, seat)
			require.Equal(t, http.StatusOK, e.pay.deliver(e.pay.rewriteEvent(event, tc.idSuffix, tc.forge)),
				"stored and delivered to the booking the database names")
			e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
			e.waitNotified(id) // the saga's last step: captured and ticketed
			require.Equal(t, "SOLD", e.seatStatus(seat))
			require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, id))
			require.Equal(t, "CAPTURED", e.paymentStatus(id))
			require.Equal(t, 1, e.count(`SELECT count(*) FROM payments p JOIN reservations r ON r.id = p.reservation_id
				WHERE p.reservation_id = $1 AND p.amount = r.total`, id), "captured for the hold's total, not the forgery's")
			require.Nil(t, e.paymentFlagged(id))
		})
	}
}

// TestAPaymentSignalSentFromTheWebUIIsCheckedWithTheProviderFirst signals,
// as anyone allowed to press the Web UI's Signal button could, that a
// payment still waiting on its 3-D Secure challenge was authorised, then
// that a payment the provider never made was. Neither sells: the saga
// asks the provider, which says the challenge is still open and knows
// nothing of the second (flagged for staff). The fan's real challenge then
// sells the booking as usual.
func TestAPaymentSignalSentFromTheWebUIIsCheckedWithTheProviderFirst(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan, seat := e.fan("forger"), e.seat(11, 1)
	id, co := e.checkedOut(fan, "pm_card_threeDSecure2Required", seat)
	pay := co["payment"].(map[string]any)
	require.Equal(t, "requires_action", pay["status"])
	var total money.Money
	require.NoError(t, e.store.Pool().QueryRow(context.Background(),
		`SELECT total, currency FROM reservations WHERE id = $1`, id).Scan(&total.Amount, &total.Currency))

	ctx := context.Background()
	wid := workflows.BookingWorkflowID(id)
	for _, ev := range []workflows.PaymentEvent{
		{EventID: "evt_ui_1", Type: vocab.EventAuthorised, IntentID: pay["intent_id"].(string), Amount: total, BookingID: id, ClaimedBookingID: id},
		{EventID: "evt_ui_2", Type: vocab.EventAuthorised, IntentID: "pi_never_made", Amount: total, BookingID: id, ClaimedBookingID: id},
	} {
		require.NoError(t, e.temporal.SignalWorkflow(ctx, wid, "", workflows.SignalPayment, ev))
	}
	// The saga takes signals in order: the second one's flag means the
	// first was handled too.
	require.Eventually(t, func() bool { return e.paymentFlagged(id) != nil }, 30*time.Second, 50*time.Millisecond)
	require.Contains(t, *e.paymentFlagged(id), "evt_ui_2 names a payment the provider does not know")
	require.Equal(t, "HELD", e.seatStatus(seat), "nothing sold on a signal's word")
	e.waitStatus(fan, id, vocab.BookingPendingPayment, time.Second)
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, id))

	e.passChallenge(pay)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	e.waitNotified(id)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, id))
}

func TestADeclinedCardThenAGoodOneSellsThroughTheSandbox(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("retry")
	id, status, co := e.holdAndCheckout(fan, []string{e.seat(2, 1)}, "pm_card_chargeDeclined")
	require.Equal(t, http.StatusPaymentRequired, status, "%v", co)
	require.Equal(t, "/problems/payment-declined", co["type"])
	require.Equal(t, "generic_decline", co["decline_code"])
	status, co = e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()})
	require.Equal(t, http.StatusOK, status, "%v", co)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
}

func TestCancellingAPaidBookingRefundsAndFreesTheSeats(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("changed-mind")
	id, _ := e.buy(fan, e.seat(3, 1))
	e.waitNotified(id)
	status, b := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil, "Idempotency-Key", "cancel-1")
	require.Equal(t, http.StatusOK, status, "%v", b)
	require.Equal(t, string(vocab.BookingRefunded), b["status"])
	require.Equal(t, "AVAILABLE", e.seatStatus(e.seat(3, 1)))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1 AND status = 'REVOKED'`, id))
	// A stranger cannot see or cancel it.
	status, _ = e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", e.fan("stranger"), nil)
	require.Equal(t, http.StatusNotFound, status)
}

func (e *e2e) seatStatus(id string) string {
	var s string
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), `SELECT status FROM seats WHERE id = $1`, id).Scan(&s))
	return s
}

func TestWebhooksWithABadSignatureOrAnUnknownPaymentAreRefused(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	payload := []byte(`{"id":"evt_x","object":"event","type":"payment_intent.succeeded","api_version":"2026-03-25.dahlia","data":{"object":{"id":"pi_unknown","object":"payment_intent","metadata":{}}}}`)
	req, _ := http.NewRequest(http.MethodPost, e.api.URL+"/v1/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", psp.Sign(payload, "whsec_wrong", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	req, _ = http.NewRequest(http.MethodPost, e.api.URL+"/v1/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", psp.Sign(payload, e.cfg.StripeWebhookSecret.Reveal(), time.Now().Add(-6*time.Minute)))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "older than the 5-minute tolerance")
	require.Equal(t, http.StatusServiceUnavailable, e.pay.deliver(payload), "unknown payment: retryable")
}

// TestAnAuthorisationThatOvertakesItsPaymentsRecordIsTakenOnItsFirstDelivery:
// the provider sends the authorisation's event as it answers the saga's
// call, before the saga has recorded the intent. The event waits for the
// record (a payment's insert wakes it) instead of being refused for a
// redelivery a second or more later; one whose payment is never recorded is
// still refused, for redelivery, once the wait is over.
func TestAnAuthorisationThatOvertakesItsPaymentsRecordIsTakenOnItsFirstDelivery(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	_, id := e.fanHolding("quick", e.seat(9, 1))
	event := func(evID, intentID string) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.amount_capturable_updated","api_version":"2026-03-25.dahlia",`+
			`"data":{"object":{"id":%q,"object":"payment_intent","amount":2000,"amount_capturable":2000,"currency":"eur","status":"requires_capture",`+
			`"capture_method":"manual","metadata":{"booking_id":%q}}}}`, evID, intentID, id))
	}
	// The payment's insert wakes the event through the booking's
	// notifications: listening first, or the wait's last read could pass
	// the test without them.
	require.Eventually(t, e.changes.Listening, 10*time.Second, 5*time.Millisecond)
	answered := make(chan int, 1)
	delivered := time.Now()
	go func() { answered <- e.pay.deliver(event("evt_overtaking", "pi_overtaking")) }()
	// The event is in: it reads no record and waits on the booking.
	require.Eventually(t, func() bool { return e.changes.Watchers() > 0 || len(answered) > 0 },
		10*time.Second, 5*time.Millisecond)
	require.Zero(t, len(answered), "the event was answered before its payment was recorded")
	require.NoError(t, e.store.Bookings.SavePayment(context.Background(), uuid.MustParse(id), "pi_overtaking",
		money.Money{Amount: 2000, Currency: "EUR"}, vocab.PaymentAuthorised, 1))
	select {
	case code := <-answered:
		require.Equal(t, http.StatusOK, code, "taken on its first delivery")
		require.Less(t, time.Since(delivered), booking.IntentRecordWait,
			"woken by the payment's record, not by the end of the wait")
	case <-time.After(booking.IntentRecordWait + 10*time.Second):
		t.Fatal("the event was not answered once its payment was recorded")
	}
	require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_overtaking'`))

	start := time.Now()
	require.Equal(t, http.StatusServiceUnavailable, e.pay.deliver(event("evt_never", "pi_never")), "never recorded: redeliver")
	require.GreaterOrEqual(t, time.Since(start), booking.IntentRecordWait, "refused only once the wait is over")
	require.Zero(t, e.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_never'`))
	// Operators see both waits, by outcome.
	families, err := e.bookingMetrics.Gather()
	require.NoError(t, err)
	waits := map[string]uint64{}
	for _, f := range families {
		if f.GetName() == "encore_webhook_record_wait_seconds" {
			for _, m := range f.GetMetric() {
				waits[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]uint64{"recorded": 1, "refused": 1}, waits)
}

// TestRecordHistories writes the workflow histories the replay tests use when
// ENCORE_RECORD_HISTORIES is set (run after changing the workflow on purpose).
// Histories recorded before the workflow started at checkout (started_at_hold_*)
// are kept: workflows of that shape may still be running, so they must keep
// replaying.
func TestRecordHistories(t *testing.T) {
	t.Parallel()
	if os.Getenv("ENCORE_RECORD_HISTORIES") == "" {
		t.Skip("set ENCORE_RECORD_HISTORIES=1 to re-record workflows/testdata")
	}
	e := newE2E(t)
	record := e.recordHistory
	fan := e.fan("rec")
	id, status, _ := e.holdAndCheckout(fan, []string{e.seat(5, 1)}, "pm_card_chargeDeclined")
	require.Equal(t, http.StatusPaymentRequired, status)
	status, _ = e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()})
	require.Equal(t, http.StatusOK, status)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	e.waitNotified(id) // the saga's last step is done before the cancel
	status, _ = e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusOK, status)
	record("decline_then_paid_then_cancelled", id)

	// Checked out into a 3-D Secure challenge the fan walks away from:
	// released, the authorisation voided.
	fan2 := e.fan("rec2")
	id2, _ := e.checkedOut(fan2, "pm_card_threeDSecure2Required", e.seat(5, 2))
	status, _ = e.call(http.MethodDelete, "/v1/holds/"+id2, fan2, nil)
	require.Equal(t, http.StatusNoContent, status)
	record("released_after_checkout", id2) // waits for the workflow to end

	// Paid after a 3-D Secure challenge: the authorisation's event is
	// checked with the provider before the sale; then cancelled.
	fan3 := e.fan("rec3")
	id3, co3 := e.checkedOut(fan3, "pm_card_threeDSecure2Required", e.seat(5, 3))
	e.passChallenge(co3["payment"].(map[string]any))
	e.waitStatus(fan3, id3, vocab.BookingPaid, 30*time.Second)
	e.waitNotified(id3)
	status, _ = e.call(http.MethodPost, "/v1/bookings/"+id3+"/cancel", fan3, nil)
	require.Equal(t, http.StatusOK, status)
	record("threeds_event_checked_then_paid_then_cancelled", id3)
	fmt.Println("recorded")
}

// recordHistory waits for the booking's workflow to finish and writes its
// history to workflows/testdata/name.json.
func (e *e2e) recordHistory(name, id string) {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.temporal.GetWorkflow(ctx, workflows.BookingWorkflowID(id), "").Get(ctx, nil))
	e.writeHistory(ctx, name, id)
}

// writeHistory writes the history of the booking's workflow, as it stands,
// to workflows/testdata/name.json, where the replay tests read it.
func (e *e2e) writeHistory(ctx context.Context, name, id string) {
	t := e.t
	iter := e.temporal.GetWorkflowHistory(ctx, workflows.BookingWorkflowID(id), "", false, 0)
	var events []json.RawMessage
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		b, err := protojson.Marshal(ev)
		require.NoError(t, err)
		events = append(events, b)
	}
	out, _ := json.MarshalIndent(map[string]any{"events": events}, "", " ")
	require.NoError(t, os.WriteFile(filepath.Join("..", "workflows", "testdata", name+".json"), out, 0o644))
}

// TestAHoldCostsTemporalNothingUntilCheckout: placing and releasing a hold
// starts no workflow; the checkout starts the booking's workflow with its
// first Update, and the booking sells.
func TestAHoldCostsTemporalNothingUntilCheckout(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	noWorkflow := func(id string) {
		_, err := e.temporal.DescribeWorkflowExecution(ctx, workflows.BookingWorkflowID(id), "")
		var nf *serviceerror.NotFound
		require.ErrorAs(t, err, &nf, "hold %s has a workflow", id)
	}
	fan := e.fan("browsing")
	released := e.hold(fan, []string{e.seat(6, 1)})
	noWorkflow(released)
	status, _ := e.call(http.MethodDelete, "/v1/holds/"+released, fan, nil)
	require.Equal(t, http.StatusNoContent, status)
	noWorkflow(released)
	require.Equal(t, "AVAILABLE", e.seatStatus(e.seat(6, 1)), "released by the database alone")

	// Cancelling a hold that was never checked out releases it too.
	cancelled := e.hold(fan, []string{e.seat(6, 2)})
	status, b := e.call(http.MethodPost, "/v1/bookings/"+cancelled+"/cancel", fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", b)
	require.Equal(t, string(vocab.BookingCancelled), b["status"])
	noWorkflow(cancelled)

	id, _ := e.checkedOut(fan, e.pay.card(), e.seat(6, 3))
	d, err := e.temporal.DescribeWorkflowExecution(ctx, workflows.BookingWorkflowID(id), "")
	require.NoError(t, err, "the checkout started the workflow")
	require.NotNil(t, d.WorkflowExecutionInfo)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
}

func TestACheckoutWithoutACardLinksToTheHostedPage(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("hosted")
	id, co := e.checkedOut(fan, "", e.seat(7, 1))
	pay := co["payment"].(map[string]any)
	require.Equal(t, "requires_payment_method", pay["status"])
	link := pay["next_action"].(string)
	require.Contains(t, link, e.pspURL+"/checkout/"+pay["intent_id"].(string))
	// Pay on the hosted page as a fan would: the sandbox then sends the
	// signed authorisation and the booking sells.
	resp, err := http.Get(link)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	form := url.Values{"payment_method": {"pm_card_visa"}, "client_secret": {pay["client_secret"].(string)}}
	resp, err = http.PostForm(e.pspURL+"/checkout/"+pay["intent_id"].(string), form)
	require.NoError(t, err)
	resp.Body.Close()
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
}

func TestCheckoutOnAnExpiredHoldIsGone(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan, id := e.fanHolding("late", e.seat(8, 1))
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)
	status, p := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()})
	require.Equal(t, http.StatusGone, status)
	require.Equal(t, "/problems/hold-expired", p["type"])
}

func TestThreeDSecureExtendsTheHoldOnceAndSellsAfterTheChallenge(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("secure")
	status, h := e.call(http.MethodPost, "/v1/holds", fan, map[string]any{"event_id": e.eventID, "seat_ids": []string{e.seat(7, 5)}})
	require.Equal(t, http.StatusCreated, status)
	id := h["hold_id"].(string)
	before, err := time.Parse(time.RFC3339Nano, h["expires_at"].(string))
	require.NoError(t, err)
	status, co := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": "pm_card_threeDSecure2Required"})
	require.Equal(t, http.StatusOK, status, "%v", co)
	pay := co["payment"].(map[string]any)
	require.Equal(t, "requires_action", pay["status"])
	challenge := pay["next_action"].(string)
	require.Contains(t, challenge, "/challenge")
	after, err := time.Parse(time.RFC3339Nano, co["expires_at"].(string))
	require.NoError(t, err)
	require.InDelta(t, (5 * time.Minute).Seconds(), after.Sub(before).Seconds(), 1, "extended once by 5 minutes")
	var extended bool
	require.NoError(t, e.store.Pool().QueryRow(context.Background(), `SELECT extended FROM reservations WHERE id = $1`, id).Scan(&extended))
	require.True(t, extended)

	require.Contains(t, e.passChallenge(pay), "/v1/payments/return", "back to Encore after the challenge")
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
}

// passChallenge completes the sandbox's 3-D Secure challenge of a
// checkout's payment, as the fan's browser does, and returns where the
// sandbox sends the fan next.
func (e *e2e) passChallenge(pay map[string]any) string {
	e.t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(pay["next_action"].(string), url.Values{"action": {"complete"}, "client_secret": {pay["client_secret"].(string)}})
	require.NoError(e.t, err)
	resp.Body.Close()
	return resp.Header.Get("Location")
}

// TestTheLastDeclinedCheckoutRetriedAfterTheHoldWasReleasedIsStillDeclined:
// the third decline releases the hold; that checkout's answer lost and
// retried under its key is the decline again, not a hold that is gone.
func TestTheLastDeclinedCheckoutRetriedAfterTheHoldWasReleasedIsStillDeclined(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan, id := e.fanHolding("thrice-declined", e.seat(11, 5))
	// A declining card no other test of this package pays with: the fraud
	// rule counting accounts per card (an hour, the package's one
	// database) would otherwise send later tests' fans to 3-D Secure.
	declined := map[string]any{"payment_method": "pm_card_chargeDeclinedProcessingError"}
	var last map[string]any
	for i := range 3 {
		var status int
		status, last = e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, declined, "Idempotency-Key", fmt.Sprint("try-", i))
		require.Equal(t, http.StatusPaymentRequired, status, "%v", last)
	}
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM reservations WHERE id = $1 AND status <> 'PENDING'`, id) == 1
	}, 30*time.Second, 50*time.Millisecond, "the hold is released after the third decline")
	status, again := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, declined, "Idempotency-Key", "try-2")
	require.Equal(t, http.StatusPaymentRequired, status, "%v", again)
	require.Equal(t, "/problems/payment-declined", again["type"])
	require.Equal(t, last["decline_code"], again["decline_code"])
	status, other := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, declined, "Idempotency-Key", "try-3")
	require.Equal(t, http.StatusConflict, status, "a new attempt on a released hold: %v", other)
}

func TestACheckoutKeyReusedForAnotherCardIsRefused(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan, id := e.fanHolding("reuser", e.seat(11, 1))
	status, first := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": "pm_card_chargeDeclined"}, "Idempotency-Key", "pay")
	require.Equal(t, http.StatusPaymentRequired, status, "%v", first)
	status, again := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": "pm_card_chargeDeclined"}, "Idempotency-Key", "pay")
	require.Equal(t, http.StatusPaymentRequired, status, "the same request replays the first answer: %v", again)
	status, other := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()}, "Idempotency-Key", "pay")
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", other)
	require.Equal(t, "/problems/idempotency-key-reused", other["type"])
	status, ok := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()}, "Idempotency-Key", "pay-2")
	require.Equal(t, http.StatusOK, status, "%v", ok)
}

// TestAPaidBookingCostsTwoWorkflowTasks counts them from the history: the
// checkout (started with the workflow: adopt, fraud, authorise) and the
// provider's verified authorisation (confirm, capture, issue, notify). A
// hold costs none.
func TestAPaidBookingCostsTwoWorkflowTasks(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("frugal")
	id, co := e.buy(fan, e.seat(13, 1))
	tasks := func() int {
		n, _ := e.workflowTasks(id)
		return n
	}
	e.waitNotified(id)
	require.Eventually(t, func() bool { return tasks() == 2 }, 10*time.Second, 50*time.Millisecond)
	// The success event of the saga's own capture arrives after it and is
	// not signalled: once the sandbox has it and has delivered every event
	// (the endpoint answered each), and no workflow task is left to run,
	// still two.
	intent := co["payment"].(map[string]any)["intent_id"].(string)
	e.waitEventsDelivered(intent, vocab.EventSucceeded)
	require.Eventually(t, func() bool {
		d, err := e.temporal.DescribeWorkflowExecution(context.Background(), workflows.BookingWorkflowID(id), "")
		return err == nil && d.GetPendingWorkflowTask() == nil
	}, 30*time.Second, 50*time.Millisecond, "no workflow task pending")
	n, timerCancelled := e.workflowTasks(id)
	require.Equal(t, 2, n, "nothing more runs until the cancellation deadline")
	require.True(t, timerCancelled, "the hold's expiry timer is cancelled once sold, so it wakes nothing later")
}

// waitEventsDelivered waits until the sandbox has an event of typ about
// intentID and has no delivery left to make: the webhook endpoint has
// answered every event, whether it stored it or not.
func (e *e2e) waitEventsDelivered(intentID string, typ vocab.ProviderEvent) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		return e.pay.intentEvents(string(typ), intentID) == 1 && e.psp.PendingDeliveries() == 0
	}, 30*time.Second, 50*time.Millisecond, "the sandbox delivered %s of %s", typ, intentID)
}

// rowWriteCeiling is the most rows a paid one-seat booking may write in
// Encore's database, the account's first row included: the saga's cost goal.
const rowWriteCeiling = 16

// TestAPaidBookingWritesAtMostSixteenRows counts, with a trigger on every
// table a booking touches, the row writes of one paid one-seat booking: the
// reservation is written once at the hold (with its total) and once at the
// sale; the sale writes no outbox row (a seat's availability does not
// change); the authorisation's provider event is stored once, already
// handled, and the echo of the saga's own capture not at all; the
// confirmation is one row of the mail queue, written once it went out, and
// its record (no log line); the invoice's number takes no counter row; the
// tickets and the invoice are written by one transaction.
func TestAPaidBookingWritesAtMostSixteenRows(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	writes := testenv.CountRowWrites(t, e.store.Pool(), "reservations", "reservation_items", "seats", "payments",
		"webhook_events", "mail_queue", "outbox", "notification_log", "tickets", "fraud_decisions",
		"users", "idempotency_keys", "invoices", "section_taken", "promotion_uses", "promotions", "sections")
	fan := e.fanWithEmail("thrifty", "thrifty@example.com")
	id, co := e.buy(fan, e.seat(14, 1))
	e.waitNotified(id)
	intent := co["payment"].(map[string]any)["intent_id"].(string)
	e.waitEventsDelivered(intent, vocab.EventSucceeded)
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM mail_queue WHERE status = 'SENT'`) == 1
	}, 30*time.Second, 50*time.Millisecond, "the email sent")
	// The harness runs no relay: one pass of it marks what the booking
	// wrote, as the running system's would.
	relay := outbox.New(e.store, outbox.Options{})
	relay.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(func(context.Context, string, string) error { return nil }))
	published, _, err := relay.RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, published, "the hold's row")
	got := writes()
	require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_events WHERE intent_id = $1`, intent),
		"the authorisation's event only: the capture's echo is not kept")
	require.Equal(t, 1, got["webhook_events"], "the authorisation's event is one row write")
	require.Equal(t, 1, got["mail_queue"], "the confirmation: one row, written once it went out")
	require.Zero(t, got["notification_log"], "the confirmation's row in the mail queue is its record")
	require.Equal(t, 2, got["reservations"], "the hold's insert, with its total, and the sale")
	require.Equal(t, 2, got["outbox"], "the hold's row and the relay's mark: the sale writes none")
	// The issue step commits once: its tickets and its invoice carry the
	// same inserting transaction (xmin).
	require.Equal(t, 1, e.count(`SELECT count(DISTINCT xmin::text) FROM (SELECT xmin FROM tickets WHERE reservation_id = $1
		UNION ALL SELECT xmin FROM invoices WHERE reservation_id = $1) w`, id), "tickets and invoice written in one transaction")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices WHERE reservation_id = $1`, id))
	total := 0
	for _, n := range got {
		total += n
	}
	t.Logf("row writes of one paid one-seat booking: %d in all, by table %v", total, got)
	require.LessOrEqual(t, total, rowWriteCeiling, "row writes of one paid one-seat booking, by table %v", got)
}

// TestARetriedCheckoutGetsItsFirstAnswerAfterTheBookingWasPaid: a fan whose
// answer was lost retries with the same Idempotency-Key after the booking
// sold; the first answer comes back rather than hold-not-pending.
func TestARetriedCheckoutGetsItsFirstAnswerAfterTheBookingWasPaid(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan, id := e.fanHolding("retrier", e.seat(14, 1))
	body := map[string]any{"payment_method": e.pay.card()}
	status, first := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, body, "Idempotency-Key", "lost-answer")
	require.Equal(t, http.StatusOK, status, "%v", first)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	status, again := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, body, "Idempotency-Key", "lost-answer")
	require.Equal(t, http.StatusOK, status, "%v", again)
	require.Equal(t, first["payment"], again["payment"])
	status, other := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, body, "Idempotency-Key", "a-new-attempt")
	require.Equal(t, http.StatusConflict, status, "a new checkout of a paid booking is refused: %v", other)
	require.Equal(t, "/problems/hold-not-pending", other["type"])

	// While Temporal cannot say what the first try answered (restarting,
	// unreachable), the retry is told to come back, not that the seat it is
	// paying for is not its hold.
	unreachable, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	defer unreachable.Close()
	svc := &booking.Service{Store: e.store, Temporal: unreachable}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = svc.Checkout(ctx, session.Identity{UserID: "retrier_" + e.eventID}, uuid.MustParse(id),
		booking.CheckoutRequest{PaymentMethod: body["payment_method"].(string)}, "lost-answer")
	require.ErrorIs(t, err, booking.ErrUnavailable)
	require.NotErrorIs(t, err, store.ErrNotPending)
}

// TestAWebhookWhoseDeliveryCannotBeRecordedIsAnsweredAsAFailureAndTheRedeliveryRecordsIt
// breaks the write that records a provider event as handed to its booking
// (a trigger refuses it, as a PostgreSQL restart between the signal and the
// write would): the endpoint must answer a failure, so the provider
// redelivers, not success with the event left unsignalled in the books.
func TestAWebhookWhoseDeliveryCannotBeRecordedIsAnsweredAsAFailureAndTheRedeliveryRecordsIt(t *testing.T) {
	t.Parallel()
	e := newE2E(t, onlyEvents("payment_intent.succeeded"))
	fan := e.fanWithEmail("wim", "wim@example.com")
	id, co, event := e.authorisedCheckout(fan, e.seat(0, 1))
	intentID := co["payment"].(map[string]any)["intent_id"].(string)
	ctx := context.Background()
	_, err := e.store.Pool().Exec(ctx, `CREATE FUNCTION refuse_signalled() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the database went away'; END $$;
		CREATE TRIGGER refuse_signalled BEFORE INSERT OR UPDATE ON webhook_events
		FOR EACH ROW WHEN (NEW.signalled_at IS NOT NULL) EXECUTE FUNCTION refuse_signalled()`)
	require.NoError(t, err)

	require.GreaterOrEqual(t, e.pay.deliver(event), 500, "an event not recorded as delivered is answered as a failure")
	var ev struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(event, &ev))
	// This event only: the sandbox's own events of the payment (its capture's)
	// may be stored unsignalled meanwhile too, and it redelivers those itself.
	unsignalled := `SELECT count(*) FROM webhook_events WHERE event_id = $1 AND intent_id = $2 AND signalled_at IS NULL`
	require.Equal(t, 1, e.count(unsignalled, ev.ID, intentID))

	_, err = e.store.Pool().Exec(ctx, `DROP TRIGGER refuse_signalled ON webhook_events`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, e.pay.deliver(event), "the provider's redelivery")
	require.Zero(t, e.count(unsignalled, ev.ID, intentID))
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
}
