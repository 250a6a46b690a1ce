package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/vocab"
)

// The workflows call activities as method values on these nil pointers: the
// compiler checks each call's arguments against the method, and the worker
// runs the registered method of the real struct (a nil receiver is never
// called).
var (
	a  *activities.Booking
	h  *activities.Holds
	wa *activities.Walks
	rc *activities.Reconciliation
)

// Booking is the booking saga of one hold, started with its first checkout
// Update: adopt the committed hold; fraud and authorise inside the checkout
// Update; wait for a further checkout, release or the expiry timer at the
// hold's absolute expires_at; wait for the provider's verified event or the timer;
// confirm, capture, issue tickets, notify. Each money step has a
// compensation, registered before the step runs.
func Booking(ctx workflow.Context, in BookingInput) (BookingResult, error) {
	if in.LateEventGrace <= 0 {
		in.LateEventGrace = DefaultLateEventGrace
	}
	if in.MaxAttempts <= 0 {
		in.MaxAttempts = 3
	}
	b := &booking{in: in, step: vocab.StepAdopting, status: vocab.BookingPendingPayment, seen: map[string]bool{}}
	res, err := b.run(ctx)
	if err != nil && ctx.Err() != nil {
		return b.cancelled(ctx, err)
	}
	return res, err
}

// cancelled compensates a booking whose workflow was cancelled (the UI's
// "Request Cancellation"): under a disconnected context, so the
// compensations run although the workflow's own context is done, an unsold
// hold is released and its payment voided, a sale in progress undone, and
// late provider events are still voided or refunded for the grace period.
// A paid booking keeps its sale. The workflow then ends as cancelled.
func (b *booking) cancelled(ctx workflow.Context, cause error) (BookingResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if workflow.GetVersion(dctx, versionCancelCompensates, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return b.result(), cause
	}
	if b.status == vocab.BookingPendingPayment {
		b.setStep(dctx, vocab.StepCompensating)
		if b.comp.has(undoSale) {
			// Cancelled between the confirm and the capture's answer.
			if err := b.comp.run(dctx); err != nil {
				return b.result(), err
			}
			b.setStatus(dctx, vocab.BookingCancelled)
		} else if err := b.endHold(dctx, h.ReleaseHold, vocab.BookingCancelled); err != nil {
			return b.result(), err
		}
	}
	// A cancel during the late-event wait just ends it: the compensation
	// ran, and the reconciliation covers money arriving later.
	if b.status != vocab.BookingPaid && b.step != vocab.StepDone && b.step != vocab.StepAwaitingLate {
		if _, err := b.afterUnsold(dctx); err != nil {
			return b.result(), err
		}
	}
	return b.result(), cause
}

type booking struct {
	in       BookingInput
	hold     activities.HoldInfo
	loaded   bool // the hold has been adopted from the database
	deadline time.Time
	step     vocab.Step
	status   vocab.BookingStatus

	attempts int
	intentID string
	// authorisedIntent is the intent the checkout's own call to the
	// provider found authorised: its event need not be checked again.
	authorisedIntent string
	checkoutBusy     bool
	extended         bool

	expired     bool // the expiry timer fired
	timerGen    int
	cancelTimer workflow.CancelFunc

	release     bool // the fan let go
	denied      bool // fraud said no
	declinedOut bool // attempts used up
	events      []PaymentEvent
	seen        map[string]bool

	comp    compensations
	settled bool // the payment was voided or refunded
	byStaff bool // the cancel came from staff: no fan policy applies
	flagged string
	tickets []string

	// pending is the provider step running as a regular activity, if any:
	// what retry-now acts on.
	pending *escalated
	// closing: support asked to refund and close (refund-and-close).
	closing bool

	// attrs: this booking upserts the support search attributes
	// (versionSupportAttrs); stepAttr and attention are their last values.
	attrs     bool
	stepAttr  vocab.Step
	attention bool
}

// undoKind names what a compensation undoes, so one registered early (the
// void, armed before the authorisation) is not registered twice.
type undoKind int

const (
	undoAuthorisation undoKind = iota + 1 // void
	undoSale                              // cancel the sale
	undoCapture                           // refund
)

