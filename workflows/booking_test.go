package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

const bookingID = "0b9c4c53-0000-4000-8000-000000000001"

var total = money.Money{Amount: 19000, Currency: "EUR"}

type bookingSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// calls counts activity executions by name.
	calls map[string]int
	// startedAt is the test clock's start.
	startedAt time.Time
	// staffSteps are the support actions audited.
	staffSteps []activities.StaffStep
}

func TestBookingWorkflow(t *testing.T) { suite.Run(t, new(bookingSuite)) }

// SetupTest registers every activity under its name with a default behaviour
// (the happy path); tests override what they need with OnActivity.
func (s *bookingSuite) SetupTest() {
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.env = s.NewTestWorkflowEnvironment()
	s.calls = map[string]int{}
	s.staffSteps = nil
	start := s.env.Now()
	s.startedAt = start
	reg := func(name string, fn any) {
		s.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	count := func(name string) { s.calls[name]++ }
	reg(workflows.ActivityLoadBooking, func(ctx context.Context, id string) (activities.HoldInfo, error) {
		count(workflows.ActivityLoadBooking)
		return activities.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
			ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}, nil
	})
	reg(workflows.ActivityExpireHold, func(ctx context.Context, id string) (vocab.BookingStatus, error) {
		count(workflows.ActivityExpireHold)
		return vocab.BookingExpired, nil
	})
	reg(workflows.ActivityReleaseHold, func(ctx context.Context, id string) (vocab.BookingStatus, error) {
		count(workflows.ActivityReleaseHold)
		return vocab.BookingCancelled, nil
	})
	reg(workflows.ActivityExtendHold, func(ctx context.Context, id string, d time.Duration) (time.Time, error) {
		count(workflows.ActivityExtendHold)
		return start.Add(10*time.Minute + d), nil
	})
	reg(workflows.ActivityFraudCheck, func(ctx context.Context, in activities.FraudInput) (activities.FraudResult, error) {
		count(workflows.ActivityFraudCheck)
		return activities.FraudResult{Decision: vocab.FraudAllow}, nil
	})
	reg(workflows.ActivityAuthorise, func(ctx context.Context, in activities.AuthoriseInput) (activities.AuthoriseResult, error) {
		count(workflows.ActivityAuthorise)
		return activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "pi_1_secret", Status: vocab.IntentRequiresCapture}, nil
	})
	reg(workflows.ActivityConfirmSale, func(ctx context.Context, id string) (bool, error) {
		count(workflows.ActivityConfirmSale)
		return true, nil
	})
	reg(workflows.ActivityCapture, func(ctx context.Context, id, intent string) (activities.CaptureResult, error) {
		count(workflows.ActivityCapture)
		return activities.CaptureResult{Status: vocab.IntentSucceeded}, nil
	})
	for _, name := range []string{workflows.ActivityVoid, workflows.ActivityRefund} {
		reg(name, func(ctx context.Context, id, intent string) error {
			count(name)
			return nil
		})
	}
	reg(workflows.ActivityCancelSale, func(ctx context.Context, id string) error {
		count(workflows.ActivityCancelSale)
		return nil
	})
	reg(workflows.ActivityIssueTickets, func(ctx context.Context, id string) ([]string, error) {
		count(workflows.ActivityIssueTickets)
		return []string{"tkt_a", "tkt_b"}, nil
	})
	reg(workflows.ActivityNotify, func(ctx context.Context, id, kind string) error {
		count(workflows.ActivityNotify)
		return nil
	})
	reg(workflows.ActivityFlagPayment, func(ctx context.Context, id, reason string) error {
		count(workflows.ActivityFlagPayment)
		return nil
	})
	reg(workflows.ActivityRecordStaffStep, func(ctx context.Context, in activities.StaffStep) error {
		count(workflows.ActivityRecordStaffStep)
		s.staffSteps = append(s.staffSteps, in)
		return nil
	})
}

func (s *bookingSuite) start(in ...workflows.BookingInput) {
	input := workflows.BookingInput{ReservationID: bookingID, EventID: "evt", UserID: "asha", LateEventGrace: time.Minute}
	if len(in) > 0 {
		input = in[0]
	}
	s.env.ExecuteWorkflow(workflows.Booking, input)
}

