package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// supportSuite holds the saga's tests as support steers it: staff cancels,
// stuck captures, retry-now, refund-and-close and the UI's cancellation.
type supportSuite struct{ sagaSuite }

func TestSupportSteering(t *testing.T) { suite.Run(t, new(supportSuite)) }

// An event's cancellation pages the bookings the database calls PAID; one
// whose confirm has committed may still be capturing. A staff cancel taken
// then used to be answered PAID with nothing refunded: it is refused as
// busy, and the job's retry, once the sale has landed, refunds it.
func (s *supportSuite) TestAStaffCancelWhileTheSaleIsBeingCapturedIsRefusedAsBusyThenRefundsOnRetry() {
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.CaptureResult{Status: vocab.IntentSucceeded}, nil)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	during := s.staffCancelAfter(2*time.Minute + 10*time.Second)
	retry := s.staffCancelAfter(3 * time.Minute)
	s.start()
	s.True(during.rejected, "a cancel during the capture is refused, not dropped: %+v", during)
	s.Equal(workflows.ErrTypeBusy, appErrType(during.err))
	s.NoError(retry.err)
	s.Equal(vocab.BookingRefunded, retry.result)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
}

// Tickets are written only for a PAID booking: when the database refuses
// them because the sale was undone after its capture, the booking neither
// fails nor confirms; its money goes back and staff are told.
func (s *supportSuite) TestTicketsRefusedForABookingNoLongerPaidRefundAndFlagInsteadOfConfirming() {
	s.env.OnActivity(workflows.ActivityIssueTickets, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("store: the booking is not paid", activities.ErrTypeNotPaid, nil))
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingRefunded, r.Status)
	s.Empty(r.TicketIDs)
	s.NotEmpty(r.Flagged)
	s.Equal(1, s.calls[workflows.ActivityRefund])
	s.Zero(s.calls[workflows.ActivityNotify], "no confirmation for a booking without tickets")
	s.Zero(s.calls[workflows.ActivityVoid], "the refund settled the payment")
}

// A capture failing for minutes used to be a local activity retried inside
// the workflow task, invisible as a pending activity. Its first attempt is
// still local (the cheap common case); after a failure it continues as a
// regular activity with the same arguments, so the same step key, and the
// server's retries (attempts, last failure, next retry) show in the UI.
func (s *supportSuite) TestACaptureFailingTwiceContinuesAsARegularActivityUnderTheSameStepKey() {
	seen := s.failingCapture(2, 0)
	var regular []string
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		regular = append(regular, info.ActivityType.Name)
	})
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	key := activities.StepKey(bookingID, activities.StepKeyCapture)
	s.Equal([]providerAttempt{{true, 1, key}, {false, 1, key}, {false, 2, key}}, *seen,
		"one local attempt, then the regular activity's first and second attempts")
	s.Equal([]string{workflows.ActivityCapture, workflows.ActivityCapture}, regular,
		"only the failing step ran as a regular activity, once per attempt")
}

// Support filters by where a booking is and whether it needs them: the
// database says PAID once the sale is confirmed, so the list says so before
// the capture (which retries) succeeds; a capture failing past a few
// attempts raises EncoreAttention, and its success clears it.
func (s *supportSuite) TestAFailingCaptureRaisesAttentionWhileTheListAlreadySaysPaidAsTheDatabaseDoes() {
	s.failingCapture(0, 3*time.Minute) // from 2 minutes in, it fails for a minute
	seen := s.upserts()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	paid := indexOf(*seen, workflows.SearchAttrStatus+"=PAID")
	capturing := indexOf(*seen, workflows.SearchAttrStep+"="+string(vocab.StepCapturing))
	raised := indexOf(*seen, workflows.SearchAttrAttention+"=true")
	cleared := indexOf(*seen, workflows.SearchAttrAttention+"=false")
	s.GreaterOrEqual(paid, 0, "%v", *seen)
	s.Less(paid, capturing, "PAID as the confirm commits, before the capture: %v", *seen)
	s.Less(capturing, raised, "%v", *seen)
	s.Less(raised, cleared, "%v", *seen)
	s.Equal(workflows.SearchAttrStep+"="+string(vocab.StepDone), (*seen)[len(*seen)-1])
}

