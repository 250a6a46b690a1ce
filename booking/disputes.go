package booking

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// Disputes and refunds made outside Encore reach a booking as provider
// events, maybe months after its workflow ended: the database is their
// record, not the workflow. ReceiveWebhook applies each in one transaction
// (store.ApplyDispute, store.ApplyOutsideRefund) before it answers, so a
// failure makes the provider redeliver, and applying one twice, or events
// out of order, converges on the same booking.
//
// While a dispute is open the booking is DISPUTED and its tickets stay
// valid: most disputes are won, and the fan may still be at the door. A lost
// one makes it CHARGED_BACK and revokes the tickets (the gate's next delta
// carries them); the seats stay taken and the payment stays captured, since
// the money went back through the fan's bank, not through a refund of
// Encore's, and reconciliation must not refund it again. A won one makes it
// PAID again. A refund made in the provider's dashboard that refunds the
// charge in full ends the booking as Encore's own refund would: REFUNDED,
// tickets revoked, seats back on sale. A partial one is recorded for
// support and the booking stays PAID.

// DisputeView is a booking's dispute as the fan and support see it.
type DisputeView struct {
	ID     string              `json:"id"`
	Status vocab.DisputeStatus `json:"status"`
	Reason string              `json:"reason"`
	Amount money.Money         `json:"amount"`
}

// OwnRefund reports whether a charge.refunded event is of a refund Encore
// made itself: the API request behind it carried one of Encore's provider
// keys for this booking (the saga's refund, a walk's refund of a night, all
// "<booking>:...") or reconciliation's refund of the intent. Stripe names
// the request's Idempotency-Key in every event the request caused.
func OwnRefund(ev payments.WebhookEvent, bookingID string) bool {
	k := ev.IdempotencyKey
	if k == "" {
		return false
	}
	return strings.HasPrefix(k, bookingID+":") ||
		k == (activities.Repair{Kind: vocab.RepairOrphanCapture, IntentID: ev.IntentID}).StepKey()
}

// applyMoneyEvent records a dispute or an outside refund for the booking the
// database names for the event's payment; other events pass untouched.
func (s *Service) applyMoneyEvent(ctx context.Context, ev payments.WebhookEvent, bookingID string) error {
	id, err := uuid.Parse(bookingID)
	if err != nil {
		return err
	}
	switch {
	case ev.Dispute != nil:
		d := ev.Dispute
		if !slices.Contains(vocab.DisputeStatuses, d.Status) {
			// A status this build does not know: stored with the event,
			// and acknowledged, so the provider does not retry it forever.
			s.Log.Error("ALERT: dispute with an unknown status", "booking", bookingID, "dispute", d.ID, "status", d.Status)
			return nil
		}
		out, err := s.Store.Bookings.ApplyDispute(ctx, store.DisputeEvent{ReservationID: id, IntentID: ev.IntentID,
			ChargeID: d.ChargeID, DisputeID: d.ID, Status: d.Status, Reason: d.Reason, Amount: d.Amount,
			EventID: ev.ID, EventAt: ev.Created})
		if err != nil {
			return err
		}
		if out.Changed {
			s.Log.Warn("payment dispute", "booking", bookingID, "dispute", d.ID, "status", out.Dispute.Status,
				"reason", d.Reason, "revoked_tickets", len(out.Revoked))
			s.tellSaga(ctx, id)
		}
	case ev.Type == vocab.EventRefunded && ev.Charge != nil:
		if OwnRefund(ev, bookingID) {
			return nil
		}
		ch := ev.Charge
		out, err := s.Store.Bookings.ApplyOutsideRefund(ctx, store.OutsideRefundEvent{ReservationID: id, IntentID: ev.IntentID,
			ChargeID: ch.ID, EventID: ev.ID, AmountRefunded: ch.AmountRefunded, AmountCaptured: ch.AmountCaptured,
			Currency: ch.Currency, Full: ch.Refunded})
		if err != nil {
			return err
		}
		if !out.Duplicate {
			s.tellSaga(ctx, id)
			s.Log.Warn("refund made outside Encore", "booking", bookingID, "charge", ch.ID, "refunded", ch.AmountRefunded,
				"captured", ch.AmountCaptured, "full", ch.Refunded, "ended", out.Ended.ReservationID != uuid.Nil,
				"revoked_tickets", len(out.Revoked))
		}
	}
	return nil
}

// tellSaga shows the booking's status as the database now has it in its
// workflow's EncoreBookingStatus, when the workflow still runs (a paid
// booking's stays open until the event's cancellation deadline), so support
// finds a disputed or charged-back booking in the Temporal UI as it is. The
// database is the record: a workflow that has ended, or a signal that does
// not go through, changes nothing else.
func (s *Service) tellSaga(ctx context.Context, id uuid.UUID) {
	v, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		s.Log.Warn("booking status not shown in its workflow", "booking", id, "error", err)
		return
	}
	err = s.Temporal.SignalWorkflow(ctx, workflows.BookingWorkflowID(id.String()), "", workflows.SignalSettledOutside,
		workflows.SettledOutside{Status: view(v).Status})
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		s.Log.Warn("booking status not shown in its workflow", "booking", id, "error", err)
	}
}

// settledOutside reports whether the booking's money was settled outside
// its saga (a dispute open or lost, a refund in the provider's dashboard):
// the saga must not be asked to refund it.
func settledOutside(v store.BookingView) bool {
	return v.RefundedOutside || (v.Dispute != nil && (v.Dispute.Status == vocab.DisputeLost || !v.Dispute.Status.Closed()))
}
