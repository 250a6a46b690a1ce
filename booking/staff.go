package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
	"github.com/encore-tickets/encore/workflows"
)

// jobNamespace derives a cancellation's job ID from its event's ID: the
// same event always names the same job, so a double submit starts one.
var jobNamespace = uuid.MustParse("5b0e9a52-7c1d-4e8f-a3b6-2d9c4f1e8a70")

// ErrForbidden: the caller's roles do not cover the object.
var ErrForbidden = errors.New("booking: not allowed for this caller")

// CancelEvent cancels an event (its organiser, or an admin): sales stop in
// the transaction that marks it CANCELLED, and a job refunds every paid
// booking through its own workflow. It returns the job; a second call
// returns the first.
func (s *Service) CancelEvent(ctx context.Context, who session.Identity, eventID, reason string) (store.Job, error) {
	org := ""
	if !who.Has(session.Admin) {
		if !who.Has(session.Organiser) || who.Org == "" {
			return store.Job{}, ErrForbidden
		}
		org = who.Org
	}
	jobID := "job-" + uuid.NewSHA1(jobNamespace, []byte(eventID)).String()
	c, err := s.Store.Jobs.CancelEvent(ctx, eventID, org, who.UserID, reason, jobID)
	if err != nil {
		return store.Job{}, err
	}
	// Tell the sagas of the released holds, so they end now.
	for _, e := range c.Released {
		if serr := workflows.Release(ctx, s.Temporal, e.ReservationID.String()); serr != nil && !errors.Is(serr, workflows.ErrNoBooking) {
			s.Log.Warn("tell booking workflow of event cancellation", "hold", e.ReservationID, "err", serr)
		}
	}
	// Started on every call: a submit whose start was lost after the commit
	// is repaired by the next; the workflow ID makes the rest no-ops.
	_, err = s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.EventCancelWorkflowID(c.Job.ID), TaskQueue: workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.EventCancellationWorkflowName, workflows.EventCancelInput{JobID: c.Job.ID, EventID: eventID, Staff: c.Job.Actor,
		Reason: c.Job.Reason, Rate: s.CancelRate})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return store.Job{}, sagaError(err)
	}
	return c.Job, nil
}

// Job reads a job's progress.
func (s *Service) Job(ctx context.Context, id string) (store.Job, error) {
	return s.Store.Jobs.Job(ctx, id)
}

// Detail is a booking as support staff see it.
type Detail struct {
	View
	UserID string `json:"user_id"`
	store.SupportDetail
	Flagged string `json:"flagged,omitempty"`
	// Disputes are every dispute of the booking, newest first, and
	// OutsideRefunds the refunds made outside Encore (booking/disputes.go).
	Disputes       []store.Dispute       `json:"disputes"`
	OutsideRefunds []store.OutsideRefund `json:"outside_refunds"`
	// Step is the saga's current step, from its workflow; "" once the
	// workflow has ended or when it never started (no checkout).
	Step vocab.Step `json:"step,omitempty"`
}

// Search finds bookings for support staff, newest first.
func (s *Service) Search(ctx context.Context, f store.BookingFilter) ([]store.BookingSummary, error) {
	return s.Store.Bookings.SearchBookings(ctx, f)
}

// Detail reads any booking for support staff.
func (s *Service) Detail(ctx context.Context, id uuid.UUID) (Detail, error) {
	// The step is asked before the rows are read: a step is only reached
	// once the work before it is committed, so the rows are never behind
	// the step shown beside them (a "paid" booking always lists its
	// tickets).
	var step vocab.Step
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if res, err := s.Temporal.QueryWorkflow(qctx, workflows.BookingWorkflowID(id.String()), "", workflows.QueryStep); err == nil {
		_ = res.Get(&step)
	}
	v, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return Detail{}, err
	}
	sd, err := s.Store.Bookings.BookingSupportDetail(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	ds, err := s.Store.Bookings.Disputes(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	rs, err := s.Store.Bookings.OutsideRefunds(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	return Detail{View: view(v), UserID: v.Hold.UserID, SupportDetail: sd, Flagged: v.Flagged, Step: step,
		Disputes: ds, OutsideRefunds: rs}, nil
}

// staffTimeout bounds a support action waiting on the worker.
const staffTimeout = 2 * time.Minute

// RetryNow asks the booking's saga to try its failing provider step again
// now, skipping the backoff (the retry-now Update, under an ID of this
// request); the saga audits who asked. It answers with the step's name.
func (s *Service) RetryNow(ctx context.Context, who session.Identity, id uuid.UUID, requestID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, staffTimeout)
	defer cancel()
	step, err := workflows.RetryNow(ctx, s.Temporal, id.String(), "retry-now-"+requestID,
		workflows.StaffCancelRequest{Staff: who.UserID, Reason: "retry now"})
	return step, staffUpdateError(err)
}

// RefundAndClose gives a booking's money back and ends its saga wherever it
// is stuck (the refund-and-close Update, under an ID of this request): a
// capture that keeps failing is stopped and its sale undone, a paid
// booking cancelled and refunded. The saga writes the audit record and
// tells the fan. A booking whose saga has ended is refunded as StaffRefund
// does.
func (s *Service) RefundAndClose(ctx context.Context, who session.Identity, id uuid.UUID, reason, requestID string) (View, error) {
	if before, err := s.Store.Bookings.Booking(ctx, id, ""); err != nil {
		return View{}, err
	} else if settledOutside(before) {
		return View{}, ErrNotCancellable // disputed, charged back or refunded by the provider: a refund would pay twice
	}
	uctx, cancel := context.WithTimeout(ctx, staffTimeout)
	defer cancel()
	_, err := workflows.RefundAndClose(uctx, s.Temporal, id.String(), "refund-and-close-"+requestID,
		workflows.StaffCancelRequest{Staff: who.UserID, Reason: reason})
	if errors.Is(err, workflows.ErrNoBooking) {
		return s.StaffRefund(ctx, who, id, reason, requestID)
	}
	if err := staffUpdateError(err); err != nil {
		return View{}, err
	}
	after, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return View{}, err
	}
	return view(after), nil
}

