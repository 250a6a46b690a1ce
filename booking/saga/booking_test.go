package saga_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

const bookingID = "0b9c4c53-0000-4000-8000-000000000001"

var total = money.Money{Amount: 19000, Currency: "EUR"}

type bookingSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// calls counts activity executions by name.
	calls map[string]int
}

func TestBookingWorkflow(t *testing.T) { suite.Run(t, new(bookingSuite)) }

// SetupTest registers every activity under its name with a default behaviour
// (the happy path); tests override what they need with OnActivity.
func (s *bookingSuite) SetupTest() {
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.env = s.NewTestWorkflowEnvironment()
	s.calls = map[string]int{}
	start := s.env.Now()
	reg := func(name string, fn any) {
		s.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	count := func(name string) { s.calls[name]++ }
	reg(saga.ActivityLoadBooking, func(ctx context.Context, id string) (saga.HoldInfo, error) {
		count(saga.ActivityLoadBooking)
		return saga.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
			ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}, nil
	})
	reg(saga.ActivityExpireHold, func(ctx context.Context, id string) (vocab.BookingStatus, error) {
		count(saga.ActivityExpireHold)
		return vocab.BookingExpired, nil
	})
	reg(saga.ActivityReleaseHold, func(ctx context.Context, id string) (vocab.BookingStatus, error) {
		count(saga.ActivityReleaseHold)
		return vocab.BookingCancelled, nil
	})
	reg(saga.ActivityExtendHold, func(ctx context.Context, id string, d time.Duration) (time.Time, error) {
		count(saga.ActivityExtendHold)
		return start.Add(10*time.Minute + d), nil
	})
	reg(saga.ActivityFraudCheck, func(ctx context.Context, in saga.FraudInput) (saga.FraudResult, error) {
		count(saga.ActivityFraudCheck)
		return saga.FraudResult{Decision: vocab.FraudAllow}, nil
	})
	reg(saga.ActivityAuthorise, func(ctx context.Context, in saga.AuthoriseInput) (saga.AuthoriseResult, error) {
		count(saga.ActivityAuthorise)
		return saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "pi_1_secret", Status: vocab.IntentRequiresCapture}, nil
	})
	reg(saga.ActivityConfirmSale, func(ctx context.Context, id string) (bool, error) {
		count(saga.ActivityConfirmSale)
		return true, nil
	})
	reg(saga.ActivityCapture, func(ctx context.Context, id, intent string) (saga.CaptureResult, error) {
		count(saga.ActivityCapture)
		return saga.CaptureResult{Status: vocab.IntentSucceeded}, nil
	})
	for _, name := range []string{saga.ActivityVoid, saga.ActivityRefund} {
		reg(name, func(ctx context.Context, id, intent string) error {
			count(name)
			return nil
		})
	}
	reg(saga.ActivityCancelSale, func(ctx context.Context, id string) error {
		count(saga.ActivityCancelSale)
		return nil
	})
	reg(saga.ActivityIssueTickets, func(ctx context.Context, id string) ([]string, error) {
		count(saga.ActivityIssueTickets)
		return []string{"tkt_a", "tkt_b"}, nil
	})
	reg(saga.ActivityNotify, func(ctx context.Context, id, kind string) error {
		count(saga.ActivityNotify)
		return nil
	})
	reg(saga.ActivityFlagPayment, func(ctx context.Context, id, reason string) error {
		count(saga.ActivityFlagPayment)
		return nil
	})
}

func (s *bookingSuite) start(in ...saga.BookingInput) {
	input := saga.BookingInput{ReservationID: bookingID, EventID: "evt", UserID: "asha", LateEventGrace: time.Minute}
	if len(in) > 0 {
		input = in[0]
	}
	s.env.ExecuteWorkflow(saga.Booking, input)
}

// checkout sends the checkout Update after d and records its outcome.
type outcome struct {
	result saga.CheckoutResult
	err    error
	done   bool
}