// Without retry-now the capture waits out its backoff after the provider
// recovered (the attempt at 3m31.5s); retry-now at 3m10s asks at once.
func (s *supportSuite) TestRetryNowSkipsTheBackoffOfAStuckCapture() {
	at, retry := s.captureSucceededAt(3*time.Minute+5*time.Second, 3*time.Minute+10*time.Second)
	s.True(retry.done)
	s.NoError(retry.err)
	s.Equal(3*time.Minute+10*time.Second, at, "captured the moment support asked")
	s.Len(s.staffSteps, 1, "who asked is audited")
	s.Equal("booking.retry-now", s.staffSteps[0].Action)
}

func (s *supportSuite) TestWithoutRetryNowAStuckCaptureWaitsOutItsBackoff() {
	at, _ := s.captureSucceededAt(3*time.Minute+5*time.Second, 0)
	s.Greater(at, 3*time.Minute+30*time.Second)
}

func (s *supportSuite) TestRetryNowWithNothingPendingIsRefused() {
	retry := s.staffUpdateAfter(workflows.UpdateRetryNow, 90*time.Second)
	s.start()
	s.True(retry.done)
	s.Equal(workflows.ErrTypeNothingToRetry, appErrType(retry.err))
}

// A refund during a stuck capture used to be accepted and answered PAID,
// refunding nothing. refund-and-close stops the capture, undoes the sale,
// gives the money back under the refund step key, audits and tells the fan.
func (s *supportSuite) TestRefundAndCloseDuringAStuckCaptureRefundsAndEndsRefunded() {
	s.failingCapture(0, 24*time.Hour)
	closed := s.staffUpdateAfter(workflows.UpdateRefundAndClose, 2*time.Minute+30*time.Second)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.True(closed.done)
	s.NoError(closed.err)
	r := s.result()
	s.Equal(vocab.BookingRefunded, r.Status)
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
	s.Zero(s.calls[workflows.ActivityVoid], "the refund settled the payment")
	s.Zero(s.calls[workflows.ActivityIssueTickets])
	s.Require().Len(s.staffSteps, 1)
	s.Equal(activities.StaffStep{BookingID: bookingID, EventID: "evt", Staff: "olga", Reason: "provider back up",
		Action: "booking.refund-and-close", Outcome: vocab.BookingRefunded}, s.staffSteps[0])
}

// A capture that never went through leaves nothing to refund: the refund
// step voids the authorisation, and the booking's page says CANCELLED
// (payment VOIDED). The saga ended REFUNDED all the same, so the UI's
// EncoreBookingStatus and the page disagreed; it now ends as the database
// says.
func (s *supportSuite) TestRefundAndCloseOfACaptureThatNeverWentThroughEndsCancelledAsTheBookingsPageSays() {
	s.failingCapture(0, 24*time.Hour)
	s.env.OnActivity(workflows.ActivitySettledStatus, mock.Anything, mock.Anything).Return(vocab.BookingCancelled, nil)
	seen := s.upserts()
	closed := s.staffUpdateAfter(workflows.UpdateRefundAndClose, 2*time.Minute+30*time.Second)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(closed.err)
	s.Equal(vocab.BookingCancelled, s.result().Status)
	s.EqualValues(vocab.BookingCancelled, closed.result, "the Update answers what the page says")
	s.Equal(workflows.SearchAttrStatus+"=CANCELLED", lastOf(*seen, workflows.SearchAttrStatus+"="))
	s.Require().Len(s.staffSteps, 1)
	s.Equal(vocab.BookingCancelled, s.staffSteps[0].Outcome)
}

func (s *supportSuite) TestRefundAndCloseOfAPaidBookingRefundsAndEndsRefunded() {
	closed := s.staffUpdateAfter(workflows.UpdateRefundAndClose, time.Hour)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(closed.err)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityRefund])
	s.Equal(1, s.calls[workflows.ActivityRecordStaffStep])
}