// checkout sends the checkout Update after d and records its outcome.
type outcome struct {
	result workflows.CheckoutResult
	err    error
	done   bool
}

func (s *bookingSuite) checkoutAfter(d time.Duration, pm string) *outcome {
	o := &outcome{}
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.UpdateCheckout, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { o.err, o.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err == nil {
					o.result = v.(workflows.CheckoutResult)
				}
				o.err, o.done = err, true
			},
		}, workflows.CheckoutRequest{PaymentMethod: pm})
	}, d)
	return o
}

func (s *bookingSuite) paymentAfter(d time.Duration, typ vocab.ProviderEvent, amount money.Money, eventID string) {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SignalPayment, workflows.PaymentEvent{
			EventID: eventID, Type: typ, IntentID: "pi_1", Amount: amount, BookingID: bookingID, ClaimedBookingID: bookingID})
	}, d)
}

func (s *bookingSuite) result() workflows.BookingResult {
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var r workflows.BookingResult
	s.NoError(s.env.GetWorkflowResult(&r))
	return r
}

// expiredUnsold checks the booking ended by its hold's expiry and nothing
// was sold; each test then checks how the money went back.
func (s *bookingSuite) expiredUnsold() {
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.Zero(s.calls[workflows.ActivityConfirmSale])
}

func appErrType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

func (s *bookingSuite) TestHappyPathSellsCapturesIssuesAndNotifiesOnce() {
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.paymentAfter(2*time.Minute+time.Second, vocab.EventAuthorised, total, "evt_1") // duplicate
	s.start()
	s.True(co.done)
	s.NoError(co.err)
	s.Equal(vocab.BookingAuthorised, co.result.Status)
	s.Equal("pi_1_secret", co.result.Payment.ClientSecret)
	r := s.result()
	s.Equal(vocab.BookingPaid, r.Status)
	s.Equal([]string{"tkt_a", "tkt_b"}, r.TicketIDs)
	s.Equal(1, s.calls[workflows.ActivityConfirmSale])
	s.Equal(1, s.calls[workflows.ActivityCapture])
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityNotify])
	s.Zero(s.calls[workflows.ActivityVoid])
}

func (s *bookingSuite) TestADeclineThenAnotherCardSucceeds() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "generic_decline"}, nil).Once()
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "pi_1_secret", Status: vocab.IntentRequiresCapture}, nil).Once()
	first := s.checkoutAfter(time.Minute, "pm_card_chargeDeclined")
	second := s.checkoutAfter(2*time.Minute, "pm_card_visa")
	s.paymentAfter(3*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(workflows.ErrTypeDeclined, appErrType(first.err))
	s.NoError(second.err)
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestDeclinesUntilExpiryReleaseTheHold() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "insufficient_funds"}, nil)
	a := s.checkoutAfter(time.Minute, "pm_card_chargeDeclined")
	b := s.checkoutAfter(3*time.Minute, "pm_card_chargeDeclined")
	s.start()
	s.Equal(workflows.ErrTypeDeclined, appErrType(a.err))
	s.Equal(workflows.ErrTypeDeclined, appErrType(b.err))
	s.expiredUnsold()
	s.Equal(1, s.calls[workflows.ActivityExpireHold])
	s.Equal(1, s.calls[workflows.ActivityVoid], "the declined intent is cancelled")
}

func (s *bookingSuite) TestDeclinesUpToTheAttemptLimitReleaseAtOnce() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "generic_decline"}, nil)
	for i := 1; i <= 3; i++ {
		s.checkoutAfter(time.Duration(i)*time.Minute, "pm_card_chargeDeclined")
	}
	fourth := s.checkoutAfter(3*time.Minute+10*time.Second, "pm_card_visa")
	s.start()
	s.Error(fourth.err, "no attempts left, or the booking already ended")
	s.Contains([]string{workflows.ErrTypeDeclined, workflows.ErrTypeNotPending}, appErrType(fourth.err))
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityReleaseHold])
}