func (s *bookingSuite) checkoutAfter(d time.Duration, pm string) *outcome {
	o := &outcome{}
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(saga.UpdateCheckout, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { o.err, o.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err == nil {
					o.result = v.(saga.CheckoutResult)
				}
				o.err, o.done = err, true
			},
		}, saga.CheckoutRequest{PaymentMethod: pm})
	}, d)
	return o
}

func (s *bookingSuite) paymentAfter(d time.Duration, typ vocab.ProviderEvent, amount money.Money, eventID string) {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(saga.SignalPayment, saga.PaymentEvent{
			EventID: eventID, Type: typ, IntentID: "pi_1", Amount: amount, BookingID: bookingID, ClaimedBookingID: bookingID})
	}, d)
}

func (s *bookingSuite) result() saga.BookingResult {
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var r saga.BookingResult
	s.NoError(s.env.GetWorkflowResult(&r))
	return r
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
	s.Equal(1, s.calls[saga.ActivityConfirmSale])
	s.Equal(1, s.calls[saga.ActivityCapture])
	s.Equal(1, s.calls[saga.ActivityIssueTickets])
	s.Equal(1, s.calls[saga.ActivityNotify])
	s.Zero(s.calls[saga.ActivityVoid])
}

func (s *bookingSuite) TestADeclineThenAnotherCardSucceeds() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "generic_decline"}, nil).Once()
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "pi_1_secret", Status: vocab.IntentRequiresCapture}, nil).Once()
	first := s.checkoutAfter(time.Minute, "pm_card_chargeDeclined")
	second := s.checkoutAfter(2*time.Minute, "pm_card_visa")
	s.paymentAfter(3*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(saga.ErrTypeDeclined, appErrType(first.err))
	s.NoError(second.err)
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestDeclinesUntilExpiryReleaseTheHold() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "insufficient_funds"}, nil)
	a := s.checkoutAfter(time.Minute, "pm_card_chargeDeclined")
	b := s.checkoutAfter(3*time.Minute, "pm_card_chargeDeclined")
	s.start()
	s.Equal(saga.ErrTypeDeclined, appErrType(a.err))
	s.Equal(saga.ErrTypeDeclined, appErrType(b.err))
	r := s.result()
	s.Equal(vocab.BookingExpired, r.Status)
	s.Equal(1, s.calls[saga.ActivityExpireHold])
	s.Zero(s.calls[saga.ActivityConfirmSale])
	s.Equal(1, s.calls[saga.ActivityVoid], "the declined intent is cancelled")
}

func (s *bookingSuite) TestDeclinesUpToTheAttemptLimitReleaseAtOnce() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "generic_decline"}, nil)
	for i := 1; i <= 3; i++ {
		s.checkoutAfter(time.Duration(i)*time.Minute, "pm_card_chargeDeclined")
	}
	fourth := s.checkoutAfter(3*time.Minute+10*time.Second, "pm_card_visa")
	s.start()
	s.Error(fourth.err, "no attempts left, or the booking already ended")
	s.Contains([]string{saga.ErrTypeDeclined, saga.ErrTypeNotPending}, appErrType(fourth.err))
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Equal(1, s.calls[saga.ActivityReleaseHold])
}

// The provider sends a payment-failed event after every decline; one that
// arrives while the last attempt's authorisation runs must leave that
// attempt to answer with its own decline.
func (s *bookingSuite) TestAFailedPaymentEventDuringTheLastCheckoutLeavesItsDeclineAsTheAnswer() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(saga.AuthoriseResult{IntentID: "pi_1", Declined: true, DeclineCode: "processing_error"}, nil)
	var tries []*outcome
	for i := 1; i <= 3; i++ {
		tries = append(tries, s.checkoutAfter(time.Duration(i)*time.Minute, "pm_card_chargeDeclinedProcessingError"))
	}
	s.paymentAfter(3*time.Minute+10*time.Second, vocab.EventFailed, total, "evt_failed_2")
	s.start()
	for i, o := range tries {
		s.True(o.done, "try %d answered", i+1)
		s.Equal(saga.ErrTypeDeclined, appErrType(o.err), "try %d: %v", i+1, o.err)
	}
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Equal(1, s.calls[saga.ActivityReleaseHold])
}

