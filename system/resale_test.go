package system_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// TestAFanResellsATicketThroughTheSagaAndTheMoneyBalances: over HTTP, with
// the payment sandbox and the booking saga on the embedded Temporal server.
// A fan who bought a seat lists it (a price above the cap is refused naming
// the cap; the listed ticket shows no code); one buyer holds the listing,
// a second is refused and the seller cannot withdraw it; the buyer pays.
// Then the buyer holds a new valid ticket, the seller's old one is
// transferred, the seller's card got the price less the fee back as a
// partial refund of their own payment, the reconciliation finds nothing
// amiss and the audit is clean: the buyer's charge is the seller's credit
// plus the fee.
func TestAFanResellsATicketThroughTheSagaAndTheMoneyBalances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newE2E(t)
	_, err := e.store.Pool().Exec(ctx, `UPDATE events SET resale_enabled = true, resale_max_price_bp = 10000, resale_fee_bp = 500 WHERE id = $1`, e.eventID)
	require.NoError(t, err)

	seller := e.fanWithEmail("sally", "sally@example.com")
	sold, _ := e.buy(seller, e.seat(1, 1))
	var b map[string]any
	require.Eventually(t, func() bool {
		_, b = e.call(http.MethodGet, "/v1/bookings/"+sold, seller, nil)
		ts, _ := b["tickets"].([]any)
		return len(ts) == 1
	}, 30*time.Second, 50*time.Millisecond, "the seller's ticket is issued")
	oldTicket := b["tickets"].([]any)[0].(map[string]any)["id"].(string)
	var face int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT price_at_lock FROM reservation_items WHERE reservation_id = $1`, sold).Scan(&face))

	status, p := e.call(http.MethodPost, "/v1/tickets/"+oldTicket+"/listings", seller, map[string]any{"price": map[string]any{"amount": face + 1}})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", p)
	require.Equal(t, "/problems/price-above-cap", p["type"])
	require.EqualValues(t, face, p["cap"].(map[string]any)["amount"])

	status, l := e.call(http.MethodPost, "/v1/tickets/"+oldTicket+"/listings", seller, map[string]any{"price": map[string]any{"amount": face, "currency": "EUR"}})
	require.Equal(t, http.StatusCreated, status, "%v", l)
	require.Equal(t, "ACTIVE", l["status"])
	listing := l["listing_id"].(string)
	fee := (face*500 + 5000) / 10000
	require.EqualValues(t, face-fee, l["payout"].(map[string]any)["amount"])
	status, p = e.call(http.MethodGet, "/v1/tickets/"+oldTicket+"/qr", seller, nil)
	require.Equal(t, http.StatusConflict, status, "a listed ticket shows no code: %v", p)
	require.Equal(t, "/problems/ticket-listed", p["type"])

	buyer, rival := e.fanWithEmail("bert", "bert@example.com"), e.fan("rita")
	status, ls := e.call(http.MethodGet, "/v1/events/"+e.eventID+"/listings", buyer, nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, ls["listings"], 1)
	require.NotContains(t, ls["listings"].([]any)[0], "ticket_id", "a buyer does not see the seller's ticket")

	status, h := e.call(http.MethodPost, "/v1/holds", buyer, map[string]any{"event_id": e.eventID, "listing_ids": []string{listing}})
	require.Equal(t, http.StatusCreated, status, "%v", h)
	hold := h["hold_id"].(string)
	status, p = e.call(http.MethodPost, "/v1/holds", rival, map[string]any{"event_id": e.eventID, "listing_ids": []string{listing}})
	require.Equal(t, http.StatusConflict, status, "%v", p)
	require.Equal(t, "/problems/listing-unavailable", p["type"])
	require.Equal(t, []any{listing}, p["unavailable_listing_ids"])
	status, p = e.call(http.MethodDelete, "/v1/listings/"+listing, seller, nil)
	require.Equal(t, http.StatusConflict, status, "%v", p)
	require.Equal(t, "/problems/listing-held", p["type"])

	status, co := e.call(http.MethodPost, "/v1/holds/"+hold+"/checkout", buyer, map[string]any{"payment_method": e.pay.card()})
	require.Equal(t, http.StatusOK, status, "%v", co)
	e.waitStatus(buyer, hold, vocab.BookingPaid, 30*time.Second)
	// PAID comes with the sale's confirm; the tickets move a step later.
	var bought map[string]any
	require.Eventually(t, func() bool {
		_, bought = e.call(http.MethodGet, "/v1/bookings/"+hold, buyer, nil)
		ts, _ := bought["tickets"].([]any)
		return len(ts) == 1
	}, 30*time.Second, 50*time.Millisecond, "the buyer's ticket is issued")
	newTicket := bought["tickets"].([]any)[0].(map[string]any)
	require.Equal(t, "VALID", newTicket["status"])
	require.NotEqual(t, oldTicket, newTicket["id"], "new key material: a new ticket")
	status, _ = e.call(http.MethodGet, "/v1/tickets/"+newTicket["id"].(string)+"/qr", buyer, nil)
	require.Equal(t, http.StatusOK, status)
	status, p = e.call(http.MethodGet, "/v1/tickets/"+oldTicket+"/qr", seller, nil)
	require.Equal(t, http.StatusGone, status, "%v", p)

	// The payout is the saga's last money step: wait for it.
	var mine map[string]any
	require.Eventually(t, func() bool {
		_, mine = e.call(http.MethodGet, "/v1/me/listings", seller, nil)
		pay := mine["listings"].([]any)[0].(map[string]any)["payout"].(map[string]any)
		return pay["status"] == "PAID"
	}, 30*time.Second, 100*time.Millisecond, "the seller is paid")
	got := mine["listings"].([]any)[0].(map[string]any)
	require.Equal(t, "SOLD", got["status"])
	require.EqualValues(t, face-fee, got["payout"].(map[string]any)["refunded"], "back to the seller's card: up to what they paid")
	require.EqualValues(t, 0, got["payout"].(map[string]any)["owed"])

	var refundID string
	var refunded int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT payout_refund_id, payout_refunded FROM resale_listings WHERE id = $1`, listing).Scan(&refundID, &refunded))
	require.NotEmpty(t, refundID)
	rep, err := e.reconcile(ctx, time.Hour)
	require.NoError(t, err)
	require.Empty(t, rep.Mismatches, "the payout is a refund the seller's booking expects")
	audit, err := e.store.Holds.Audit(ctx, e.eventID, time.Minute)
	require.NoError(t, err)
	require.Zero(t, audit.Violations(), audit.String())
	var charged int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT amount FROM payments WHERE reservation_id = $1 AND status = 'CAPTURED'`, hold).Scan(&charged))
	require.Equal(t, charged, refunded+fee, "the buyer's charge is the seller's credit plus the fee")

	// The organiser's report counts the seat sold once, and the resale beside it.
	report, err := (&organiser.Sales{Reader: store.NewReader(e.store.Pool())}).Report(ctx, venues.Scope{Admin: true}, e.eventID)
	require.NoError(t, err)
	require.Equal(t, 1, report.Totals.Sold)
	require.Equal(t, face, report.Totals.Revenue)
	require.Equal(t, 1, report.Totals.ResaleSold)
	require.Equal(t, face, report.Totals.ResaleVolume)
	require.Equal(t, fee, report.Totals.ResaleFees)
}