type compensation struct {
	kind undoKind
	run  func(workflow.Context) error
}

// compensations run in reverse order of registration.
type compensations []compensation

func (c *compensations) add(kind undoKind, f func(workflow.Context) error) {
	*c = append(*c, compensation{kind, f})
}

func (c compensations) has(kind undoKind) bool {
	for _, x := range c {
		if x.kind == kind {
			return true
		}
	}
	return false
}

func (c *compensations) run(ctx workflow.Context) error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i].run(ctx))
	}
	*c = nil
	return errors.Join(errs...)
}

// armVoid registers the void of the booking's authorisation unless it is
// registered already: the checkout arms it before asking for the
// authorisation, and a sale or a mismatch reached without a checkout of this
// run arms it before acting, so whatever fails later gives the money back.
func (b *booking) armVoid() {
	if !b.comp.has(undoAuthorisation) {
		b.comp.add(undoAuthorisation, b.voidPayment)
	}
}

// Activity options. Every step is short (milliseconds), so every step starts
// as a local activity: it runs inside the workflow task that asked for it and
// costs no extra workflow task, which is what bounds bookings per second on
// the Temporal server. Database steps retry until the database answers; a
// provider step that fails continues as a regular activity (callProvider in
// steps.go), so support sees it pending with its attempts.
func dbCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: retryWindow,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: time.Minute},
	})
}

// retryWindow is how long a step that must wait out an outage (a database
// step, a provider step of a booking started before provider-steps-visible)
// keeps retrying: a day. Left unset, a local activity's ScheduleToClose
// window is its StartToClose timeout, so its retries stopped after that one
// attempt's time: a database step then failed the whole booking when
// PostgreSQL was down for more than ten seconds (PAID, money captured, no
// tickets). A backoff longer than the workflow task's 10 s waits on a
// server timer instead of holding the task open, so an outage parks the
// booking; at one retry a minute a day adds about 7,000 events to its
// history, inside Temporal's limits, which an unbounded window would not be.
const retryWindow = 24 * time.Hour

// fraudCtx bounds the fraud check, which reads the database and asks the
// provider for the card's fingerprint: past its budget the checkout answers
// unavailable instead of keeping the fan waiting.
func fraudCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 20 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 5 * time.Second},
		Summary:                "fraud check",
	})
}

// providerCtx bounds a provider call's retries by budget (0: retryWindow):
// how bookings started before versionVisibleSteps run every provider step.
func providerCtx(ctx workflow.Context, budget time.Duration) workflow.Context {
	if budget <= 0 {
		budget = retryWindow
	}
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    15 * time.Second,
		ScheduleToCloseTimeout: budget,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second},
	})
}

// setStep moves the booking to step s and tells the UI (current details).
func (b *booking) setStep(ctx workflow.Context, s vocab.Step) {
	b.step = s
	b.details(ctx, "step "+string(s))
	if b.attrs && s != b.stepAttr {
		b.stepAttr = s
		_ = workflow.UpsertTypedSearchAttributes(ctx, stepAttr.ValueSet(string(s)))
	}
}

// dbStatus upserts the status the database has just moved the booking to,
// so the list never lags it (a sale confirmed is PAID in the database
// while its capture still retries); the saga's own status follows when the
// step completes.
func (b *booking) dbStatus(ctx workflow.Context, s vocab.BookingStatus) {
	if b.attrs {
		_ = workflow.UpsertTypedSearchAttributes(ctx, statusAttr.ValueSet(string(s)))
	}
}

// setAttention raises or clears EncoreAttention.
func (b *booking) setAttention(ctx workflow.Context, on bool) {
	if b.attrs && b.attention != on {
		b.attention = on
		_ = workflow.UpsertTypedSearchAttributes(ctx, attentionAttr.ValueSet(on))
	}
}

func (b *booking) setStatus(ctx workflow.Context, s vocab.BookingStatus) {
	b.status = s
	_ = workflow.UpsertTypedSearchAttributes(ctx, statusAttr.ValueSet(string(s)))
}

func (b *booking) result() BookingResult {
	return BookingResult{Status: b.status, IntentID: b.intentID, TicketIDs: b.tickets, Flagged: b.flagged}
}

