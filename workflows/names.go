// Package workflows holds Encore's deterministic workflow code: the booking
// saga, one workflow per hold, and the payment reconciliation. Workflow
// functions are thin; the logic lives in unexported structs; every side
// effect is an activity in package activities.
package workflows

// Names shared by the API, the worker and support staff. Changing one breaks
// running workflows: add new names instead.
const (
	// TaskQueue is where booking workflows and their activities run.
	TaskQueue = "encore-booking"

	// BookingWorkflowName is the registered name of Booking.
	BookingWorkflowName = "Booking"
	// ReconcileWorkflowName is the registered name of Reconcile.
	ReconcileWorkflowName = "Reconcile"
	// ReconcileScheduleID is the schedule that runs Reconcile.
	ReconcileScheduleID = "encore-reconcile"

	// SignalRelease asks the booking to give its seats back now (the fan
	// pressed "release" or DELETE /v1/holds/{id}).
	SignalRelease = "release"
	// SignalPayment carries a verified provider event (from the webhook).
	SignalPayment = "payment"

	// UpdateCheckout runs fraud and authorisation and returns the client
	// secret synchronously.
	UpdateCheckout = "checkout"
	// UpdateCancel cancels a paid booking within the event's policy.
	UpdateCancel = "cancel"

	// QueryStep returns the booking's current step, for support staff.
	QueryStep = "step"

	// Search attributes registered on the namespace, for support staff to
	// filter bookings in the Temporal Web UI.
	SearchAttrEvent  = "EncoreEventId"
	SearchAttrUser   = "EncoreUserId"
	SearchAttrStatus = "EncoreBookingStatus"
)

// Activity names (implemented by package activities).
const (
	ActivityLoadBooking  = "LoadBooking"
	ActivityExpireHold   = "ExpireHold"
	ActivityReleaseHold  = "ReleaseHold"
	ActivityExtendHold   = "ExtendHold"
	ActivityFraudCheck   = "FraudCheck"
	ActivityAuthorise    = "Authorise"
	ActivityConfirmSale  = "ConfirmSale"
	ActivityCapture      = "Capture"
	ActivityVoid         = "Void"
	ActivityRefund       = "Refund"
	ActivityCancelSale   = "CancelSale"
	ActivityIssueTickets = "IssueTickets"
	ActivityNotify       = "Notify"
	ActivityFlagPayment  = "FlagPayment"
	ActivityReconcile    = "ReconcilePayments"
)

// BookingWorkflowID derives the workflow ID from the reservation ID, so a
// second start for the same hold is a no-op.
func BookingWorkflowID(reservationID string) string { return "booking-" + reservationID }

// Step keys: the provider's idempotency keys of the saga's money moves.
func StepKey(bookingID, step string) string { return bookingID + ":" + step }
