package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
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

// sagaSuite is the booking saga on the Temporal test environment, every
// activity mocked with the happy path, and the helpers that drive it; the
// suites below hold its tests.
type sagaSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// calls counts activity executions by name, under mu: a regular
	// activity's attempt (a stuck capture's) may still run while the next
	// step's local activity does.
	calls map[string]int
	mu    sync.Mutex
	// startedAt is the test clock's start.
	startedAt time.Time
	// staffSteps are the support actions audited.
	staffSteps []activities.StaffStep
	// provider is what the payment provider and the database say of each
	// intent (ActivityCheckPayment): paymentAfter's events set it, as a
	// real provider's state moves before it sends the event; a forged
	// signal does not.
	provider map[string]activities.ProviderPayment
	// flags are the reasons the saga flagged the payment for staff.
	flags []string
}

// bookingSuite holds the saga's tests as the fan meets it: holds,
// checkouts, payments, expiry and compensations.
type bookingSuite struct{ sagaSuite }

func TestBookingWorkflow(t *testing.T) { suite.Run(t, new(bookingSuite)) }

// SetupTest registers every activity under its name with a default behaviour
// (the happy path); tests override what they need with OnActivity.
func (s *sagaSuite) SetupTest() {
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.env = s.NewTestWorkflowEnvironment()
	s.calls = map[string]int{}
	s.staffSteps = nil
	s.provider = map[string]activities.ProviderPayment{}
	s.flags = nil
	start := s.env.Now()
	s.startedAt = start
	reg := func(name string, fn any) {
		s.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	count := func(name string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[name]++
	}
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
	reg(workflows.ActivityPaySellers, func(ctx context.Context, id string) error {
		count(workflows.ActivityPaySellers)
		s.mu.Lock()
		issued := s.calls[workflows.ActivityIssueTickets]
		s.mu.Unlock()
		s.Equal(1, issued, "sellers are paid once the buyer holds the tickets")
		return nil
	})
	reg(workflows.ActivityNotify, func(ctx context.Context, id, kind string) error {
		count(workflows.ActivityNotify)
		return nil
	})
	reg(workflows.ActivityFlagPayment, func(ctx context.Context, id, reason string) error {
		count(workflows.ActivityFlagPayment)
		s.mu.Lock()
		s.flags = append(s.flags, reason)
		s.mu.Unlock()
		return nil
	})
	reg(workflows.ActivityCheckPayment, func(ctx context.Context, intentID string) (activities.ProviderPayment, error) {
		count(workflows.ActivityCheckPayment)
		return s.provider[intentID], nil
	})
	reg(workflows.ActivityRecordStaffStep, func(ctx context.Context, in activities.StaffStep) error {
		count(workflows.ActivityRecordStaffStep)
		s.mu.Lock()
		s.staffSteps = append(s.staffSteps, in)
		s.mu.Unlock()
		return nil
	})
	reg(workflows.ActivitySettledStatus, func(ctx context.Context, id string) (vocab.BookingStatus, error) {
		count(workflows.ActivitySettledStatus)
		return vocab.BookingRefunded, nil
	})
}

func (s *sagaSuite) start(in ...workflows.BookingInput) {
	input := workflows.BookingInput{ReservationID: bookingID, EventID: "evt", UserID: "asha", LateEventGrace: time.Minute}
	if len(in) > 0 {
		input = in[0]
	}
	s.env.ExecuteWorkflow(workflows.Booking, input)
}

// outcome is how an Update a test sent ended: refused by its validator
// (rejected) or completed with its result or an error; done either way.
type outcome[R any] struct {
	result   R
	err      error
	rejected bool
	done     bool
}

// updateAfter sends the Update name with args after d and records its
// outcome.
func updateAfter[R any](env *testsuite.TestWorkflowEnvironment, name string, d time.Duration, args ...any) *outcome[R] {
	o := &outcome[R]{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { o.err, o.rejected, o.done = err, true, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if r, ok := v.(R); ok && err == nil {
					o.result = r
				}
				o.err, o.done = err, true
			},
		}, args...)
	}, d)
	return o
}

// checkoutAfter sends the checkout Update after d and records its outcome.
func (s *sagaSuite) checkoutAfter(d time.Duration, pm string) *outcome[workflows.CheckoutResult] {
	return updateAfter[workflows.CheckoutResult](s.env, workflows.UpdateCheckout, d, workflows.CheckoutRequest{PaymentMethod: pm})
}