func (b *booking) run(ctx workflow.Context) (BookingResult, error) {
	b.attrs = workflow.GetVersion(ctx, versionSupportAttrs, workflow.DefaultVersion, 1) == 1
	b.stepAttr = vocab.StepAdopting // set at start (startAttributes)
	if err := workflow.SetQueryHandler(ctx, QueryStep, func() (vocab.Step, error) { return b.step, nil }); err != nil {
		return BookingResult{}, err
	}
	// Handlers come first: with Update-With-Start the checkout arrives in
	// this very first workflow task, before the hold is adopted; the
	// handler waits for adoption (b.loaded) before it acts.
	b.listen(ctx)
	if err := (updates{b}).register(ctx); err != nil {
		return BookingResult{}, err
	}
	if err := workflow.ExecuteLocalActivity(db(ctx, "adopt the hold"), a.LoadBooking, b.in.ReservationID).Get(ctx, &b.hold); err != nil {
		return BookingResult{}, err
	}
	b.deadline = b.hold.ExpiresAt
	b.loaded = true
	if b.attrs && b.hold.Total != b.in.Total {
		// Started without the total (or it differs): the hold's is the one
		// charged.
		_ = workflow.UpsertTypedSearchAttributes(ctx, amountAttr.ValueSet(b.hold.Total.Amount))
	}
	if b.hold.Status != vocab.BookingPendingPayment && !b.soldByALostTask(ctx) {
		// The hold ended (expired, released) between the checkout's check
		// and this start: the checkout that came with the start gets its
		// refusal first.
		b.status = b.hold.Status
		b.setStep(ctx, vocab.StepDone)
		err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return b.result(), err
	}
	b.setStatus(ctx, vocab.BookingPendingPayment)

	b.setStep(ctx, vocab.StepAwaitingCheckout)
	b.armTimer(ctx)
	for b.status == vocab.BookingPendingPayment {
		if err := b.waitOnce(ctx); err != nil {
			return b.result(), err
		}
	}
	if b.status != vocab.BookingPaid {
		return b.afterUnsold(ctx)
	}
	// The hold's expiry no longer matters once sold: cancel its timer, or it
	// wakes the booking for a workflow task that does nothing. Versioned:
	// bookings sold before this change let the timer fire.
	if workflow.GetVersion(ctx, versionCancelExpiryAfterSale, workflow.DefaultVersion, 1) == 1 && b.cancelTimer != nil {
		b.cancelTimer()
	}
	return b.afterPaid(ctx)
}

// listen moves signals into the booking's state.
func (b *booking) listen(ctx workflow.Context) {
	release := workflow.GetSignalChannel(ctx, SignalRelease)
	payments := workflow.GetSignalChannel(ctx, SignalPayment)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				b.release = true
			})
			sel.AddReceive(payments, func(c workflow.ReceiveChannel, _ bool) {
				var ev PaymentEvent
				c.Receive(ctx, &ev)
				// Providers redeliver events: a duplicate is dropped so acting on
				// an event stays harmless however often it comes.
				if !b.seen[ev.EventID] {
					b.seen[ev.EventID] = true
					b.events = append(b.events, ev)
				}
			})
			sel.Select(ctx)
		}
	})
}

// armTimer starts the expiry timer at the hold's absolute deadline. One
// timer lives per deadline (not one per wait), so a signal costs no new
// timer; extending the hold cancels the old one.
func (b *booking) armTimer(ctx workflow.Context) {
	if b.cancelTimer != nil {
		b.cancelTimer()
	}
	b.timerGen++
	b.expired = false
	gen := b.timerGen
	tctx, cancel := workflow.WithCancel(ctx)
	b.cancelTimer = cancel
	summary := "hold expires"
	if b.extended {
		summary = "3-D Secure window"
	}
	f := workflow.NewTimerWithOptions(tctx, max(b.deadline.Sub(workflow.Now(ctx)), 0), workflow.TimerOptions{Summary: summary})
	workflow.Go(ctx, func(ctx workflow.Context) {
		if f.Get(ctx, nil) == nil && gen == b.timerGen {
			b.expired = true
		}
	})
}