func (s *bookingSuite) TestTimerFiringDuringAuthorisationVoidsThePayment() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).After(15*time.Minute).
		Return(saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	co := s.checkoutAfter(9*time.Minute, "pm_card_visa")
	s.start()
	s.Equal(saga.ErrTypeHoldExpired, appErrType(co.err))
	r := s.result()
	s.Equal(vocab.BookingExpired, r.Status)
	s.Equal(1, s.calls[saga.ActivityVoid])
	s.Zero(s.calls[saga.ActivityConfirmSale])
}

func (s *bookingSuite) TestPaymentAfterExpiryIsRefunded() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	// No authorised event arrives before expiry; a capture shows up late.
	s.paymentAfter(10*time.Minute+30*time.Second, vocab.EventSucceeded, total, "evt_late")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingExpired, r.Status)
	s.Equal(1, s.calls[saga.ActivityRefund])
	s.Zero(s.calls[saga.ActivityConfirmSale])
}

func (s *bookingSuite) TestAnAuthorisationAfterExpiryIsVoided() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(10*time.Minute+30*time.Second, vocab.EventAuthorised, total, "evt_late")
	s.start()
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.GreaterOrEqual(s.calls[saga.ActivityVoid], 1)
	s.Zero(s.calls[saga.ActivityConfirmSale])
}

func (s *bookingSuite) TestAConfirmRefusedBecauseTheHoldEndedVoids() {
	s.env.OnActivity(saga.ActivityConfirmSale, mock.Anything, mock.Anything).Return(false, nil)
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.GreaterOrEqual(s.calls[saga.ActivityVoid], 1)
	s.Zero(s.calls[saga.ActivityCapture])
}

func (s *bookingSuite) TestAWrongAmountNeverSellsAndIsFlagged() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, money.Money{Amount: 100, Currency: "EUR"}, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingFailed, r.Status)
	s.NotEmpty(r.Flagged)
	s.Zero(s.calls[saga.ActivityConfirmSale])
	s.Equal(1, s.calls[saga.ActivityVoid])
	s.Equal(1, s.calls[saga.ActivityReleaseHold])
}

func (s *bookingSuite) TestTimeoutAfterSuccessIsRetriedAndChargedOnce() {
	// The first Authorise attempt loses its answer (the activity's lookup
	// found nothing yet); the retry under the same step key succeeds.
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{}, errors.New("payments: outcome unknown")).Once()
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil).Once()
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[saga.ActivityCapture])
}

func (s *bookingSuite) TestACaptureFailureIsRetried() {
	s.env.OnActivity(saga.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(saga.CaptureResult{}, errors.New("provider busy")).Twice()
	s.env.OnActivity(saga.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(saga.CaptureResult{Status: vocab.IntentSucceeded}, nil).Once()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Zero(s.calls[saga.ActivityCancelSale])
}

func (s *bookingSuite) TestACaptureThatNeverSucceedsUndoesTheSale() {
	s.env.OnActivity(saga.ActivityCapture, mock.Anything, mock.Anything, mock.Anything).
		Return(saga.CaptureResult{}, temporal.NewNonRetryableApplicationError("authorisation expired", "expired", nil))
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingFailed, r.Status)
	s.Equal(1, s.calls[saga.ActivityCancelSale])
	s.Equal(1, s.calls[saga.ActivityVoid])
	s.NotEmpty(r.Flagged)
}

func (s *bookingSuite) TestThreeDSecureExtendsTheHoldOnce() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "http://challenge"}, nil)
	co := s.checkoutAfter(9*time.Minute, "pm_card_threeDSecure2Required")
	// Authorised after the original 10 minutes but inside the extension.
	s.paymentAfter(13*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal("http://challenge", co.result.Payment.NextAction)
	s.Equal(1, s.calls[saga.ActivityExtendHold])
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestAReleaseSignalEndsThePendingHold() {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(saga.SignalRelease, nil) }, time.Minute)
	s.start()
	s.Equal(vocab.BookingCancelled, s.result().Status)
	s.Equal(1, s.calls[saga.ActivityReleaseHold])
}