// intentStatus is the intent status a provider event of type typ reports.
var intentStatus = map[vocab.ProviderEvent]vocab.IntentStatus{
	vocab.EventAuthorised: vocab.IntentRequiresCapture, vocab.EventSucceeded: vocab.IntentSucceeded,
	vocab.EventFailed: vocab.IntentRequiresPaymentMethod, vocab.EventCanceled: vocab.IntentCanceled,
}

// paymentAfter has the provider move intent pi_1 of this booking as an
// event of type typ says, then deliver the event, after d.
func (s *sagaSuite) paymentAfter(d time.Duration, typ vocab.ProviderEvent, amount money.Money, eventID string) {
	s.env.RegisterDelayedCallback(func() {
		s.provider["pi_1"] = activities.ProviderPayment{Known: true, Status: intentStatus[typ], Amount: amount,
			ClaimedBookingID: bookingID, BookingID: bookingID}
		s.env.SignalWorkflow(workflows.SignalPayment, workflows.PaymentEvent{
			EventID: eventID, Type: typ, IntentID: "pi_1", Amount: amount, BookingID: bookingID, ClaimedBookingID: bookingID})
	}, d)
}

func (s *sagaSuite) result() workflows.BookingResult {
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var r workflows.BookingResult
	s.NoError(s.env.GetWorkflowResult(&r))
	return r
}

// expiredUnsold checks the booking ended by its hold's expiry and nothing
// was sold; each test then checks how the money went back.
func (s *sagaSuite) expiredUnsold() {
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
	s.Zero(s.calls[workflows.ActivityPaySellers], "a primary sale pays no seller")
}

// resaleHold makes the adopted hold a resale (its lines name listings).
func (s *sagaSuite) resaleHold() {
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).Return(activities.HoldInfo{
		Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt", ExpiresAt: s.startedAt.Add(10 * time.Minute),
		Total: total, CancelBy: s.startedAt, Resale: true}, nil)
}

func (s *bookingSuite) TestAResaleBookingPaysItsSellersAfterItsTicketsAndEndsWithNoCancellationWindow() {
	s.resaleHold()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityPaySellers])
	s.Equal(1, s.calls[workflows.ActivityNotify])
	s.Less(s.env.Now().Sub(s.startedAt), time.Hour, "a final sale does not wait for a cancellation deadline")
}

func (s *bookingSuite) TestAPayoutRefusedForGoodIsFlaggedForStaffAndTheBuyersSaleStands() {
	s.resaleHold()
	s.env.OnActivity(workflows.ActivityPaySellers, mock.Anything, mock.Anything).
		Return(temporal.NewNonRetryableApplicationError("provider down for good", "test", nil))
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingPaid, r.Status)
	s.Equal([]string{"tkt_a", "tkt_b"}, r.TicketIDs)
	s.Zero(s.calls[workflows.ActivityRefund], "the buyer keeps the tickets: nothing is given back")
	s.Zero(s.calls[workflows.ActivityCancelSale])
	s.Contains(strings.Join(s.flags, "; "), "seller payout not made")
	s.Equal(1, s.calls[workflows.ActivityNotify])
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
	var tries []*outcome[workflows.CheckoutResult]
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
func (s *sagaSuite) lateAfterExpiry(typ vocab.ProviderEvent) {
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

// forgeAfter sends, after d, a payment signal the provider never made:
// what anyone allowed to signal the workflow (the Web UI's Signal button)
// could send.
func (s *sagaSuite) forgeAfter(d time.Duration, typ vocab.ProviderEvent, intentID, eventID string) {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SignalPayment, workflows.PaymentEvent{
			EventID: eventID, Type: typ, IntentID: intentID, Amount: total, BookingID: bookingID, ClaimedBookingID: bookingID})
	}, d)
}

// threeDSCheckoutThenProviderSays checks out into a 3-D Secure challenge
// (intent pi_1) after a minute; from then on the provider reports pi_1 at
// status for this booking, whatever signals say.
func (s *sagaSuite) threeDSCheckoutThenProviderSays(status vocab.IntentStatus) {
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresAction, NextActionURL: "https://3ds.invalid"}, nil)
	s.checkoutAfter(time.Minute, "pm_card_threeDSecure2Required")
	s.env.RegisterDelayedCallback(func() {
		s.provider["pi_1"] = activities.ProviderPayment{Known: true, Status: status, Amount: total,
			ClaimedBookingID: bookingID, BookingID: bookingID}
	}, time.Minute)
}