// waitOnce waits for the next thing to happen while the hold is pending and
// acts on it.
func (b *booking) waitOnce(ctx workflow.Context) error {
	deadline := b.deadline
	if err := workflow.Await(ctx, func() bool {
		return b.release || b.denied || b.declinedOut || b.expired || len(b.events) > 0 || !b.deadline.Equal(deadline)
	}); err != nil {
		return err
	}
	switch {
	case len(b.events) > 0:
		ev := b.events[0]
		b.events = b.events[1:]
		return b.onPendingEvent(ctx, ev)
	case !b.deadline.Equal(deadline):
		b.armTimer(ctx) // the hold was extended for 3-D Secure
		return nil
	case b.release:
		return b.endHold(ctx, h.ReleaseHold, vocab.BookingCancelled)
	case b.denied, b.declinedOut:
		return b.endHold(ctx, h.ReleaseHold, vocab.BookingFailed)
	case b.expired:
		return b.endHold(ctx, h.ExpireHold, vocab.BookingExpired)
	}
	return nil
}

// soldByALostTask says the hold this run adopts is PAID because this very
// run sold it in workflow tasks that were lost (their local activities
// confirmed and captured, then were never recorded), not because it ended
// before the start: only this saga confirms its sale, and a provider event
// for it is waiting. The run then goes on as the lost tasks did, the event
// selling again (the confirm finds it PAID, the capture is keyed, the
// tickets too); before (versioned adopted-sale-carried-on), it ended at once
// as PAID with no ticket issued.
func (b *booking) soldByALostTask(ctx workflow.Context) bool {
	return b.hold.Status == vocab.BookingPaid && len(b.events) > 0 &&
		workflow.GetVersion(ctx, versionAdoptedSaleCarriedOn, workflow.DefaultVersion, 1) == 1
}

// endHold gives the seats back. The reservation row decides: if the hold was
// already paid or ended, its real status is adopted.
func (b *booking) endHold(ctx workflow.Context, end func(context.Context, string) (vocab.BookingStatus, error), status vocab.BookingStatus) error {
	var ended vocab.BookingStatus
	if err := workflow.ExecuteLocalActivity(db(ctx, "give the seats back"), end, b.in.ReservationID).Get(ctx, &ended); err != nil {
		return err
	}
	if ended == vocab.BookingPaid {
		if b.intentID != "" && workflow.GetVersion(ctx, versionAdoptedSaleCarriedOn, workflow.DefaultVersion, 1) == 1 {
			// Only this saga confirms its sale, and this run has not: a
			// workflow task that confirmed it (and perhaps captured) was
			// lost, and its local activities were never recorded. The sale
			// is carried on, not adopted half-done: the confirm finds it
			// PAID, the capture is keyed, the tickets too.
			return b.sell(ctx)
		}
		b.setStatus(ctx, vocab.BookingPaid)
		return nil
	}
	if ended == vocab.BookingPendingPayment {
		// The database has not expired the hold (its deadline moved, or the
		// clocks differ): adopt its expiry and wait again.
		if err := workflow.ExecuteLocalActivity(db(ctx, "read the hold's expiry again"), a.LoadBooking, b.in.ReservationID).Get(ctx, &b.hold); err != nil {
			return err
		}
		b.deadline = b.hold.ExpiresAt.Add(time.Second)
		b.armTimer(ctx)
		return nil
	}
	if status == vocab.BookingFailed {
		ended = vocab.BookingFailed
		if b.flagged == "" {
			reason := "payment declined on every attempt"
			if b.denied {
				reason = "refused by the fraud check"
			}
			if err := b.flag(ctx, reason); err != nil {
				return err
			}
		}
	}
	b.setStatus(ctx, ended)
	return nil
}