// ErrNothingToRetry: retry-now found no provider step waiting to retry.
var ErrNothingToRetry = fmt.Errorf("%w: no provider step of the booking is waiting to retry", store.ErrNotPending)

// staffUpdateError maps a support Update's failure to the domain's errors.
func staffUpdateError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == workflows.ErrTypeNothingToRetry {
		return ErrNothingToRetry
	}
	return sagaError(err)
}

// StaffRefund cancels and refunds a booking outside the fan's policy,
// through its workflow, recording the staff member and reason on the
// booking and in the audit log of the booking's event's organisation (not
// the staff member's own).
//
// requestID names this request (its Idempotency-Key, or a fresh ID): a
// retry of the same request joins the first, another request is asked
// anew, never answered from an earlier request's Update.
func (s *Service) StaffRefund(ctx context.Context, who session.Identity, id uuid.UUID, reason, requestID string) (View, error) {
	before, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return View{}, err
	}
	if v := view(before); v.Status == vocab.BookingRefunded {
		return v, nil // refunded already, by this request retried or by anyone: nothing more to do
	}
	if settledOutside(before) {
		return View{}, ErrNotCancellable // disputed or charged back: a refund would pay twice
	}
	if before.Hold.Status != vocab.ReservationPaid && before.Hold.Status != vocab.ReservationPending {
		return View{}, store.ErrNotPending
	}
	if err := s.staffAction(ctx, "staff-refund-"+id.String()+"-"+requestID, activities.StaffInput{Action: activities.StaffRefund,
		BookingID: id.String(), Staff: who.UserID, Reason: reason, RequestID: requestID}); err != nil {
		return View{}, err
	}
	after, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return View{}, err
	}
	b, _ := json.Marshal(view(before))
	a, _ := json.Marshal(view(after))
	if err := s.Store.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: who.UserID, EventID: before.Hold.EventID, Action: "booking.refund",
		Target: "booking:" + id.String(), Reason: reason, Before: b, After: a}); err != nil {
		return View{}, err
	}
	return view(after), nil
}

// Resend sends the booking's confirmation email again, recorded in the
// audit log of the booking's event's organisation.
func (s *Service) Resend(ctx context.Context, who session.Identity, id uuid.UUID) error {
	v, err := s.Store.Bookings.Booking(ctx, id, "")
	if err != nil {
		return err
	}
	if v.Hold.Status != vocab.ReservationPaid {
		return store.ErrNotPending
	}
	if err := s.staffAction(ctx, "staff-resend-"+uuid.NewString(), activities.StaffInput{Action: activities.StaffResend,
		BookingID: id.String(), Staff: who.UserID}); err != nil {
		return err
	}
	return s.Store.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: who.UserID, EventID: v.Hold.EventID, Action: "booking.resend",
		Target: "booking:" + id.String()})
}

// staffAction runs one action on the worker and waits for it. A second
// refund of the same booking while the first runs joins it.
func (s *Service) staffAction(ctx context.Context, workflowID string, in activities.StaffInput) error {
	ctx, cancel := context.WithTimeout(ctx, staffTimeout)
	defer cancel()
	run, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflowID, TaskQueue: workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.StaffActionWorkflowName, in)
	if err != nil {
		return sagaError(err)
	}
	return sagaError(run.Get(ctx, nil))
}

// Walk walks hotel guests off an overbooked night through the saga's walk
// workflow (workflows.WalkGuests) and waits for it: relocated, refunded and told,
// each step once. A second request for the same night while one runs joins
// it; a later one walks only the rooms still missing.
func (s *Service) Walk(ctx context.Context, req hotels.WalkRequest) ([]store.Walk, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, staffTimeout)
	defer cancel()
	night := req.Night.Format(time.DateOnly)
	run, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WalkWorkflowID(req.PropertyID, night), TaskQueue: workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.WalkWorkflowName, activities.WalkInput{PropertyID: req.PropertyID, Night: night, Rooms: req.Rooms})
	if err != nil {
		return nil, sagaError(err)
	}
	var walks []store.Walk
	if err := run.Get(ctx, &walks); err != nil {
		return nil, sagaError(err)
	}
	return walks, nil
}