// The provider sends a payment-failed event after every decline; one that
// arrives while the last attempt's authorisation runs must leave that
// attempt to answer with its own decline.
func (s *bookingSuite) TestAFailedPaymentEventDuringTheLastCheckoutLeavesItsDeclineAsTheAnswer() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "processing_error"}, nil)
	var tries []*outcome
	for i := 1; i <= 3; i++ {
		tries = append(tries, s.checkoutAfter(time.Duration(i)*time.Minute, "pm_card_chargeDeclinedProcessingError"))
	}
	s.paymentAfter(3*time.Minute+10*time.Second, vocab.EventFailed, total, "evt_failed_2")
	s.start()
	for i, o := range tries {
		s.True(o.done, "try %d answered", i+1)
		s.Equal(workflows.ErrTypeDeclined, appErrType(o.err), "try %d: %v", i+1, o.err)
	}
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityReleaseHold])
}

func (s *bookingSuite) TestTimerFiringDuringAuthorisationVoidsThePayment() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(15*time.Minute).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	co := s.checkoutAfter(9*time.Minute, "pm_card_visa")
	s.start()
	s.Equal(workflows.ErrTypeHoldExpired, appErrType(co.err))
	s.expiredUnsold()
	s.Equal(1, s.calls[workflows.ActivityVoid])
}

// lateAfterExpiry runs a checkout whose payment event (typ) arrives only
// after the ten-minute hold expired, and checks nothing was sold.
func (s *bookingSuite) lateAfterExpiry(typ vocab.ProviderEvent) {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(10*time.Minute+30*time.Second, typ, total, "evt_late")
	s.start()
	s.expiredUnsold()
}

func (s *bookingSuite) TestPaymentAfterExpiryIsRefunded() {
	// No authorised event arrives before expiry; a capture shows up late.
	s.lateAfterExpiry(vocab.EventSucceeded)
	s.Equal(1, s.calls[workflows.ActivityRefund])
}

func (s *bookingSuite) TestAnAuthorisationAfterExpiryIsVoided() {
	s.lateAfterExpiry(vocab.EventAuthorised)
	s.GreaterOrEqual(s.calls[workflows.ActivityVoid], 1)
}

func (s *bookingSuite) TestAConfirmRefusedBecauseTheHoldEndedVoids() {
	s.env.OnActivity(workflows.ActivityConfirmSale, mock.Anything, mock.Anything).Return(false, nil)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.GreaterOrEqual(s.calls[workflows.ActivityVoid], 1)
	s.Zero(s.calls[workflows.ActivityCapture])
}

func (s *bookingSuite) TestAWrongAmountNeverSellsAndIsFlagged() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, money.Money{Amount: 100, Currency: "EUR"}, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingFailed, r.Status)
	s.NotEmpty(r.Flagged)
	s.Zero(s.calls[workflows.ActivityConfirmSale])
	s.Equal(1, s.calls[workflows.ActivityVoid])
	s.Equal(1, s.calls[workflows.ActivityReleaseHold])
}

func (s *bookingSuite) TestTimeoutAfterSuccessIsRetriedAndChargedOnce() {
	// The first Authorise attempt loses its answer (the activity's lookup
	// found nothing yet); the retry under the same step key succeeds.
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{}, errors.New("payments: outcome unknown")).Once()
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil).Once()
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityCapture])
}

func (s *bookingSuite) TestACaptureFailureIsRetried() {
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(activities.CaptureResult{}, errors.New("provider busy")).Twice()
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(activities.CaptureResult{Status: vocab.IntentSucceeded}, nil).Once()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Zero(s.calls[workflows.ActivityCancelSale])
}

func (s *bookingSuite) TestACaptureThatNeverSucceedsUndoesTheSale() {
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(activities.CaptureResult{}, temporal.NewNonRetryableApplicationError("authorisation expired", "expired", nil))
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingFailed, r.Status)
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityVoid])
	s.NotEmpty(r.Flagged)
}

func (s *bookingSuite) TestThreeDSecureExtendsTheHoldOnce() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "http://challenge"}, nil)
	co := s.checkoutAfter(9*time.Minute, "pm_card_threeDSecure2Required")
	// Authorised after the original 10 minutes but inside the extension.
	s.paymentAfter(13*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal("http://challenge", co.result.Payment.NextAction)
	s.Equal(1, s.calls[workflows.ActivityExtendHold])
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestAReleaseSignalEndsThePendingHold() {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(workflows.SignalRelease, nil) }, time.Minute)
	s.start()
	s.Equal(vocab.BookingCancelled, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityReleaseHold])
}

