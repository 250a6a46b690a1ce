package system_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

func TestAHotelOnlyBookingIsPaidWithAVoucherInTheConfirmation(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	prop := e.hotel(2)
	fan := e.fan("sleeper")
	id := e.holdStay(fan, prop, 10, 2)
	e.checkout(fan, id, e.pay.card()) // a Visa of its own: the shared pm_card_visa trips the card rule across tests
	b := e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	require.Equal(t, float64(2*nightPrice), b["total"].(map[string]any)["amount"])
	require.Len(t, b["vouchers"], 1)
	require.Empty(t, b["tickets"])
	voucher := b["vouchers"].([]any)[0].(map[string]any)["id"].(string)
	require.Contains(t, e.mailAbout(id), voucher, "the confirmation lists the voucher")
	for _, n := range []int{10, 11} {
		held, sold := e.nightCounters(prop, n)
		require.Equal(t, [2]int{0, 1}, [2]int{held, sold}, "night %d sold", n)
	}
	require.Equal(t, "CAPTURED", e.paymentStatus(id))
}

func TestAPackageIsPaidWithTicketsAndAVoucher(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	prop := e.hotel(2)
	fan := e.fan("package")
	id := e.holdStay(fan, prop, 20, 1, e.seat(7, 1))
	e.checkout(fan, id, e.pay.card())
	b := e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	require.Eventually(t, func() bool {
		_, b = e.call(http.MethodGet, "/v1/bookings/"+id, fan, nil)
		return len(b["tickets"].([]any)) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, b["vouchers"], 1)
	require.Equal(t, "SOLD", e.seatStatus(e.seat(7, 1)))
	held, sold := e.nightCounters(prop, 20)
	require.Equal(t, [2]int{0, 1}, [2]int{held, sold})
}

// TestAPackageWhoseNightsAreGoneAfterAuthorisationIsCompensated: between the
// authorisation and the confirm the night's held counter is taken away
// underneath the hold (a direct change to its row). The confirm sells seats
// and nights in one transaction, so it sells nothing: the booking ends
// FAILED, the authorisation is voided exactly once, no ticket or voucher is
// issued, and the seat and the night are free again.
func TestAPackageWhoseNightsAreGoneAfterAuthorisationIsCompensated(t *testing.T) {
	t.Parallel()
	e := newE2E(t, onlyEvents("payment_intent.succeeded"))
	prop := e.hotel(2)
	id, intentID := e.packageWhoseNightIsGone(e.fan("unlucky"), prop, 20, e.seat(8, 1))
	require.Eventually(t, func() bool { return e.paymentStatus(id) == "VOIDED" }, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, e.pay.intentEvents("payment_intent.canceled", intentID), "voided once")
	require.Empty(t, e.pay.refundAmounts(intentID), "nothing captured, nothing refunded")
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, id))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM vouchers WHERE reservation_id = $1`, id))
	require.Equal(t, "AVAILABLE", e.seatStatus(e.seat(8, 1)))
	held, sold := e.nightCounters(prop, 20)
	require.Equal(t, [2]int{0, 0}, [2]int{held, sold})
	flagged := e.paymentFlagged(id)
	require.NotNil(t, flagged)
	require.Contains(t, *flagged, "could not be sold")
}

// TestCancellingAStayRefundsPerTheRatesPolicy: within the property's free
// window the whole booking is refunded; past it (still before check-in) the
// first night is kept and the rest refunded. Each is one refund at the
// provider, and a retried cancel or refund step moves no more money.
func TestCancellingAStayRefundsPerTheRatesPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		freeCancelDays int
		byStaff        bool
		keep           int64
	}{
		{"within the free window everything is refunded", 2, false, 0},
		{"past the free window the first night is kept", 30, false, nightPrice},
		{"past the free window support staff refund everything", 30, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a stack of its own
			e := newE2E(t)
			prop := e.hotel(tc.freeCancelDays)
			fan := e.fan("canceller")
			id := e.holdStay(fan, prop, 20, 2, e.seat(9, 1))
			intentID := e.checkout(fan, id, e.pay.card())
			b := e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
			total := int64(b["total"].(map[string]any)["amount"].(float64))
			e.waitNotified(id)

			for range 2 {
				if tc.byStaff {
					sam := e.staff("sam", "", session.Support)
					status, c := e.call(http.MethodPost, "/v1/admin/bookings/"+id+"/refund", sam, map[string]any{"reason": "the guest is ill"})
					require.Equal(t, http.StatusOK, status, "%v", c)
					require.Equal(t, string(vocab.BookingRefunded), c["status"], "a repeated refund answers the refunded booking")
					continue
				}
				status, c := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil, "Idempotency-Key", "cancel-"+id)
				require.Equal(t, http.StatusOK, status, "%v", c)
				require.Equal(t, string(vocab.BookingRefunded), c["status"])
			}
			require.Equal(t, []int64{total - tc.keep}, e.pay.refundAmounts(intentID))
			// The refund step retried (a lost answer) is the same refund.
			// A full refund is asked for without an amount (all that is left).
			asked := total - tc.keep
			if tc.keep == 0 {
				asked = 0
			}
			r, err := system.Payments(e.cfg).RefundAmount(context.Background(), activities.StepKey(id, activities.StepKeyRefund), intentID, asked)
			require.NoError(t, err)
			require.Equal(t, total-tc.keep, r.Amount)
			require.Len(t, e.pay.refundAmounts(intentID), 1, "refunded once")
			require.Equal(t, "REFUNDED", e.paymentStatus(id))
			require.Equal(t, "AVAILABLE", e.seatStatus(e.seat(9, 1)))
			held, sold := e.nightCounters(prop, 20)
			require.Equal(t, [2]int{0, 0}, [2]int{held, sold})
			require.Equal(t, 1, e.count(`SELECT count(*) FROM vouchers WHERE reservation_id = $1 AND status = 'VOID'`, id))
			e.requireReconciled()
		})
	}
}

// TestAWalkRefundsTheNightOnceAtTheProvider: a walked guest's night is
// refunded from the booking's payment as one partial refund, and a retried
// walk, even one that lost the record of its refund, refunds nothing more.
func TestAWalkRefundsTheNightOnceAtTheProvider(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	prop := e.hotel(2)
	e.hotel(2) // the other hotel in town, where the guest is walked to
	fan := e.fan("walked")
	id := e.holdStay(fan, prop, 15, 2)
	intentID := e.checkout(fan, id, e.pay.card())
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	// PAID is the sale; the capture follows it, and only captured money
	// can be refunded.
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM payments WHERE reservation_id = $1 AND status = 'CAPTURED'`, id) == 1
	}, 30*time.Second, 50*time.Millisecond, "the payment is captured")

	walks := &hotels.Walks{Store: e.store, Mailer: system.Mailer(e.cfg, e.store), Payments: system.Payments(e.cfg),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	req := hotels.WalkRequest{PropertyID: prop, Night: today().AddDate(0, 0, 15), Rooms: 1}
	got, err := walks.Walk(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(nightPrice), got[0].Refund)
	require.NotEmpty(t, got[0].RefundID)

	_, err = walks.Walk(context.Background(), req)
	require.NoError(t, err)
	// The refund's answer was lost: the retry asks again under the walk's key.
	_, err = e.store.Pool().Exec(context.Background(), `UPDATE walks SET refund_id = NULL WHERE reservation_id = $1`, id)
	require.NoError(t, err)
	again, err := walks.Walk(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, got[0].RefundID, again[0].RefundID, "the same refund")
	require.Equal(t, []int64{nightPrice}, e.pay.refundAmounts(intentID))
	require.Equal(t, string(vocab.BookingPaid), e.waitStatus(fan, id, vocab.BookingPaid, time.Second)["status"])
	e.requireReconciled()
}