// checked is ev as the provider and the database tell it: the payment's
// status, amount and both booking references read afresh, the event's type
// the one that status means. ok is false when there is nothing to act on:
// the provider does not know the intent (staff are told), could not be
// asked within the step's budget (the hold's expiry gives the payment
// back), or the payment has not settled either way yet (its own event will
// come). Bookings started before this change act on the signal as sent.
func (b *booking) checked(ctx workflow.Context, ev PaymentEvent) (PaymentEvent, bool, error) {
	if workflow.GetVersion(ctx, versionProviderEventsChecked, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return ev, true, nil
	}
	if ev.Type == vocab.EventAuthorised && ev.IntentID != "" && ev.IntentID == b.authorisedIntent && ev.Amount == b.hold.Total &&
		ev.BookingID == b.in.ReservationID && ev.ClaimedBookingID == b.in.ReservationID {
		// The provider told the checkout so itself, for the intent it made
		// for this hold's total: the event only repeats it (the common path,
		// no extra call).
		return ev, true, nil
	}
	var p activities.ProviderPayment
	if err := b.callProvider(ctx, checkStep(ev), &p); err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			return ev, false, err
		}
		return ev, false, b.flag(ctx, "event "+ev.EventID+" could not be checked with the provider: "+err.Error())
	}
	if !p.Known {
		return ev, false, b.flag(ctx, "event "+ev.EventID+" names a payment the provider does not know")
	}
	ev.Status, ev.Amount = string(p.Status), p.Amount
	ev.BookingID, ev.ClaimedBookingID = p.BookingID, p.ClaimedBookingID
	switch p.Status {
	case vocab.IntentRequiresCapture:
		ev.Type = vocab.EventAuthorised
	case vocab.IntentSucceeded:
		ev.Type = vocab.EventSucceeded
	case vocab.IntentRequiresPaymentMethod:
		ev.Type = vocab.EventFailed
	case vocab.IntentCanceled:
		ev.Type = vocab.EventCanceled
	default:
		return ev, false, nil
	}
	return ev, true, nil
}

// onPendingEvent handles a provider event while the hold is pending.
func (b *booking) onPendingEvent(ctx workflow.Context, ev PaymentEvent) error {
	ev, ok, err := b.checked(ctx, ev)
	if !ok || err != nil {
		return err
	}
	if ev.BookingID != b.in.ReservationID || ev.ClaimedBookingID != b.in.ReservationID ||
		(b.intentID != "" && ev.IntentID != b.intentID) {
		// A payment is sold on only if its reference names this booking and
		// its intent; one that is not this booking's own is left to the
		// reconciliation.
		return b.flag(ctx, "event "+ev.EventID+" names another booking or payment")
	}
	if b.intentID == "" {
		b.intentID = ev.IntentID // the webhook overtook the checkout answer
	}
	switch ev.Type {
	case vocab.EventAuthorised:
		if ev.Amount != b.hold.Total {
			// A payment whose amount differs from the hold's total is never
			// sold on: it is voided and flagged, and the seats go back.
			if err := b.flag(ctx, "authorised amount "+ev.Amount.Currency+" differs from the hold's total"); err != nil {
				return err
			}
			b.armVoid()
			if err := b.comp.run(ctx); err != nil {
				return err
			}
			return b.endHold(ctx, h.ReleaseHold, vocab.BookingFailed)
		}
		return b.sell(ctx)
	case vocab.EventFailed:
		// A 3-D Secure challenge failed: the fan may try again. The same
		// event follows every decline, and one arriving while a checkout
		// runs (its own, or an earlier attempt's, late) must not end the
		// hold under it: that checkout's answer decides the attempt.
		if b.step != vocab.StepAwaitingPayment &&
			workflow.GetVersion(ctx, versionFailedEventWaitsForCheckout, workflow.DefaultVersion, 1) == 1 {
			return nil
		}
		b.setStep(ctx, vocab.StepAwaitingCheckout)
		if b.attempts >= b.in.MaxAttempts {
			b.declinedOut = true
		}
	case vocab.EventSucceeded:
		if paid, err := b.soldAlready(ctx); err != nil || paid {
			if err != nil {
				return err
			}
			return b.sell(ctx)
		}
		// Money captured that we never asked to capture: give it back.
		return b.refundPayment(ctx)
	}
	return nil
}