func (s *bookingSuite) TestAFraudDenialRefusesAndReleases() {
	s.env.OnActivity(workflows.ActivityFraudCheck, mock.Anything, mock.Anything).
		Return(activities.FraudResult{Decision: vocab.FraudDeny, Score: 90}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.start()
	s.Equal(workflows.ErrTypeRefused, appErrType(co.err))
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Zero(s.calls[workflows.ActivityAuthorise])
}

func (s *bookingSuite) TestCancellingAPaidBookingRefundsAndReleases() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	var cancelled vocab.BookingStatus
	var cancelErr error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.UpdateCancel, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { cancelErr = err },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				cancelErr = err
				if err == nil {
					cancelled = v.(vocab.BookingStatus)
				}
			},
		})
	}, time.Hour)
	s.start()
	s.NoError(cancelErr)
	s.Equal(vocab.BookingRefunded, cancelled)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
}

func (s *bookingSuite) TestAStepQueryTellsSupportWhereTheBookingIs() {
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(workflows.QueryStep)
		s.NoError(err)
		var step vocab.Step
		s.NoError(v.Get(&step))
		s.Equal(vocab.StepAwaitingCheckout, step)
	}, time.Minute)
	s.start()
	s.Equal(vocab.BookingExpired, s.result().Status)
}

func TestStepKeysAreStablePerBookingAndStep(t *testing.T) {
	// Recorded idempotency keys at the provider use these spellings: a retry
	// after a deploy must send the same key.
	require.Equal(t, bookingID+":capture", activities.StepKey(bookingID, activities.StepKeyCapture))
	require.Equal(t, bookingID+":authorise-2", activities.AttemptStepKey(bookingID, 2))
	require.Equal(t, "booking-"+bookingID, workflows.BookingWorkflowID(bookingID))
}

func (s *bookingSuite) TestAWebhookOvertakingTheCheckoutAnswerStillSellsOnce() {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(time.Minute+10*time.Second, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingPaid, co.result.Status)
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityCapture])
}

func (s *bookingSuite) TestACheckoutArrivingWithTheStartWaitsForTheHoldToBeAdopted() {
	start := s.env.Now()
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).After(time.Second).
		Return(activities.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
			ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}, nil)
	co := s.checkoutAfter(0, "pm_card_visa")
	s.paymentAfter(time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingAuthorised, co.result.Status)
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestACheckoutForAHoldThatAlreadyEndedIsRefused() {
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).
		Return(activities.HoldInfo{Status: vocab.BookingExpired}, nil)
	co := s.checkoutAfter(0, "pm_card_visa")
	s.start()
	s.Equal(workflows.ErrTypeHoldExpired, appErrType(co.err))
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.Zero(s.calls[workflows.ActivityAuthorise])
}

func (s *bookingSuite) TestAFraudReviewAsksForThreeDSecure() {
	s.env.OnActivity(workflows.ActivityFraudCheck, mock.Anything, mock.Anything).
		Return(activities.FraudResult{Decision: vocab.FraudReview, Score: 50}, nil)
	var stepUp bool
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(func(_ context.Context, in activities.AuthoriseInput) (activities.AuthoriseResult, error) {
			stepUp = in.StepUp
			return activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "http://challenge"}, nil
		})
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.True(stepUp, "the review decision reaches the provider as a 3-D Secure request")
	s.Equal(vocab.BookingPaid, s.result().Status)
}

// cancelOutcome is how a cancel Update ended: refused by its validator
// (rejected), or completed with a status or an error.
type cancelOutcome struct {
	status   vocab.BookingStatus
	err      error
	rejected bool
}

// staffCancelAfter sends the staff-cancel Update after d and records its
// outcome.
func (s *bookingSuite) staffCancelAfter(d time.Duration) *cancelOutcome {
	o := &cancelOutcome{}
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.UpdateStaffCancel, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { o.err, o.rejected = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				o.err = err
				if err == nil {
					o.status = v.(vocab.BookingStatus)
				}
			},
		}, workflows.StaffCancelRequest{Staff: "olga", Reason: "the artist is ill"})
	}, d)
	return o
}