// TestRecordPackageHistories writes the package histories the replay tests
// use when ENCORE_RECORD_HISTORIES is set: a paid package cancelled past the
// hotel's free window (the partial refund), and a package whose nights were
// gone at the confirm (compensated).
func TestRecordPackageHistories(t *testing.T) {
	t.Parallel()
	if os.Getenv("ENCORE_RECORD_HISTORIES") == "" {
		t.Skip("set ENCORE_RECORD_HISTORIES=1 to re-record workflows/testdata")
	}
	e := newE2E(t, onlyEvents("payment_intent.succeeded"))
	prop := e.hotel(30)
	fan := e.fan("rec-package")
	id := e.holdStay(fan, prop, 20, 1, e.seat(10, 1))
	intentID := e.checkout(fan, id, e.pay.card())
	require.Equal(t, http.StatusOK, e.pay.deliver(e.pay.providerEvent(vocab.EventAuthorised, intentID)))
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	e.waitNotified(id)
	status, _ := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusOK, status)
	e.recordHistory("package_paid_then_cancelled_past_free_window", id)

	id2, _ := e.packageWhoseNightIsGone(e.fan("rec-package-gone"), prop, 21, e.seat(10, 2))
	e.recordHistory("package_nights_gone_compensated", id2)
}

// TestTheWalkWorkflowRelocatesRefundsAndTellsTwoGuestsOnceWhenRunAgain: the
// admin route's and encore hotel walk's path, through the walk workflow on
// the worker: both guests are moved to the other hotel, each night refunded
// once at the provider, each guest emailed at the address of their token,
// and a second run walks, refunds and tells nobody again.
func TestTheWalkWorkflowRelocatesRefundsAndTellsTwoGuestsOnceWhenRunAgain(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	prop := e.hotel(2)
	e.hotel(2) // another hotel in town with room (other tests' hotels are in town too)
	var ids, intents, emails []string
	for i, name := range []string{"walkeda", "walkedb"} {
		email := fmt.Sprintf("%s-%d@guests.example", name, i)
		fan := e.fanWithEmail(name, email)
		id := e.holdStay(fan, prop, 15, 1)
		intents = append(intents, e.checkout(fan, id, e.pay.card()))
		e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
		ids, emails = append(ids, id), append(emails, email)
	}

	svc := e.walker()
	req := hotels.WalkRequest{PropertyID: prop, Night: today().AddDate(0, 0, 15), Rooms: 2}
	walks, err := svc.Walk(ctx, req)
	require.NoError(t, err)
	require.Len(t, walks, 2)
	for _, w := range walks {
		require.Contains(t, ids, w.ReservationID.String())
		require.NotEqual(t, prop, w.ToProperty, "moved to another hotel")
		require.Equal(t, int64(nightPrice), w.Refund)
		require.NotEmpty(t, w.RefundID, "the refund was paid")
		require.True(t, w.Notified)
	}
	for i, id := range ids {
		require.Equal(t, []int64{nightPrice}, e.pay.refundAmounts(intents[i]))
		mail := e.mailAbout("walk-" + id)
		require.Contains(t, mail, "To: <"+emails[i]+">", "the walk email goes where the token said")
		require.Contains(t, mail, "has moved")
		require.Contains(t, e.mailAbout(id+"-confirmation"), "To: <"+emails[i]+">", "so does a hotel-only booking's confirmation")
	}
	desc, err := e.temporal.DescribeWorkflowExecution(ctx, workflows.WalkWorkflowID(prop, day(15)), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.WorkflowExecutionInfo.Status)

	again, err := svc.Walk(ctx, req)
	require.NoError(t, err)
	require.ElementsMatch(t, walks, again, "nobody walked, refunded or told twice")
	for i := range ids {
		require.Equal(t, []int64{nightPrice}, e.pay.refundAmounts(intents[i]))
	}
	require.Equal(t, 2, e.count(`SELECT count(*) FROM walks WHERE from_property = $1`, prop))
	e.requireReconciled()

	_, err = svc.Walk(ctx, hotels.WalkRequest{PropertyID: prop, Night: req.Night, Rooms: 0})
	var invalid *store.InvalidError
	require.ErrorAs(t, err, &invalid, "a bad request starts no workflow")
	require.Equal(t, "rooms", invalid.Field)
}