// soldAlready says the database has this booking PAID while the saga still
// holds it pending: its own sale was confirmed (and its intent captured) by
// local activities that ran in a workflow task whose completion was lost (a
// worker killed or starved past the task's timeout), so they were never
// recorded, and this run re-executes the decision from the provider event.
// The provider now reports the intent captured; that money is this sale's,
// and the sale is carried on (the confirm and the capture are idempotent,
// the tickets keyed) instead of refunded as money nobody asked for. Before
// (versioned captured-sale-resumed), the saga refunded it in full while the
// database kept the booking PAID, its tickets valid and, once the lost
// run's capture recorded itself, its payment CAPTURED.
func (b *booking) soldAlready(ctx workflow.Context) (bool, error) {
	if workflow.GetVersion(ctx, versionCapturedSaleResumed, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false, nil
	}
	var now activities.HoldInfo
	if err := workflow.ExecuteLocalActivity(db(ctx, "read whether the sale was confirmed already"), a.LoadBooking,
		b.in.ReservationID).Get(ctx, &now); err != nil {
		return false, err
	}
	return now.Status == vocab.BookingPaid, nil
}

// sell confirms, captures, issues and notifies.
func (b *booking) sell(ctx workflow.Context) error {
	b.setStep(ctx, vocab.StepConfirming)
	b.armVoid() // undoes the authorisation (armed by the checkout, if any)
	var ok bool
	b.comp.add(undoSale, b.cancelSale) // undoes the confirm below
	if err := workflow.ExecuteLocalActivity(db(ctx, "confirm the sale: seats held -> sold"), a.ConfirmSale, b.in.ReservationID).Get(ctx, &ok); err != nil {
		if isUnsellable(err) && workflow.GetVersion(ctx, versionUnsellableCompensates, workflow.DefaultVersion, 1) == 1 {
			return b.unsellable(ctx, err)
		}
		return err
	}
	if !ok {
		// The hold expired or ended first: no sale, the money goes back.
		b.setStep(ctx, vocab.StepCompensating)
		b.comp = b.comp[:len(b.comp)-1]
		if err := b.comp.run(ctx); err != nil {
			return err
		}
		var ended vocab.BookingStatus
		if err := workflow.ExecuteLocalActivity(db(ctx, "expire the hold"), h.ExpireHold, b.in.ReservationID).Get(ctx, &ended); err != nil {
			return err
		}
		b.setStatus(ctx, ended)
		return nil
	}
	b.dbStatus(ctx, vocab.BookingPaid) // the confirm made the database say PAID
	b.setStep(ctx, vocab.StepCapturing)
	var captured activities.CaptureResult
	err := b.callProvider(ctx, b.steps().capture(b.intentID), &captured)
	if err != nil && b.closing {
		// Support closed the booking while the capture kept failing: the
		// sale is undone and the money given back (a refund of an
		// authorisation never captured voids it).
		b.setStep(ctx, vocab.StepCompensating)
		b.comp = nil
		b.comp.add(undoCapture, b.refundPayment)
		b.comp.add(undoSale, b.cancelSale)
		if cerr := b.comp.run(ctx); cerr != nil {
			return cerr
		}
		ended := vocab.BookingRefunded
		if workflow.GetVersion(ctx, versionClosedAsTheDatabaseSays, workflow.DefaultVersion, 1) == 1 {
			if err := workflow.ExecuteLocalActivity(db(ctx, "read how the booking ended"), a.SettledStatus,
				b.in.ReservationID).Get(ctx, &ended); err != nil {
				return err
			}
		}
		b.setStatus(ctx, ended)
		return nil
	}
	if err != nil {
		// The authorisation could not be captured within the hour: undo the
		// sale and the authorisation, and tell staff.
		b.setStep(ctx, vocab.StepCompensating)
		_ = b.flag(ctx, "capture failed: "+err.Error())
		if cerr := b.comp.run(ctx); cerr != nil {
			return cerr
		}
		b.setStatus(ctx, vocab.BookingFailed)
		return nil
	}
	b.comp = nil // the sale stands; a later cancel refunds explicitly
	b.setStatus(ctx, vocab.BookingPaid)
	b.setStep(ctx, vocab.StepIssuing)
	if err := workflow.ExecuteLocalActivity(db(ctx, "issue one ticket per seat"), a.IssueTickets, b.in.ReservationID).Get(ctx, &b.tickets); err != nil {
		if isNotPaid(err) {
			return b.ticketsRefused(ctx, err)
		}
		return err
	}
	if b.hold.Resale {
		// Only bookings made since resale exist take this path: no recorded
		// history meets it, so it needs no version marker.
		if err := b.paySellers(ctx); err != nil {
			return err
		}
	}
	b.setStep(ctx, vocab.StepNotifying)
	nctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// Eight attempts take about three minutes; the window must hold
		// them (unset, it would be one attempt's 30 s).
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 2 * time.Second, MaximumInterval: time.Minute, MaximumAttempts: 8},
		Summary:                "e-mail the confirmation",
	})
	// A failing notification never blocks or undoes a sale.
	if err := workflow.ExecuteLocalActivity(nctx, a.Notify, b.in.ReservationID, activities.NotifyConfirmation).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("confirmation not sent", "error", err)
	}
	b.setStep(ctx, vocab.StepPaid)
	return nil
}