func (s *bookingSuite) TestAFraudDenialRefusesAndReleases() {
	s.env.OnActivity(saga.ActivityFraudCheck, mock.Anything, mock.Anything).
		Return(saga.FraudResult{Decision: vocab.FraudDeny, Score: 90}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.start()
	s.Equal(saga.ErrTypeRefused, appErrType(co.err))
	s.Equal(vocab.BookingFailed, s.result().Status)
	s.Zero(s.calls[saga.ActivityAuthorise])
}

func (s *bookingSuite) TestCancellingAPaidBookingRefundsAndReleases() {
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	var cancelled vocab.BookingStatus
	var cancelErr error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(saga.UpdateCancel, "", &testsuite.TestUpdateCallback{
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
	s.Equal(1, s.calls[saga.ActivityCancelSale])
	s.Equal(1, s.calls[saga.ActivityRefund])
}

func (s *bookingSuite) TestAStepQueryTellsSupportWhereTheBookingIs() {
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(saga.QueryStep)
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
	require.Equal(t, bookingID+":capture", saga.StepKey(bookingID, saga.StepKeyCapture))
	require.Equal(t, bookingID+":authorise-2", saga.AttemptStepKey(bookingID, 2))
	require.Equal(t, "booking-"+bookingID, saga.BookingWorkflowID(bookingID))
}

func (s *bookingSuite) TestAWebhookOvertakingTheCheckoutAnswerStillSellsOnce() {
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(time.Minute+10*time.Second, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingPaid, co.result.Status)
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[saga.ActivityCapture])
}

func (s *bookingSuite) TestACheckoutArrivingWithTheStartWaitsForTheHoldToBeAdopted() {
	start := s.env.Now()
	s.env.OnActivity(saga.ActivityLoadBooking, mock.Anything, mock.Anything).After(time.Second).
		Return(saga.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
			ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}, nil)
	co := s.checkoutAfter(0, "pm_card_visa")
	s.paymentAfter(time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.Equal(vocab.BookingAuthorised, co.result.Status)
	s.Equal(vocab.BookingPaid, s.result().Status)
}

func (s *bookingSuite) TestACheckoutForAHoldThatAlreadyEndedIsRefused() {
	s.env.OnActivity(saga.ActivityLoadBooking, mock.Anything, mock.Anything).
		Return(saga.HoldInfo{Status: vocab.BookingExpired}, nil)
	co := s.checkoutAfter(0, "pm_card_visa")
	s.start()
	s.Equal(saga.ErrTypeHoldExpired, appErrType(co.err))
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.Zero(s.calls[saga.ActivityAuthorise])
}

func (s *bookingSuite) TestAFraudReviewAsksForThreeDSecure() {
	s.env.OnActivity(saga.ActivityFraudCheck, mock.Anything, mock.Anything).
		Return(saga.FraudResult{Decision: vocab.FraudReview, Score: 50}, nil)
	var stepUp bool
	s.env.OnActivity(saga.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(func(_ context.Context, in saga.AuthoriseInput) (saga.AuthoriseResult, error) {
			stepUp = in.StepUp
			return saga.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "http://challenge"}, nil
		})
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.NoError(co.err)
	s.True(stepUp, "the review decision reaches the provider as a 3-D Secure request")
	s.Equal(vocab.BookingPaid, s.result().Status)
}
