package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/money"
)

// providerAttempt bounds one call to the payment provider.
const providerAttempt = 15 * time.Second

// attentionAfter is how long a provider step may keep failing before the
// booking asks for staff (EncoreAttention): past the local attempt and the
// regular activity's first three attempts (0, 0.5 s, 1.5 s, 3.5 s).
const attentionAfter = 5 * time.Second

// providerRetry is how a provider step retries, local or regular: the same
// policy either way, so escalating a step changes where it is seen, not how
// often the provider is asked.
func providerRetry() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}
}

// providerStep is one money move at the payment provider: the activity, its
// arguments (which name the booking, so the activity derives the same step
// key however often and wherever it runs), and how long it may take.
type providerStep struct {
	// name is what support reads: "capture", "void", "refund", "authorise".
	name string
	// key is the step's idempotency key at the provider, for the summary.
	key string
	// label, when set, is the whole summary (a read has no step key).
	label  string
	amount money.Money
	// budget bounds the step's retries; 0 retries until it succeeds (money
	// must not stay taken).
	budget time.Duration
	// closable: refund-and-close stops the step (a capture; never a step
	// that gives money back).
	closable bool
	fn       any
	args     []any
}

// summary is the one line the Temporal UI shows beside the activity.
func (s providerStep) summary() string {
	if s.label != "" {
		return s.label
	}
	if s.amount.Currency == "" {
		return s.name + ", key " + s.key
	}
	return s.name + " " + formatMoney(s.amount) + ", key " + s.key
}

// formatMoney writes an amount for people: two decimals, the currency after.
func formatMoney(m money.Money) string {
	sign, n := "", m.Amount
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, n/100, n%100, m.Currency)
}

// errClosing ends a provider step that support closed (refund-and-close)
// before it succeeded.
var errClosing = temporal.NewNonRetryableApplicationError("closed by support before the step succeeded", "closed-by-support", nil)

// escalated is the provider step running as a regular activity, for
// retry-now and the search attributes.
type escalated struct {
	name string
	gen  int // bumped by retry-now
}

// callProvider runs a provider step. Its first attempt is a local activity:
// the common case (the provider answers) costs no extra workflow task. A
// retryable failure continues as a regular activity with the same
// arguments, step key and retry policy, so the Temporal UI shows a pending
// activity with its attempts, last failure, next retry and inputs, and its
// Pause and Reset act on it. The workflow drives the regular activity:
// retry-now cancels the one waiting out its backoff and starts it again at
// once; refund-and-close stops it. Bookings started before this change run
// the step as one retrying local activity, as they were recorded.
func (b *booking) callProvider(ctx workflow.Context, st providerStep, result any) error {
	if workflow.GetVersion(ctx, versionVisibleSteps, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.ExecuteLocalActivity(providerCtx(ctx, st.budget), st.fn, st.args...).Get(ctx, result)
	}
	started := workflow.Now(ctx)
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: providerAttempt,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             st.summary(),
	})
	err := workflow.ExecuteLocalActivity(lctx, st.fn, st.args...).Get(ctx, result)
	if err == nil || !retryable(err) {
		return err
	}
	return b.escalate(ctx, st, started, result)
}

// escalate runs st as a regular activity until it succeeds, fails for
// good, runs out of its budget, or support closes the booking.
func (b *booking) escalate(ctx workflow.Context, st providerStep, started time.Time, result any) error {
	esc := &escalated{name: st.name}
	b.pending = esc
	defer func() { b.pending = nil }()
	b.details(ctx, st.name+" failed once; retrying as a regular activity")
	due := false
	if b.attrs {
		tctx, stop := workflow.WithCancel(ctx)
		defer stop()
		t := workflow.NewTimerWithOptions(tctx, attentionAfter, workflow.TimerOptions{Summary: st.name + ": staff attention if still failing"})
		workflow.Go(ctx, func(ctx workflow.Context) { due = t.Get(ctx, nil) == nil })
	}
	for {
		opts := workflow.ActivityOptions{
			StartToCloseTimeout: providerAttempt,
			RetryPolicy:         providerRetry(),
			Summary:             st.summary(),
		}
		if st.budget > 0 {
			left := st.budget - workflow.Now(ctx).Sub(started)
			if left <= 0 {
				return temporal.NewTimeoutError(0, errors.New(st.name+": out of its retry budget"))
			}
			opts.ScheduleToCloseTimeout = left
		}
		actx, cancel := workflow.WithCancel(ctx)
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(actx, opts), st.fn, st.args...)
		gen := esc.gen
		for {
			if err := workflow.Await(ctx, func() bool {
				return f.IsReady() || esc.gen != gen || b.closingStep(st) || (due && !b.attention)
			}); err != nil {
				cancel()
				return err
			}
			if f.IsReady() || esc.gen != gen || b.closingStep(st) {
				break
			}
			b.setAttention(ctx, true)
			b.details(ctx, st.name+" keeps failing: staff attention needed")
		}
		if f.IsReady() {
			cancel()
			err := f.Get(ctx, result)
			if err == nil {
				b.setAttention(ctx, false)
			}
			return err
		}
		// retry-now or refund-and-close: the attempt waiting out its backoff
		// is cancelled. One already running may still finish at the
		// provider; the step key makes the next attempt its duplicate.
		cancel()
		if b.closingStep(st) {
			return errClosing
		}
		b.details(ctx, st.name+": retried now at support's request")
	}
}