// paySellers pays each seller of a resale booking's listings, a partial
// refund of what they paid under the listing's step key. It is the last
// money step: the buyer's sale and tickets stand whatever it meets. A
// payout the provider refuses for good is recorded as owed by the
// activity; one still failing after its budget is flagged for staff, who
// see it pending in the Temporal UI meanwhile.
func (b *booking) paySellers(ctx workflow.Context) error {
	b.setStep(ctx, vocab.StepPayingSellers)
	if err := b.callProvider(ctx, b.steps().payout(), nil); err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			return err
		}
		return b.flag(ctx, "seller payout not made: "+err.Error())
	}
	return nil
}

// isNotPaid says the database refused tickets because the booking is no
// longer PAID.
func isNotPaid(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == activities.ErrTypeNotPaid
}

// ticketsRefused ends a sale whose booking stopped being PAID between its
// capture and its tickets: no ticket was written (the database refuses them
// to a booking that is not PAID), so the captured money goes back under the
// refund step key (a refund already made by whoever ended the booking is
// not repeated) and staff are told. Only reached through a refusal that did
// not exist before, so no recorded history takes this path.
func (b *booking) ticketsRefused(ctx workflow.Context, cause error) error {
	b.setStep(ctx, vocab.StepCompensating)
	b.tickets = nil
	if err := b.flag(ctx, "tickets refused after the capture: "+cause.Error()); err != nil {
		return err
	}
	if err := b.refundPayment(ctx); err != nil {
		return err
	}
	b.setStatus(ctx, vocab.BookingRefunded)
	return nil
}

// voidPayment and refundPayment give money back; they retry until the
// provider answers (no budget: money must not stay taken).
func (b *booking) voidPayment(ctx workflow.Context) error {
	if b.intentID == "" || b.settled {
		return nil
	}
	return b.settle(b.voidIntent(ctx, b.intentID))
}

func (b *booking) voidIntent(ctx workflow.Context, intentID string) error {
	return b.callProvider(ctx, b.steps().void(intentID, 0), nil)
}

func (b *booking) refundPayment(ctx workflow.Context) error {
	return b.settle(b.refundIntent(ctx, b.intentID))
}

func (b *booking) refundIntent(ctx workflow.Context, intentID string) error {
	return b.callProvider(ctx, b.steps().refund(intentID), nil)
}

// settle records whether giving the money back (a void, a refund) worked,
// so a later compensation does not give it back again; it passes err on.
func (b *booking) settle(err error) error {
	b.settled = err == nil
	return err
}

func (b *booking) cancelSale(ctx workflow.Context) error {
	if err := workflow.ExecuteLocalActivity(db(ctx, "cancel the sale: tickets revoked, seats back"), a.CancelSale, b.in.ReservationID).Get(ctx, nil); err != nil {
		return err
	}
	b.dbStatus(ctx, vocab.BookingCancelled)
	return nil
}

func (b *booking) flag(ctx workflow.Context, reason string) error {
	b.flagged = reason
	return workflow.ExecuteLocalActivity(db(ctx, "flag the payment for staff"), a.FlagPayment, b.in.ReservationID, reason).Get(ctx, nil)
}

