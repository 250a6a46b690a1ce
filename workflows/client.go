package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/vocab"
)

func startOptions(in BookingInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       BookingWorkflowID(in.ReservationID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		EnableEagerStart:         true,
		TypedSearchAttributes:    startAttributes(in),
		StaticSummary:            staticSummary(in),
		StaticDetails:            staticDetails(in),
	}
}

// Checkout sends the checkout Update, starting the booking's workflow with
// it when this is the hold's first checkout (Update-With-Start: start and
// Update in one request and one workflow task, or neither). A hold costs
// Temporal nothing until then. updateID deduplicates a retried request: the
// same ID returns the first answer.
func Checkout(ctx context.Context, c client.Client, in BookingInput, updateID string, req CheckoutRequest) (CheckoutResult, error) {
	start := c.NewWithStartWorkflowOperation(startOptions(in), BookingWorkflowName, in)
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateID:     updateID,
			UpdateName:   UpdateCheckout,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return CheckoutResult{}, err
	}
	var res CheckoutResult
	err = h.Get(ctx, &res)
	return res, err
}

// CheckoutAgain fetches the answer of a checkout Update the booking's
// workflow already took under updateID, without starting or asking
// anything: how a retried checkout gets its first answer after the hold has
// moved on. An error when there is no such Update (or no workflow).
func CheckoutAgain(ctx context.Context, c client.Client, bookingID, updateID string) (CheckoutResult, error) {
	h := c.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{
		WorkflowID: BookingWorkflowID(bookingID), UpdateID: updateID})
	var res CheckoutResult
	err := h.Get(ctx, &res)
	return res, err
}

// Cancel sends the cancel Update to a running booking.
func Cancel(ctx context.Context, c client.Client, bookingID, updateID string) (vocab.BookingStatus, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   BookingWorkflowID(bookingID),
		UpdateID:     updateID,
		UpdateName:   UpdateCancel,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", ErrNoBooking
	}
	if err != nil {
		return "", err
	}
	var status vocab.BookingStatus
	err = h.Get(ctx, &status)
	if errors.As(err, &nf) {
		return "", ErrNoBooking
	}
	return status, err
}

// DeliverPayment hands a verified provider event to its booking. ErrNoBooking
// means the workflow is not running (ended long ago): reconciliation covers
// such payments.
func DeliverPayment(ctx context.Context, c client.Client, ev PaymentEvent) error {
	err := c.SignalWorkflow(ctx, BookingWorkflowID(ev.BookingID), "", SignalPayment, ev)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNoBooking
	}
	return err
}

// Release asks a booking to give its seats back now.
func Release(ctx context.Context, c client.Client, bookingID string) error {
	err := c.SignalWorkflow(ctx, BookingWorkflowID(bookingID), "", SignalRelease, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNoBooking
	}
	return err
}

// Backlog is the age of the oldest workflow task on a task queue (the
// booking saga's is TaskQueue) that no worker has picked up yet: how far
// behind the workers are with checkouts and provider events. Zero when
// nothing waits.
func Backlog(ctx context.Context, c client.Client, namespace, taskQueue string) (time.Duration, error) {
	resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     namespace,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
		ReportStats:   true,
	})
	if err != nil {
		return 0, err
	}
	return resp.GetStats().GetApproximateBacklogAge().AsDuration(), nil
}

// ErrNoBooking: no running workflow for the booking.
var ErrNoBooking = errors.New("saga: no running booking workflow")

// EnsureReconcileSchedule creates the schedule that runs Reconcile every
// interval over the last lookback, if it does not exist yet.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, every, lookback time.Duration) error {
	return ensureSchedule(ctx, c, ReconcileScheduleID, every, &client.ScheduleWorkflowAction{
		ID:        ReconcileWorkflowID,
		Workflow:  ReconcileWorkflowName,
		Args:      []any{lookback},
		TaskQueue: TaskQueue,
	})
}

// ensureSchedule creates the schedule id that starts action every
// interval, a run skipped while the last one still runs, if it does not
// exist yet (an existing one is left as it is).
func ensureSchedule(ctx context.Context, c client.Client, id string, every time.Duration, action *client.ScheduleWorkflowAction) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Action:  action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	return err
}

// Sagas is how activities reach running booking sagas (activities.Sagas)
// over Client: support's cancel through the booking's own saga, and the
// provider events reconciliation hands over again.
type Sagas struct{ Client client.Client }

var _ activities.Sagas = Sagas{}

// StaffCancel sends the staff-cancel Update to a running booking and waits
// for its answer.
func (s Sagas) StaffCancel(ctx context.Context, bookingID, updateID, staff, reason string) error {
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: BookingWorkflowID(bookingID), UpdateID: updateID, UpdateName: UpdateStaffCancel,
		Args: []any{StaffCancelRequest{Staff: staff, Reason: reason}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var nf *serviceerror.NotFound
	var ae *temporal.ApplicationError
	switch {
	case errors.As(err, &nf):
		return activities.ErrNoSaga
	case errors.As(err, &ae) && ae.Type() == ErrTypeNotPending:
		return fmt.Errorf("%w: %w", activities.ErrSettled, err)
	}
	return err
}

// DeliverPayment hands a stored provider event to the booking the database
// records for its intent.
func (s Sagas) DeliverPayment(ctx context.Context, bookingID string, ev payments.WebhookEvent) error {
	err := DeliverPayment(ctx, s.Client, PaymentEvent{EventID: ev.ID, Type: ev.Type, IntentID: ev.IntentID,
		Status: ev.Status, Amount: ev.Amount, BookingID: bookingID, ClaimedBookingID: ev.BookingID})
	if errors.Is(err, ErrNoBooking) {
		return activities.ErrNoSaga
	}
	return err
}

// RetryNow sends retry-now to a running booking under updateID (one per
// support request: a second press is a second retry) and answers with the
// provider step asked again.
func RetryNow(ctx context.Context, c client.Client, bookingID, updateID string, req StaffCancelRequest) (string, error) {
	var step string
	err := staffUpdate(ctx, c, bookingID, updateID, UpdateRetryNow, req, &step)
	return step, err
}

// RefundAndClose sends refund-and-close to a running booking under
// updateID (one per support request, so a second request after the first
// was refused is asked again, never answered from the first) and answers
// with the booking's status once the money went back.
func RefundAndClose(ctx context.Context, c client.Client, bookingID, updateID string, req StaffCancelRequest) (vocab.BookingStatus, error) {
	var status vocab.BookingStatus
	err := staffUpdate(ctx, c, bookingID, updateID, UpdateRefundAndClose, req, &status)
	return status, err
}

// staffUpdate sends a support Update and waits for its answer; ErrNoBooking
// when no workflow runs for the booking.
func staffUpdate(ctx context.Context, c client.Client, bookingID, updateID, name string, req StaffCancelRequest, result any) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: BookingWorkflowID(bookingID), UpdateID: updateID, UpdateName: name,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, result)
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNoBooking
	}
	return err
}