func (s *bookingSuite) TestAForgedAuthorisationSignalSellsNothingAndTheHoldExpiresAsIfItNeverCame() {
	// The fan opened a 3-D Secure challenge and walked away: the provider
	// says requires_action, yet a signal claims the money is authorised.
	s.threeDSCheckoutThenProviderSays(vocab.IntentRequiresAction)
	s.forgeAfter(2*time.Minute, vocab.EventAuthorised, "pi_1", "evt_forged")
	s.start()
	s.Equal(1, s.calls[workflows.ActivityCheckPayment], "the saga asked the provider what the signal claimed")
	s.Zero(s.calls[workflows.ActivityConfirmSale], "nothing was sold on the signal's word")
	s.Zero(s.calls[workflows.ActivityCapture])
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.GreaterOrEqual(s.calls[workflows.ActivityVoid], 1, "the open intent was given back at expiry")
}

func (s *bookingSuite) TestASignalNamingAPaymentTheProviderDoesNotKnowIsFlaggedAndSellsNothing() {
	s.threeDSCheckoutThenProviderSays(vocab.IntentRequiresAction)
	s.forgeAfter(2*time.Minute, vocab.EventAuthorised, "pi_forged", "evt_forged")
	s.start()
	s.Zero(s.calls[workflows.ActivityConfirmSale])
	s.Contains(s.flags, "event evt_forged names a payment the provider does not know")
	s.Equal(vocab.BookingExpired, s.result().Status)
}