// "Request Cancellation" in the UI used to close a booking awaiting 3-D
// Secure with its seats held and its authorisation left: the cancelled
// workflow releases the hold and voids the payment before it ends.
func (s *supportSuite) TestACancelledWorkflowReleasesTheHoldAndVoidsThePayment() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "http://challenge"}, nil)
	s.checkoutAfter(time.Minute, "pm_card_threeDSecure2Required")
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, 3*time.Minute)
	s.start()
	s.True(s.env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	s.ErrorAs(s.env.GetWorkflowError(), &canceled)
	s.Equal(1, s.calls[workflows.ActivityReleaseHold])
	s.Equal(1, s.calls[workflows.ActivityVoid])
	s.Zero(s.calls[workflows.ActivityConfirmSale])
}

func (s *supportSuite) TestASupportUpdateThatDoesNotSayWhoSentItIsRefused() {
	anonymous := updateAfter[any](s.env, workflows.UpdateRefundAndClose, time.Minute, workflows.StaffCancelRequest{Reason: "no name"})
	s.start()
	s.Equal(workflows.ErrTypeStaffRequired, appErrType(anonymous.err))
	s.Equal(vocab.BookingExpired, s.result().Status)
}

// A staff-cancel sent from the Temporal UI used to refund with no audit
// record and no e-mail; the saga now writes both.
func (s *supportSuite) TestAStaffCancelFromTheUIIsAuditedByTheSaga() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	ui := s.staffCancelAfter(time.Hour)
	s.start()
	s.NoError(ui.err)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Require().Len(s.staffSteps, 1)
	s.Equal("booking.staff-cancel", s.staffSteps[0].Action)
	s.Equal(vocab.BookingRefunded, s.staffSteps[0].Outcome)
}

// Audited once told the saga that its sender wrote the audit record, and
// anyone able to send an Update from the UI could set it to refund with no
// record and no e-mail. The saga audits whatever the request claims.
func (s *supportSuite) TestAStaffCancelClaimingItsSenderAuditsIsAuditedByTheSagaAnyway() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	cancel := updateAfter[vocab.BookingStatus](s.env, workflows.UpdateStaffCancel, time.Hour,
		workflows.StaffCancelRequest{Staff: "mallory", Reason: "quietly", Audited: true})
	s.start()
	s.NoError(cancel.err)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Require().Len(s.staffSteps, 1)
	s.Equal(activities.StaffStep{BookingID: bookingID, EventID: "evt", Staff: "mallory", Reason: "quietly",
		Action: "booking.staff-cancel", Outcome: vocab.BookingRefunded}, s.staffSteps[0])
}

// An anonymous staff-cancel is refused before it writes history: the audit
// record needs its actor.
func (s *supportSuite) TestAStaffCancelThatDoesNotSayWhoSentItIsRefused() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	anonymous := updateAfter[vocab.BookingStatus](s.env, workflows.UpdateStaffCancel, time.Hour,
		workflows.StaffCancelRequest{Reason: "no name", Audited: true})
	s.start()
	s.Equal(workflows.ErrTypeStaffRequired, appErrType(anonymous.err))
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Empty(s.staffSteps)
}

// A dispute or a dashboard refund is settled outside the saga, maybe long
// after its sale: the database records it, and the running booking only
// shows it in the list's status, for support. A status it does not know of
// (a forged signal) is not shown, and the saga's own outcome is unmoved.
func (s *supportSuite) TestAStatusSettledOutsideTheSagaShowsInTheListAndChangesNothingElse() {
	seen := s.upserts()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	for i, st := range []vocab.BookingStatus{vocab.BookingDisputed, vocab.BookingExpired, vocab.BookingChargedBack} {
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(workflows.SignalSettledOutside, workflows.SettledOutside{Status: st})
		}, time.Duration(i+1)*time.Hour)
	}
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status, "the saga's outcome is the sale")
	paid := indexOf(*seen, "EncoreBookingStatus=PAID")
	disputed := indexOf(*seen, "EncoreBookingStatus=DISPUTED")
	charged := indexOf(*seen, "EncoreBookingStatus=CHARGED_BACK")
	s.Require().True(paid >= 0 && disputed > paid && charged > disputed, "%v", *seen)
	s.Equal(-1, indexOf(*seen, "EncoreBookingStatus=EXPIRED"), "an unknown settlement is not shown")
}

