package system_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
	"go.temporal.io/sdk/converter"

	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// disputeSoon makes the sandbox dispute a dispute card's payment half a
// second after its capture.
func disputeSoon(c *psp.Config) { c.DisputeDelay = 500 * time.Millisecond }

// stripe is the test's payment sandbox as any holder of the secret key
// reaches it (the provider's dashboard, support tooling): through stripe-go,
// not through Encore.
func (p provider) stripe() *stripe.Client {
	return stripe.NewClient(system.SandboxKey, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(p.e.pspURL), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
}

// disputedBooking pays two seats with the dispute card and waits until the
// booking is DISPUTED with its tickets issued: it returns the fan, the
// booking, its view and its dispute's ID.
func (e *e2e) disputedBooking() (string, string, map[string]any, string) {
	e.t.Helper()
	fan := e.fan("disputer")
	id, _ := e.checkedOut(fan, psp.DisputeCard, e.seat(1, 1), e.seat(1, 2))
	e.waitNotified(id)
	got := e.waitStatus(fan, id, vocab.BookingDisputed, 30*time.Second)
	d, ok := got["dispute"].(map[string]any)
	require.True(e.t, ok, "the booking shows its dispute: %v", got)
	require.Equal(e.t, string(vocab.DisputeNeedsResponse), d["status"])
	require.Equal(e.t, "fraudulent", d["reason"])
	require.Equal(e.t, got["total"], d["amount"], "the whole charge is disputed")
	require.NotEmpty(e.t, d["id"])
	require.Len(e.t, got["tickets"], 2)
	for _, tk := range got["tickets"].([]any) {
		require.Equal(e.t, string(vocab.TicketValid), tk.(map[string]any)["status"], "tickets stay valid while the dispute is open")
	}
	return fan, id, got, d["id"].(string)
}

func ticketIDs(view map[string]any) []string {
	var out []string
	for _, tk := range view["tickets"].([]any) {
		out = append(out, tk.(map[string]any)["id"].(string))
	}
	return out
}

// evidence submits evidence text on a dispute; the closing event is
// delivered twice, as a provider may.
func (p provider) evidence(disputeID, text string) {
	p.e.t.Helper()
	params := &stripe.DisputeUpdateParams{Evidence: &stripe.DisputeUpdateEvidenceParams{UncategorizedText: stripe.String(text)}}
	params.Headers = http.Header{psp.FaultHeader: {"duplicate_webhook"}}
	_, err := p.stripe().V1Disputes.Update(context.Background(), disputeID, params)
	require.NoError(p.e.t, err)
}

// supportView is the booking as support staff see it.
func (e *e2e) supportView(id string) map[string]any {
	e.t.Helper()
	status, out := e.call(http.MethodGet, "/v1/admin/bookings/"+id, e.staff("sam", "org_support", session.Support), nil)
	require.Equal(e.t, http.StatusOK, status, "%v", out)
	return out
}

func TestALostDisputeChargesTheBookingBackRevokesItsTicketsAtTheGateAndCountsInTheSalesReport(t *testing.T) {
	t.Parallel()
	e := newE2E(t, disputeSoon)
	ctx := context.Background()
	fan, id, view, disputeID := e.disputedBooking()
	before, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, time.Time{})
	require.NoError(t, err)
	require.Len(t, before.Valid, 2, "the gate admits a disputed booking's tickets")

	// A fan may not cancel (and be refunded) while the bank disputes.
	status, _ := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusConflict, status)

	e.pay.evidence(disputeID, psp.LosingEvidence)
	got := e.waitStatus(fan, id, vocab.BookingChargedBack, 30*time.Second)
	require.Equal(t, string(vocab.DisputeLost), got["dispute"].(map[string]any)["status"])
	// Support's list in the Temporal UI shows it too: the paid booking's
	// workflow is still open (until the cancellation deadline).
	require.Eventually(t, func() bool { return e.listedStatus(id) == string(vocab.BookingChargedBack) }, 10*time.Second, 50*time.Millisecond,
		"EncoreBookingStatus follows the database: %q", e.listedStatus(id))
	for _, tk := range got["tickets"].([]any) {
		require.Equal(t, string(vocab.TicketRevoked), tk.(map[string]any)["status"])
	}
	require.Equal(t, string(vocab.PaymentCaptured), got["payment"].(map[string]any)["status"],
		"the money left through the bank, not a refund: reconciliation sees a capture of a paid booking")

	// The gate's next delta names both tickets revoked; a full export leaves them out.
	delta, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, before.AsOf)
	require.NoError(t, err)
	require.ElementsMatch(t, ticketIDs(view), delta.Revoked)
	full, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, time.Time{})
	require.NoError(t, err)
	require.Empty(t, full.Valid)

	// The organiser's report counts the chargeback, not a sale, and the seats stay taken.
	rep, err := (&organiser.Sales{Reader: store.NewReader(e.store.Pool())}).Report(ctx, venues.Admin("", "auditor"), e.eventID)
	require.NoError(t, err)
	total := view["total"].(map[string]any)["amount"].(float64)
	require.Equal(t, 2, rep.Totals.ChargedBackTickets)
	require.EqualValues(t, total, rep.Totals.ChargedBack)
	require.Zero(t, rep.Totals.Sold)
	require.Zero(t, rep.Totals.Revenue)
	require.Equal(t, rep.Totals.Capacity-2, rep.Totals.Available)

	// Support sees the dispute's history, and the audit log one loss
	// although the closing event came twice.
	sv := e.supportView(id)
	require.Equal(t, string(vocab.BookingChargedBack), sv["status"])
	ds := sv["disputes"].([]any)
	require.Len(t, ds, 1)
	require.Equal(t, disputeID, ds[0].(map[string]any)["id"])
	require.NotEmpty(t, ds[0].(map[string]any)["revoked_at"])
	status, found := e.call(http.MethodGet, "/v1/admin/bookings?event="+e.eventID, e.staff("sam", "org_support", session.Support), nil)
	require.Equal(t, http.StatusOK, status, "%v", found)
	require.Equal(t, string(vocab.DisputeLost), found["bookings"].([]any)[0].(map[string]any)["dispute_status"],
		"support's search shows the dispute")
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM webhook_events WHERE type = 'charge.dispute.closed' AND signalled_at IS NOT NULL`) == 1
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM admin_audit WHERE action = 'booking.dispute.lost' AND target = $1`, "booking:"+id))
}