// afterUnsold compensates any payment of a hold that ended without a sale,
// then listens for late provider events for a grace period: an authorisation
// after expiry is voided, a success after expiry is refunded.
func (b *booking) afterUnsold(ctx workflow.Context) (BookingResult, error) {
	b.setStep(ctx, vocab.StepCompensating)
	if err := workflow.Await(ctx, func() bool { return !b.checkoutBusy }); err != nil {
		return b.result(), err
	}
	switch {
	case b.intentID != "":
		b.comp = nil
		b.comp.add(undoAuthorisation, b.voidPayment)
		if err := b.comp.run(ctx); err != nil {
			return b.result(), err
		}
	case b.attempts > 0:
		// An authorisation was asked for but its answer never came: look it
		// up by booking and void it. If none turns up within the budget,
		// nothing was created; the reconciliation double-checks.
		err := b.callProvider(ctx, b.steps().void("", 15*time.Minute), nil)
		if err != nil {
			if ferr := b.flag(ctx, "no payment found to void after a lost authorisation answer"); ferr != nil {
				return b.result(), ferr
			}
		}
	}
	b.setStep(ctx, vocab.StepAwaitingLate)
	end := workflow.Now(ctx).Add(b.in.LateEventGrace)
	for {
		remaining := end.Sub(workflow.Now(ctx))
		if remaining <= 0 {
			break
		}
		ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: remaining,
			TimerOptions: workflow.TimerOptions{Summary: "late provider events"}}, func() bool { return len(b.events) > 0 })
		if err != nil {
			return b.result(), err
		}
		if !ok {
			break
		}
		ev, ok, err := b.checked(ctx, b.events[0])
		b.events = b.events[1:]
		if err != nil {
			return b.result(), err
		}
		if !ok {
			continue
		}
		if ev.BookingID != b.in.ReservationID || ev.ClaimedBookingID != b.in.ReservationID {
			if err := b.flag(ctx, "late event "+ev.EventID+" names another booking"); err != nil {
				return b.result(), err
			}
			continue
		}
		// The event's own intent is given back (it is this booking's: the
		// database routed it here), whichever attempt created it.
		switch ev.Type {
		case vocab.EventAuthorised:
			if err := b.voidIntent(ctx, ev.IntentID); err != nil {
				return b.result(), err
			}
		case vocab.EventSucceeded:
			if err := b.refundIntent(ctx, ev.IntentID); err != nil {
				return b.result(), err
			}
		}
	}
	b.setStep(ctx, vocab.StepDone)
	return b.result(), nil
}

// followSettledOutside shows, while the booking stays open after its sale,
// the status the provider settled it at outside the saga. The database
// holds that truth and every API reads it there; the signal moves only the
// list's EncoreBookingStatus, so a forged one changes nothing the saga does.
// It adds no command until a signal arrives, so histories recorded before
// it replay unchanged.
func (b *booking) followSettledOutside(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalSettledOutside)
	for {
		var s SettledOutside
		ch.Receive(ctx, &s)
		switch s.Status {
		case vocab.BookingDisputed, vocab.BookingChargedBack, vocab.BookingPaid, vocab.BookingRefunded:
			b.dbStatus(ctx, s.Status)
		}
	}
}

// afterPaid keeps the booking open until the event's cancellation deadline,
// so the fan can cancel within policy through the cancel Update.
func (b *booking) afterPaid(ctx workflow.Context) (BookingResult, error) {
	workflow.Go(ctx, b.followSettledOutside)
	remaining := b.hold.CancelBy.Sub(workflow.Now(ctx))
	if remaining > 0 {
		if _, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: remaining,
			TimerOptions: workflow.TimerOptions{Summary: "cancellation deadline"}}, func() bool {
			return b.status == vocab.BookingRefunded || b.status == vocab.BookingCancelled
		}); err != nil {
			return b.result(), err
		}
	}
	// A cancel accepted before the deadline finishes its refund first.
	if err := workflow.Await(ctx, func() bool {
		return b.step != vocab.StepCancelling && workflow.AllHandlersFinished(ctx)
	}); err != nil {
		return b.result(), err
	}
	// Late duplicates of events already acted on need no answer; the
	// reconciliation catches anything else.
	if b.step == vocab.StepPaid {
		b.setStep(ctx, vocab.StepDone)
	}
	return b.result(), nil
}
