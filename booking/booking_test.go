package booking_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// The booking status is the reservation's, refined by its payment, a
// reconciliation flag and the latest dispute (none where dispute is empty).
func TestTheBookingStatusIsTheReservationRefinedByItsPaymentAndDispute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		reservation vocab.ReservationStatus
		payment     vocab.PaymentStatus
		flagged     string
		dispute     vocab.DisputeStatus
		want        vocab.BookingStatus
	}{
		{"a fresh hold is pending", vocab.ReservationPending, "", "", "", vocab.BookingPendingPayment},
		{"a hold whose card needs 3-D Secure is still pending", vocab.ReservationPending, vocab.PaymentRequiresAction, "", "", vocab.BookingPendingPayment},
		{"an authorised hold is authorised", vocab.ReservationPending, vocab.PaymentAuthorised, "", "", vocab.BookingAuthorised},
		{"a paid reservation is paid", vocab.ReservationPaid, vocab.PaymentCaptured, "", "", vocab.BookingPaid},
		{"an expired hold is expired", vocab.ReservationExpired, vocab.PaymentVoided, "", "", vocab.BookingExpired},
		{"a released hold is cancelled", vocab.ReservationCancelled, "", "", "", vocab.BookingCancelled},
		{"a refunded booking is refunded", vocab.ReservationCancelled, vocab.PaymentRefunded, "", "", vocab.BookingRefunded},
		{"a failed payment fails the booking", vocab.ReservationCancelled, vocab.PaymentFailed, "", "", vocab.BookingFailed},
		{"a flagged cancellation is a failure", vocab.ReservationCancelled, vocab.PaymentVoided, "amount mismatch", "", vocab.BookingFailed},

		{"an open dispute makes a paid booking disputed", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeNeedsResponse, vocab.BookingDisputed},
		{"evidence under review is still disputed", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeUnderReview, vocab.BookingDisputed},
		{"an inquiry is disputed too", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeWarningNeedsResponse, vocab.BookingDisputed},
		{"a won dispute leaves the booking paid", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeWon, vocab.BookingPaid},
		{"a closed inquiry leaves the booking paid", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeWarningClosed, vocab.BookingPaid},
		{"a lost dispute charges the booking back", vocab.ReservationPaid, vocab.PaymentCaptured, "", vocab.DisputeLost, vocab.BookingChargedBack},
		{"a lost dispute of a refunded booking is a chargeback too", vocab.ReservationCancelled, vocab.PaymentRefunded, "", vocab.DisputeLost, vocab.BookingChargedBack},
		{"an open dispute of a refunded booking leaves it refunded", vocab.ReservationCancelled, vocab.PaymentRefunded, "", vocab.DisputeNeedsResponse, vocab.BookingRefunded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := store.BookingView{Hold: store.Hold{Status: tc.reservation}, PaymentStatus: tc.payment, Flagged: tc.flagged}
			if tc.dispute != "" {
				v.Dispute = &store.Dispute{Status: tc.dispute}
			}
			require.Equal(t, tc.want, booking.Status(v))
		})
	}
}

func TestOnlyARefundUnderEncoresOwnKeysIsEncores(t *testing.T) {
	t.Parallel()
	const bookingID = "7d3f7a2e-8a51-4c1f-9d0e-2a6b5c4d3e21"
	for _, tc := range []struct {
		name, key string
		own       bool
	}{
		{"the saga's refund", bookingID + ":refund", true},
		{"a walk's refund of a night", bookingID + ":walk-12", true},
		{"reconciliation's refund of the intent", "reconcile:orphan_capture:pi_1", true},
		{"a refund without a key", "", false},
		{"a dashboard refund", "8f14e45f-ceea-467f-a0e6-000000000000", false},
		{"another booking's refund", "00000000-0000-0000-0000-000000000000:refund", false},
		{"reconciliation's refund of another intent", "reconcile:orphan_capture:pi_2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := payments.WebhookEvent{Type: vocab.EventRefunded, Object: "charge", IntentID: "pi_1", IdempotencyKey: tc.key}
			require.Equal(t, tc.own, booking.OwnRefund(ev, bookingID))
		})
	}
}

func TestTheSagaHearsOnlyOfEventsItMustActOn(t *testing.T) {
	t.Parallel()
	intent := func(typ vocab.ProviderEvent) payments.WebhookEvent {
		return payments.WebhookEvent{Type: typ, Object: "payment_intent"}
	}
	for _, tc := range []struct {
		name     string
		ev       payments.WebhookEvent
		recorded vocab.PaymentStatus
		want     bool
	}{
		{"an authorisation", intent(vocab.EventAuthorised), vocab.PaymentPending, true},
		{"a failed payment", intent(vocab.EventFailed), vocab.PaymentRequiresAction, true},
		{"the success of the saga's own capture", intent(vocab.EventSucceeded), vocab.PaymentCaptured, false},
		{"a success after the saga refunded", intent(vocab.EventSucceeded), vocab.PaymentRefunded, false},
		{"money the saga did not ask for", intent(vocab.EventSucceeded), vocab.PaymentAuthorised, true},
		{"the saga's own capture overtaking its record", payments.WebhookEvent{Type: vocab.EventSucceeded, Object: "payment_intent",
			CapturedBySaga: true}, vocab.PaymentAuthorised, false},
		{"the cancellation by the saga's own void", intent(vocab.EventCanceled), vocab.PaymentVoided, false},
		{"a refund", payments.WebhookEvent{Type: vocab.EventRefunded, Object: "charge"}, vocab.PaymentRefunded, false},
		{"a dispute", payments.WebhookEvent{Type: vocab.EventDisputeCreated, Object: "dispute"}, vocab.PaymentCaptured, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, booking.SagaActsOn(tc.ev, tc.recorded))
		})
	}
}

func TestOnlyTheEchoOfTheSagasOwnCaptureGoesUnstored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ev   payments.WebhookEvent
		echo bool
	}{
		{"the success of the saga's own capture", payments.WebhookEvent{Type: vocab.EventSucceeded, Object: "payment_intent",
			CapturedBySaga: true}, true},
		{"a success the saga did not ask for", payments.WebhookEvent{Type: vocab.EventSucceeded, Object: "payment_intent"}, false},
		{"an authorisation, which moves the saga", payments.WebhookEvent{Type: vocab.EventAuthorised, Object: "payment_intent",
			CapturedBySaga: true}, false},
		{"a refund of a captured charge", payments.WebhookEvent{Type: vocab.EventRefunded, Object: "charge", CapturedBySaga: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.echo, booking.EchoOfOwnCapture(tc.ev))
		})
	}
}

func TestEveryBookingStatusIsReachable(t *testing.T) {
	t.Parallel()
	seen := map[vocab.BookingStatus]bool{}
	for _, r := range vocab.ReservationStatuses {
		for _, p := range append(vocab.PaymentStatuses, "") {
			for _, flagged := range []string{"", "flag"} {
				seen[booking.Status(store.BookingView{Hold: store.Hold{Status: r}, PaymentStatus: p, Flagged: flagged})] = true
			}
		}
	}
	for _, r := range vocab.ReservationStatuses {
		for _, d := range vocab.DisputeStatuses {
			seen[booking.Status(store.BookingView{Hold: store.Hold{Status: r}, PaymentStatus: vocab.PaymentCaptured,
				Dispute: &store.Dispute{Status: d}})] = true
		}
	}
	for _, s := range vocab.BookingStatuses {
		require.True(t, seen[s], "no reservation, payment and dispute give %s", s)
	}
	require.Len(t, seen, len(vocab.BookingStatuses), "Status gives only statuses of the full set")
}