// An event's cancellation pages the bookings the database calls PAID; one
// whose confirm has committed may still be capturing. A staff cancel taken
// then used to be answered PAID with nothing refunded: it is refused as
// busy, and the job's retry, once the sale has landed, refunds it.
func (s *bookingSuite) TestAStaffCancelWhileTheSaleIsBeingCapturedIsRefusedAsBusyThenRefundsOnRetry() {
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
	s.Equal(vocab.BookingRefunded, retry.status)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityCancelSale])
	s.Equal(1, s.calls[workflows.ActivityRefund])
}

// Tickets are written only for a PAID booking: when the database refuses
// them because the sale was undone after its capture, the booking neither
// fails nor confirms; its money goes back and staff are told.
func (s *bookingSuite) TestTicketsRefusedForABookingNoLongerPaidRefundAndFlagInsteadOfConfirming() {
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

// providerAttempt is one attempt of a provider step as the activity saw it.
type providerAttempt struct {
	local   bool
	attempt int32
	key     string
}

// failingCapture makes the capture fail fails times, then succeed,
// recording every attempt.
func (s *bookingSuite) failingCapture(fails int, after time.Duration) *[]providerAttempt {
	var seen []providerAttempt
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, id, _ string) (activities.CaptureResult, error) {
			info := activity.GetInfo(ctx)
			seen = append(seen, providerAttempt{info.IsLocalActivity, info.Attempt, activities.StepKey(id, activities.StepKeyCapture)})
			if len(seen) <= fails || s.env.Now().Before(s.startedAt.Add(after)) {
				return activities.CaptureResult{}, errors.New("provider unavailable (503)")
			}
			return activities.CaptureResult{Status: vocab.IntentSucceeded}, nil
		})
	return &seen
}

// A capture failing for minutes used to be a local activity retried inside
// the workflow task, invisible as a pending activity. Its first attempt is
// still local (the cheap common case); after a failure it continues as a
// regular activity with the same arguments, so the same step key, and the
// server's retries (attempts, last failure, next retry) show in the UI.
func (s *bookingSuite) TestACaptureFailingTwiceContinuesAsARegularActivityUnderTheSameStepKey() {
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

// upserts records every search attribute the booking upserts, in order, as
// "Name=value".
func (s *bookingSuite) upserts() *[]string {
	var seen []string
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		for k, v := range sa.GetUntypedValues() {
			seen = append(seen, fmt.Sprintf("%s=%v", k.GetName(), v))
		}
	}).Return(nil)
	return &seen
}

// indexOf is the position of want in seen, or -1.
func indexOf(seen []string, want string) int {
	for i, v := range seen {
		if v == want {
			return i
		}
	}
	return -1
}

// Support filters by where a booking is and whether it needs them: the
// database says PAID once the sale is confirmed, so the list says so before
// the capture (which retries) succeeds; a capture failing past a few
// attempts raises EncoreAttention, and its success clears it.
func (s *bookingSuite) TestAFailingCaptureRaisesAttentionWhileTheListAlreadySaysPaidAsTheDatabaseDoes() {
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

// The booking starts with what support searches by: event, fan, amount, the
// e-mail's keyed hash; never the address itself.
func TestTheEmailHashIsKeyedStableAndNotTheAddress(t *testing.T) {
	key := []byte("k1")
	h := workflows.EmailHash(key, " Asha@Example.com ")
	require.Len(t, h, 32)
	require.Equal(t, h, workflows.EmailHash(key, "asha@example.com"), "case and spaces do not matter")
	require.NotEqual(t, h, workflows.EmailHash([]byte("k2"), "asha@example.com"), "another key, another hash")
	require.NotContains(t, h, "asha")
	require.Empty(t, workflows.EmailHash(key, ""))
}

// staffUpdateAfter sends a support Update (retry-now, refund-and-close)
// after d and records its outcome.
func (s *bookingSuite) staffUpdateAfter(name string, d time.Duration) *outcome {
	o := &outcome{}
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { o.err, o.done = err, true },
			OnAccept:   func() {},
			OnComplete: func(_ any, err error) { o.err, o.done = err, true },
		}, workflows.StaffCancelRequest{Staff: "olga", Reason: "provider back up"})
	}, d)
	return o
}