// TestAPackageWhoseHotelCannotHonourThePaidNightIsCancelledWholeAndRefundedOnce:
// the hotel part fails after payment (the night is walked and no other hotel
// in town has a room), so the package's other part goes too: the walk
// workflow cancels the booking through its own saga, which revokes the
// tickets, gives the seats and the nights back and refunds the whole
// payment once; the guest is told why. Running the walk again changes
// nothing.
func TestAPackageWhoseHotelCannotHonourThePaidNightIsCancelledWholeAndRefundedOnce(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	prop := "prp_" + testenv.RandomSuffix()
	require.NoError(t, e.store.Hotels.CreateProperty(ctx, store.PropertySpec{ID: prop, Name: "The only hotel", City: "Lonely " + prop,
		Currency: "EUR", FreeCancelDays: 2, RoomTypes: []store.RoomTypeSpec{{ID: "double", Name: "Double", MaxGuests: 2,
			Allotment: 1, Price: nightPrice}}}, today(), 30))
	email := "package-" + e.eventID + "@guests.example"
	fan := e.fanWithEmail("packaged", email)
	seat := e.seat(3, 3)
	id := e.holdStay(fan, prop, 15, 1, seat)
	intentID := e.checkout(fan, id, e.pay.card())
	paid := e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	total := int64(paid["total"].(map[string]any)["amount"].(float64))
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1 AND status = 'VALID'`, id) == 1
	}, 20*time.Second, 50*time.Millisecond, "the ticket is issued")

	svc := e.walker()
	req := hotels.WalkRequest{PropertyID: prop, Night: today().AddDate(0, 0, 15), Rooms: 1}
	walks, err := svc.Walk(ctx, req)
	require.NoError(t, err)
	require.Len(t, walks, 1)
	require.Equal(t, store.WalkCancelled, walks[0].Outcome)
	require.Empty(t, walks[0].ToProperty)
	require.True(t, walks[0].Notified)

	got := e.waitStatus(fan, id, vocab.BookingRefunded, 30*time.Second)
	require.Equal(t, string(vocab.BookingRefunded), got["status"])
	require.Equal(t, []int64{total}, e.pay.refundAmounts(intentID), "the whole package, refunded once")
	require.Zero(t, e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1 AND status = 'VALID'`, id), "the ticket is revoked")
	require.Equal(t, "AVAILABLE", e.seatStatus(seat), "the seat is back on sale")
	held, sold := e.nightCounters(prop, 15)
	require.Zero(t, held+sold, "the night is back")
	require.Contains(t, e.mailAbout(id+"-cancellation"), "no other hotel in town has a room")

	again, err := svc.Walk(ctx, req)
	require.NoError(t, err)
	require.Equal(t, walks, again)
	require.Equal(t, []int64{total}, e.pay.refundAmounts(intentID))
	e.requireReconciled()
	audit, err := e.store.Holds.Audit(ctx, e.eventID, time.Minute)
	require.NoError(t, err)
	require.Zero(t, audit.Violations(), audit.String())
}

// packageWhoseNightIsGone books a package of seat and one night at
// property, checkin days from today, whose held night is taken away between
// the authorisation and the confirm (the stack must run with onlyEvents, so
// the test delivers the authorisation), and waits until the booking has
// FAILED. It returns the booking and its payment intent.
func (e *e2e) packageWhoseNightIsGone(fan, property string, checkin int, seat string) (string, string) {
	e.t.Helper()
	id := e.holdStay(fan, property, checkin, 1, seat)
	intentID := e.checkout(fan, id, e.pay.card())
	// The night's held counter is taken away underneath the hold (a direct
	// change to its row).
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE room_nights SET held = held - 1
		WHERE property_id = $1 AND room_type = 'double' AND night = $2`, property, today().AddDate(0, 0, checkin))
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, e.pay.deliver(e.pay.providerEvent(vocab.EventAuthorised, intentID)))
	e.waitStatus(fan, id, vocab.BookingFailed, 30*time.Second)
	return id, intentID
}

// walker is the booking service as the walk route and encore hotel walk use
// it: walks go through the walk workflow on e's worker.
func (e *e2e) walker() *booking.Service {
	return &booking.Service{Store: e.store, Temporal: e.temporal, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}