func TestAWonDisputeLeavesTheBookingPaidWithItsTicketsValid(t *testing.T) {
	t.Parallel()
	e := newE2E(t, disputeSoon)
	ctx := context.Background()
	fan, id, view, disputeID := e.disputedBooking()
	e.pay.evidence(disputeID, psp.WinningEvidence)
	got := e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	require.Equal(t, string(vocab.DisputeWon), got["dispute"].(map[string]any)["status"])
	for _, tk := range got["tickets"].([]any) {
		require.Equal(t, string(vocab.TicketValid), tk.(map[string]any)["status"])
	}
	full, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, time.Time{})
	require.NoError(t, err)
	require.Len(t, full.Valid, 2)
	rep, err := (&organiser.Sales{Reader: store.NewReader(e.store.Pool())}).Report(ctx, venues.Admin("", "auditor"), e.eventID)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Totals.Sold)
	require.EqualValues(t, view["total"].(map[string]any)["amount"], rep.Totals.Revenue)
	require.Zero(t, rep.Totals.ChargedBackTickets)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM admin_audit WHERE action = 'booking.dispute.won' AND target = $1`, "booking:"+id))
}

func TestARefundMadeInTheDashboardEndsTheBookingRefundedAndRevokesItsTickets(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	fan := e.fan("refunded")
	id, _ := e.buy(fan, e.seat(2, 1))
	e.waitNotified(id)
	view := e.waitStatus(fan, id, vocab.BookingPaid, 10*time.Second)
	intentID := view["payment"].(map[string]any)["intent_id"].(string)
	before, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, time.Time{})
	require.NoError(t, err)
	require.Len(t, before.Valid, 1)
	sc := e.pay.stripe()

	// A partial refund in the dashboard is recorded for support; the booking stays paid.
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(intentID), Amount: stripe.Int64(100)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return len(e.supportView(id)["outside_refunds"].([]any)) == 1
	}, 30*time.Second, 100*time.Millisecond, "support sees the partial refund")
	sv := e.supportView(id)
	require.Equal(t, string(vocab.BookingPaid), sv["status"])
	require.Equal(t, false, sv["outside_refunds"].([]any)[0].(map[string]any)["full"])

	// The rest refunded there too: the booking ends as Encore's own refund would end it.
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(intentID)})
	require.NoError(t, err)
	got := e.waitStatus(fan, id, vocab.BookingRefunded, 30*time.Second)
	require.Equal(t, string(vocab.TicketRevoked), got["tickets"].([]any)[0].(map[string]any)["status"])
	delta, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, before.AsOf)
	require.NoError(t, err)
	require.ElementsMatch(t, ticketIDs(view), delta.Revoked)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM seats WHERE id = $1 AND status = 'AVAILABLE'`, e.seat(2, 1)),
		"the seat is back on sale")
	sv = e.supportView(id)
	require.Equal(t, store.DisputeActor, sv["cancelled_by"])
	require.Len(t, sv["outside_refunds"], 2)
	require.Equal(t, true, sv["outside_refunds"].([]any)[1].(map[string]any)["ended_booking"])

	// The fan's own cancellation is refused: there is nothing left to refund.
	status, _ := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusConflict, status)
}

func TestEncoresOwnRefundIsNotTakenForARefundMadeElsewhere(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	fan := e.fan("canceller")
	id, _ := e.buy(fan, e.seat(3, 1))
	e.waitNotified(id)
	status, out := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", out)
	e.waitStatus(fan, id, vocab.BookingRefunded, 30*time.Second)
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM webhook_events w JOIN payments p ON p.intent_id = w.intent_id
			WHERE p.reservation_id = $1 AND w.type = 'charge.refunded' AND w.signalled_at IS NOT NULL`, id) == 1
	}, 30*time.Second, 50*time.Millisecond, "the refund's event arrives")
	require.Zero(t, e.count(`SELECT count(*) FROM outside_refunds WHERE reservation_id = $1`, id))
	require.Empty(t, e.supportView(id)["cancelled_by"], "the fan cancelled, not the provider")
}

// listedStatus is the EncoreBookingStatus the booking's workflow shows in
// the Temporal UI's list.
func (e *e2e) listedStatus(id string) string {
	d, err := e.temporal.DescribeWorkflowExecution(context.Background(), workflows.BookingWorkflowID(id), "")
	if err != nil || d.WorkflowExecutionInfo.GetSearchAttributes() == nil {
		return ""
	}
	p := d.WorkflowExecutionInfo.GetSearchAttributes().GetIndexedFields()["EncoreBookingStatus"]
	var s string
	if p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}