// captureSucceededAt runs a capture that fails from the sale (2 minutes
// in) until clears, optionally with retry-now at retryAt, and answers when
// the capture succeeded.
func (s *bookingSuite) captureSucceededAt(clears time.Duration, retryAt time.Duration) (time.Duration, *outcome) {
	var succeeded time.Duration
	s.env.OnActivity(workflows.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(func(ctx context.Context, id, _ string) (activities.CaptureResult, error) {
			if s.env.Now().Before(s.startedAt.Add(clears)) {
				return activities.CaptureResult{}, errors.New("provider unavailable (503)")
			}
			if succeeded == 0 {
				succeeded = s.env.Now().Sub(s.startedAt)
			}
			return activities.CaptureResult{Status: vocab.IntentSucceeded}, nil
		})
	var retry *outcome
	if retryAt > 0 {
		retry = s.staffUpdateAfter(workflows.UpdateRetryNow, retryAt)
	}
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	return succeeded, retry
}

// Without retry-now the capture waits out its backoff after the provider
// recovered (the attempt at 3m31.5s); retry-now at 3m10s asks at once.
func (s *bookingSuite) TestRetryNowSkipsTheBackoffOfAStuckCapture() {
	at, retry := s.captureSucceededAt(3*time.Minute+5*time.Second, 3*time.Minute+10*time.Second)
	s.True(retry.done)
	s.NoError(retry.err)
	s.Equal(3*time.Minute+10*time.Second, at, "captured the moment support asked")
	s.Len(s.staffSteps, 1, "who asked is audited")
	s.Equal("booking.retry-now", s.staffSteps[0].Action)
}

func (s *bookingSuite) TestWithoutRetryNowAStuckCaptureWaitsOutItsBackoff() {
	at, _ := s.captureSucceededAt(3*time.Minute+5*time.Second, 0)
	s.Greater(at, 3*time.Minute+30*time.Second)
}

func (s *bookingSuite) TestRetryNowWithNothingPendingIsRefused() {
	retry := s.staffUpdateAfter(workflows.UpdateRetryNow, 90*time.Second)
	s.start()
	s.True(retry.done)
	s.Equal(workflows.ErrTypeNothingToRetry, appErrType(retry.err))
}

// A refund during a stuck capture used to be accepted and answered PAID,
// refunding nothing. refund-and-close stops the capture, undoes the sale,
// gives the money back under the refund step key, audits and tells the fan.
func (s *bookingSuite) TestRefundAndCloseDuringAStuckCaptureRefundsAndEndsRefunded() {
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

func (s *bookingSuite) TestRefundAndCloseOfAPaidBookingRefundsAndEndsRefunded() {
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
func (s *bookingSuite) TestACancelledWorkflowReleasesTheHoldAndVoidsThePayment() {
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

func (s *bookingSuite) TestASupportUpdateThatDoesNotSayWhoSentItIsRefused() {
	var err error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.UpdateRefundAndClose, "", &testsuite.TestUpdateCallback{
			OnReject: func(e error) { err = e }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, workflows.StaffCancelRequest{Reason: "no name"})
	}, time.Minute)
	s.start()
	s.Equal(workflows.ErrTypeStaffRequired, appErrType(err))
	s.Equal(vocab.BookingExpired, s.result().Status)
}

// A staff-cancel sent from the Temporal UI used to refund with no audit
// record and no e-mail; the saga now writes both. One sent by StaffAction
// (Audited) is audited by its sender, once.
func (s *bookingSuite) TestAStaffCancelFromTheUIIsAuditedByTheSagaAndOneFromTheAPIByItsSender() {
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

func (s *bookingSuite) TestAStaffCancelSentByStaffActionIsNotAuditedTwice() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	var err error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(workflows.UpdateStaffCancel, "", &testsuite.TestUpdateCallback{
			OnReject: func(e error) { err = e }, OnAccept: func() {}, OnComplete: func(_ any, e error) { err = e },
		}, workflows.StaffCancelRequest{Staff: "olga", Reason: "refund", Audited: true})
	}, time.Hour)
	s.start()
	s.NoError(err)
	s.Equal(vocab.BookingRefunded, s.result().Status)
	s.Empty(s.staffSteps)
}