func (s *bookingSuite) TestAnEventIsActedOnAsTheProviderTellsItNotAsTheSignalSaysIt() {
	// The signal says the payment failed, the provider says it is
	// authorised (the fan passed 3-D Secure after all): the saga sells.
	s.threeDSCheckoutThenProviderSays(vocab.IntentRequiresCapture)
	s.forgeAfter(2*time.Minute, vocab.EventFailed, "pi_1", "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	s.Equal(1, s.calls[workflows.ActivityCapture])
}

func (s *bookingSuite) TestALateForgedSuccessForAnotherBookingsPaymentRefundsNothing() {
	// After expiry a signal claims this booking's money was captured on an
	// intent that is another booking's: the provider's metadata and the
	// database both name the other booking, so nothing is refunded.
	other := "0b9c4c53-0000-4000-8000-000000000002"
	s.provider["pi_other"] = activities.ProviderPayment{Known: true, Status: vocab.IntentSucceeded, Amount: total,
		ClaimedBookingID: other, BookingID: other}
	s.forgeAfter(10*time.Minute+30*time.Second, vocab.EventSucceeded, "pi_other", "evt_forged")
	s.start()
	s.Equal(vocab.BookingExpired, s.result().Status)
	s.Zero(s.calls[workflows.ActivityRefund], "another booking's money stays where it is")
	s.Contains(s.flags, "late event evt_forged names another booking")
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

// TestADatabaseDownForHalfAMinuteDuringTheSaleDelaysItsTicketsWithoutFailingIt
// plays a PostgreSQL restart that outlasts a database step's ten-second
// attempt: the confirm and the tickets keep failing for about half a
// minute, then the database answers. A local activity's retries end at its
// ScheduleToCloseTimeout, which defaults to its StartToCloseTimeout, so
// these steps once gave up after ten seconds: the workflow failed with the
// booking PAID, its money captured and no ticket written (the CI
// rehearsal's "PAID payment CAPTURED tickets 0" after a PostgreSQL crash).
func (s *bookingSuite) TestADatabaseDownForHalfAMinuteDuringTheSaleDelaysItsTicketsWithoutFailingIt() {
	down := errors.New("pgconn: connection refused")
	// Backoff from 200 ms doubling: seven failures span about 25 s, the
	// last wait on a timer (past the workflow task's 10 s).
	const failures = 7
	s.env.OnActivity(workflows.ActivityConfirmSale, mock.Anything, mock.Anything).Return(false, down).Times(failures)
	s.env.OnActivity(workflows.ActivityConfirmSale, mock.Anything, mock.Anything).Return(true, nil).Once()
	s.env.OnActivity(workflows.ActivityIssueTickets, mock.Anything, mock.Anything).Return(nil, down).Times(failures)
	s.env.OnActivity(workflows.ActivityIssueTickets, mock.Anything, mock.Anything).Return([]string{"tkt_a", "tkt_b"}, nil).Once()
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	r := s.result()
	s.Equal(vocab.BookingPaid, r.Status)
	s.Equal([]string{"tkt_a", "tkt_b"}, r.TicketIDs)
	s.Zero(s.calls[workflows.ActivityCancelSale])
	s.Zero(s.calls[workflows.ActivityVoid])
	s.Zero(s.calls[workflows.ActivityRefund])
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

// soldOnceWithItsTickets requires a sale carried on after a lost workflow
// task to end PAID with its tickets, captured once, nothing given back.
func (s *sagaSuite) soldOnceWithItsTickets() {
	r := s.result()
	s.Equal(vocab.BookingPaid, r.Status)
	s.Equal([]string{"tkt_a", "tkt_b"}, r.TicketIDs, "the sale is carried on to its tickets")
	s.Equal(1, s.calls[workflows.ActivityCapture])
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Zero(s.calls[workflows.ActivityRefund])
	s.Zero(s.calls[workflows.ActivityVoid])
}

// A workflow task that confirmed and captured a sale by local activities
// can be lost (its worker killed, or Temporal's database down when it
// completed): the next run holds the booking pending while the database
// says PAID. If the next thing it acts on is the fan's release (or the
// hold's expiry), ending the hold finds the booking PAID. The saga used to
// adopt PAID there and go on to wait for the cancellation deadline with no
// ticket issued (and, had the lost task not captured, the money
// uncaptured): the split rehearsal's "PAID payment CAPTURED tickets 0". It
// carries its own sale on instead: confirm (already PAID), capture (keyed,
// so once), tickets.
func (s *bookingSuite) TestAReleaseThatFindsTheSaleMadeByALostTaskCarriesTheSaleOnToItsTickets() {
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	// The database answers for the hold as it stands: PAID.
	s.env.OnActivity(workflows.ActivityReleaseHold, mock.Anything, mock.Anything).Return(vocab.BookingPaid, nil)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(workflows.SignalRelease, nil) }, 2*time.Minute)
	s.start()
	s.NoError(co.err)
	s.soldOnceWithItsTickets()
}

// The same loss at the very start: the tasks that adopted the hold, took the
// checkout and sold on the provider's event were all lost, so the first
// task that completes finds the hold already PAID while the event waits.
// The run used to end at once as PAID, no ticket issued; it sells again as
// the lost tasks did, and only once.
func (s *bookingSuite) TestAStartThatFindsItsOwnLostSaleWithItsEventWaitingCarriesTheSaleOn() {
	start := s.env.Now()
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).After(10*time.Second).
		Return(activities.HoldInfo{Status: vocab.BookingPaid, UserID: "asha", EventID: "evt",
			ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}, nil)
	s.paymentAfter(time.Second, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.soldOnceWithItsTickets()
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
	cancel := updateAfter[vocab.BookingStatus](s.env, workflows.UpdateCancel, time.Hour)
	s.start()
	s.NoError(cancel.err)
	s.Equal(vocab.BookingRefunded, cancel.result)
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

// staffCancelAfter sends the staff-cancel Update after d and records its
// outcome.
func (s *sagaSuite) staffCancelAfter(d time.Duration) *outcome[vocab.BookingStatus] {
	return updateAfter[vocab.BookingStatus](s.env, workflows.UpdateStaffCancel, d,
		workflows.StaffCancelRequest{Staff: "olga", Reason: "the artist is ill"})
}

// providerAttempt is one attempt of a provider step as the activity saw it.
type providerAttempt struct {
	local   bool
	attempt int32
	key     string
}

// failingCapture makes the capture fail fails times, then succeed,
// recording every attempt.
func (s *sagaSuite) failingCapture(fails int, after time.Duration) *[]providerAttempt {
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

// upserts records every search attribute the booking upserts, in order, as
// "Name=value".
func (s *sagaSuite) upserts() *[]string {
	var seen []string
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		for k, v := range sa.GetUntypedValues() {
			seen = append(seen, fmt.Sprintf("%s=%v", k.GetName(), v))
		}
	}).Return(nil)
	return &seen
}

// lastOf is the last of seen that starts with prefix, or "".
func lastOf(seen []string, prefix string) string {
	for i := len(seen) - 1; i >= 0; i-- {
		if strings.HasPrefix(seen[i], prefix) {
			return seen[i]
		}
	}
	return ""
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
func (s *sagaSuite) staffUpdateAfter(name string, d time.Duration) *outcome[any] {
	return updateAfter[any](s.env, name, d, workflows.StaffCancelRequest{Staff: "olga", Reason: "provider back up"})
}

// captureSucceededAt runs a capture that fails from the sale (2 minutes
// in) until clears, optionally with retry-now at retryAt, and answers when
// the capture succeeded.
func (s *sagaSuite) captureSucceededAt(clears time.Duration, retryAt time.Duration) (time.Duration, *outcome[any]) {
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
	var retry *outcome[any]
	if retryAt > 0 {
		retry = s.staffUpdateAfter(workflows.UpdateRetryNow, retryAt)
	}
	s.checkoutAfter(time.Minute, "pm_card_visa")
	s.paymentAfter(2*time.Minute, vocab.EventAuthorised, total, "evt_1")
	s.start()
	s.Equal(vocab.BookingPaid, s.result().Status)
	return succeeded, retry
}

// Local activities are recorded with the workflow task that ran them: when
// that task is lost (its worker killed, or starved past the task's
// timeout), the next worker replays the history and runs them again. A
// provider event that overtook the checkout's answer is checked with the
// provider, then confirmed, captured and issued in one task; replayed, the
// check finds the intent captured by that lost run while the database
// already says PAID. The saga used to take that for money nobody asked to
// capture and refund it in full, leaving the booking PAID with valid
// tickets and (once the lost run's capture recorded itself) its payment
// CAPTURED: the chaos run's one payment captured and refunded in full whose
// booking stayed PAID/CAPTURED. It carries its own sale on instead.
func (s *bookingSuite) TestAnEventRunAgainAfterALostTaskSoldAndCapturedItsBookingFinishesTheSaleInsteadOfRefunding() {
	start := s.env.Now()
	hold := activities.HoldInfo{Status: vocab.BookingPendingPayment, UserID: "asha", EventID: "evt",
		ExpiresAt: start.Add(10 * time.Minute), Total: total, CancelBy: start.Add(24 * time.Hour)}
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).Return(hold, nil).Once()
	paid := hold
	paid.Status = vocab.BookingPaid
	s.env.OnActivity(workflows.ActivityLoadBooking, mock.Anything, mock.Anything).Return(paid, nil)
	// The database answers for the hold as it stands: PAID.
	s.env.OnActivity(workflows.ActivityExpireHold, mock.Anything, mock.Anything).Return(vocab.BookingPaid, nil)
	s.env.OnActivity(workflows.ActivityReleaseHold, mock.Anything, mock.Anything).Return(vocab.BookingPaid, nil)
	s.env.OnActivity(workflows.ActivityAuthorise, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.AuthoriseResult{IntentID: "pi_1", ClientSecret: "s", Status: vocab.IntentRequiresCapture}, nil)
	co := s.checkoutAfter(time.Minute, "pm_card_visa")
	s.env.RegisterDelayedCallback(func() {
		// The lost run confirmed and captured: the provider says so now.
		s.provider["pi_1"] = activities.ProviderPayment{Known: true, Status: vocab.IntentSucceeded, Amount: total,
			ClaimedBookingID: bookingID, BookingID: bookingID}
		s.env.SignalWorkflow(workflows.SignalPayment, workflows.PaymentEvent{EventID: "evt_1", Type: vocab.EventAuthorised,
			IntentID: "pi_1", Amount: total, BookingID: bookingID, ClaimedBookingID: bookingID})
	}, time.Minute+10*time.Second)
	s.start()
	s.NoError(co.err)
	r := s.result()
	s.Equal(vocab.BookingPaid, r.Status)
	s.NotEmpty(r.TicketIDs, "the sale is carried on to its tickets")
	s.Zero(s.calls[workflows.ActivityRefund], "the sale's own captured money is not refunded")
	s.Zero(s.calls[workflows.ActivityVoid])
	s.Equal(1, s.calls[workflows.ActivityConfirmSale])
	s.Equal(1, s.calls[workflows.ActivityCapture])
	s.Equal(1, s.calls[workflows.ActivityIssueTickets])
	s.Equal(1, s.calls[workflows.ActivityNotify])
}