// closingStep says support closed the booking and st may stop for it.
func (b *booking) closingStep(st providerStep) bool { return b.closing && st.closable }

// retryable says a failed attempt may succeed if asked again.
func retryable(err error) bool {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return false
	}
	var canceled *temporal.CanceledError
	return !errors.As(err, &canceled)
}

// saleSteps are the provider steps of one booking's sale, each under the
// booking's own step key.
type saleSteps struct {
	booking string
	total   money.Money
}

// steps are this booking's sale steps.
func (b *booking) steps() saleSteps {
	return saleSteps{booking: b.in.ReservationID, total: b.hold.Total}
}

func (s saleSteps) capture(intentID string) providerStep {
	return providerStep{name: "capture", key: activities.StepKey(s.booking, activities.StepKeyCapture),
		amount: s.total, budget: time.Hour, closable: true, fn: a.Capture, args: []any{s.booking, intentID}}
}

func (s saleSteps) void(intentID string, budget time.Duration) providerStep {
	return providerStep{name: "void", key: activities.StepKey(s.booking, activities.StepKeyVoid),
		amount: s.total, budget: budget, fn: a.Void, args: []any{s.booking, intentID}}
}

func (s saleSteps) refund(intentID string) providerStep {
	return providerStep{name: "refund", key: activities.StepKey(s.booking, activities.StepKeyRefund),
		amount: s.total, fn: a.Refund, args: []any{s.booking, intentID}}
}

// payout pays a resale booking's sellers, for up to a day of provider
// trouble.
func (s saleSteps) payout() providerStep {
	return providerStep{name: "pay sellers", key: activities.StepKey(s.booking, "payout-<listing>"),
		budget: 24 * time.Hour, fn: a.PaySellers, args: []any{s.booking}}
}

// checkStep reads the payment a provider event names, for up to ten
// minutes of provider trouble.
func checkStep(ev PaymentEvent) providerStep {
	return providerStep{name: "check the payment", label: "check event " + ev.EventID + " with the provider (intent " + ev.IntentID + ")",
		budget: 10 * time.Minute, fn: a.CheckPayment, args: []any{ev.IntentID}}
}

// db returns ctx's database step options with the summary the UI shows.
func db(ctx workflow.Context, summary string) workflow.Context {
	o := workflow.GetLocalActivityOptions(dbCtx(ctx))
	o.Summary = summary
	return workflow.WithLocalActivityOptions(ctx, o)
}

// details sets the workflow's current details, what the Temporal UI shows
// about where the booking is now. They are workflow state, not a command:
// no history event, nothing to replay.
func (b *booking) details(ctx workflow.Context, now string) {
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** · %s\n\n%s", b.step, now, b.staticLine()))
}

// staticLine is what stays true of the booking: its hold and total.
func (b *booking) staticLine() string {
	if !b.loaded {
		return "booking " + b.in.ReservationID
	}
	return fmt.Sprintf("booking %s · event %s · fan %s · total %s", b.in.ReservationID, b.hold.EventID, b.hold.UserID, formatMoney(b.hold.Total))
}

// authoriseStep is one checkout attempt's authorisation: a new intent on the
// first attempt, the intent confirmed with another card on a later one, each
// under its own step key (activities.Authorise derives the same).
func authoriseStep(in activities.AuthoriseInput) providerStep {
	key := activities.StepKey(in.BookingID, activities.StepKeyAuthorise)
	if in.IntentID != "" {
		key = activities.AttemptStepKey(in.BookingID, in.Attempt)
	}
	return providerStep{name: "authorise", key: key, amount: in.Amount, budget: 45 * time.Second, fn: a.Authorise, args: []any{in}}
}