// The provider's event can overtake the checkout's own answer: the saga
// sells (confirm, capture) while the checkout Update still waits for its
// authorisation call. When that answer lands mid-capture, the checkout
// used to set the saga's step back to awaiting payment, so the sale no
// longer read as selling: an event cancellation's staff cancel taken then
// was accepted as a release of a pending hold, answered PAID once the
// capture landed, and refunded nothing (every retry of the job's Update ID
// got the same answer, and the event ended with a PAID booking holding a
// valid ticket). It is refused as busy, as during any capture, and the
// job's retry refunds.
func (s *supportSuite) TestAStaffCancelDuringACaptureThatOvertookTheCheckoutAnswerIsRefusedAsBusyThenRefunds() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).After(time.Minute).
		Return(activities.CaptureResult{Status: vocab.IntentSucceeded}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	// The webhook overtakes the checkout's answer (due at 1m30s); the
	// capture runs from 1m10s to 2m10s.
	s.paymentAfter(time.Minute+10*time.Second, vocab.EventAuthorised, total, "evt_1")
	during := s.staffCancelAfter(time.Minute + 45*time.Second)
	again := s.checkoutAfter(time.Minute+50*time.Second, "pm_card_other")
	retry := s.staffCancelAfter(3 * time.Minute)
	s.start()
	s.NoError(co.err)
	s.True(during.rejected, "a staff cancel during the capture is refused, not taken as a release: %+v", during)
	s.Equal(workflows.ErrTypeBusy, appErrType(during.err))
	s.True(again.rejected, "no second checkout starts during the capture: %+v", again)
	s.NoError(retry.err)
	s.Equal(vocab.BookingRefunded, retry.result)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
}

// The same when the checkout's answer is a failure: the capture the
// overtaking event started keeps its step, so the fan's next checkout is
// refused as busy instead of authorising again against the intent being
// captured, and a cancel still waits for the sale to settle.
func (s *supportSuite) TestACheckoutFailingAfterItsEventStartedTheSaleLeavesTheCaptureBusy() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{}, temporal.NewNonRetryableApplicationError("the answer was lost", activities.ErrTypeRejected, nil))
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).After(time.Minute).
		Return(activities.CaptureResult{Status: vocab.IntentSucceeded}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(time.Minute+10*time.Second, vocab.EventAuthorised, total, "evt_1")
	again := s.checkoutAfter(time.Minute+45*time.Second, "pm_card_other")
	during := s.staffCancelAfter(time.Minute + 50*time.Second)
	s.start()
	s.Equal(workflows.ErrTypeUnavailable, appErrType(co.err))
	s.True(again.rejected, "no second checkout starts during the capture: %+v", again)
	s.Equal(workflows.ErrTypeBusy, appErrType(again.err))
	s.True(during.rejected, "a staff cancel during the capture is refused: %+v", during)
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityFraudCheck], "one checkout ran")
	s.Zero(s.calls[workflows.ActivityCancelSale])
	s.Zero(s.calls[workflows.ActivityRefund])
}

// A staff cancel accepted while the hold reads pending waits for the hold
// to end, and the sale can land instead: here the provider's event, run
// again after a lost task, finds the booking already sold and carries the
// sale on while the cancel waits. The cancel used to answer PAID and
// refund nothing (and an event cancellation's job, retrying under the same
// Update ID, got that answer again until it gave the booking up as failed):
// a staff cancel ends with the sale cancelled and refunded.
func (s *supportSuite) TestAStaffCancelOvertakenByTheSaleItWaitedOnCancelsAndRefundsTheSale() {
	start := s.env.Now()
	hold := activities.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
		ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).Return(hold, nil).Once()
	paid := hold
	paid.Status = vocab.BookingPaid
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).After(20*time.Second).Return(paid, nil)
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(time.Minute+40*time.Second, vocab.EventSucceeded, total, "evt_1")
	during := s.staffCancelAfter(time.Minute + 50*time.Second)
	s.start()
	s.NoError(during.err)
	s.False(during.rejected, "accepted while the hold read pending")
	s.Equal(vocab.BookingRefunded, during.result, "the staff cancel refunds the sale that overtook it")
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
}
