package workflows

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// StartBooking starts the booking workflow of a committed hold. Starting it
// again (the outbox relay's backstop after the API's direct start) is a
// no-op: the workflow ID is derived from the reservation.
func StartBooking(ctx context.Context, c client.Client, in BookingInput) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       BookingWorkflowID(in.ReservationID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		EnableEagerStart:         true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrEvent).ValueSet(in.EventID),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrUser).ValueSet(in.UserID),
			statusAttr.ValueSet("PENDING_PAYMENT"),
		),
	}, BookingWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}
