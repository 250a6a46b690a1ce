// Package workflows holds every Temporal workflow of Encore, deterministic
// code only, one file a workflow: the booking saga of one checked-out hold
// (adopt the hold, take the payment, sell or give the seats back, each money
// step with its compensation), the payment reconciliation and inventory
// audit that schedules run, the event cancellation job, support's staff
// actions and hotel walks. Each workflow is a thin exported function over an
// unexported struct where it has state. Side effects are activities (package
// activities), called as method values on nil pointers so the compiler checks
// each call's arguments and result. The names the histories record (task
// queue, workflow IDs, signals, updates, queries, search attributes,
// activity names) are in this file; client.go is how the API speaks to a
// running booking.
package workflows

import enumspb "go.temporal.io/api/enums/v1"

// Names shared by the API, the worker, support staff and the histories
// Temporal has recorded. Changing one breaks running workflows and the replay
// of recorded histories: add new names instead.
const (
	// TaskQueue is where booking workflows and their activities run.
	TaskQueue = "encore-booking"

	// BookingWorkflowName is the registered name of Booking.
	BookingWorkflowName = "Booking"
	// ReconcileWorkflowName is the registered name of Reconcile.
	ReconcileWorkflowName = "Reconcile"
	// ReconcileScheduleID is the schedule that runs Reconcile.
	ReconcileScheduleID = "encore-reconcile"
	// ReconcileWorkflowID is the ID the schedule gives each Reconcile run.
	ReconcileWorkflowID = "reconcile"
	// AuditWorkflowName is the registered name of AuditInventory, run by the
	// schedule AuditScheduleID under the workflow ID AuditWorkflowID.
	AuditWorkflowName = "AuditInventory"
	AuditScheduleID   = "encore-audit"
	AuditWorkflowID   = "inventory-audit"
	// bookingWorkflowIDPrefix makes a booking's workflow ID from its
	// reservation ID (BookingWorkflowID).
	bookingWorkflowIDPrefix = "booking-"

	// SignalRelease asks the booking to give its seats back now (the fan
	// pressed "release" or DELETE /v1/holds/{id}).
	SignalRelease = "release"
	// SignalPayment carries a provider event (from the signed webhook, or
	// reconciliation). The saga reads the payment it names from the
	// provider before acting (ActivityCheckPayment): the signal says where
	// to look, never what happened.
	SignalPayment = "payment"
	// SignalSettledOutside tells a paid booking the status the provider
	// has settled it at outside the saga (a dispute opened, lost or won; a
	// refund made in the provider's dashboard), already committed in the
	// database: the saga shows it in EncoreBookingStatus and does nothing
	// else (booking.Service sends it after applying the provider's event).
	SignalSettledOutside = "settled-outside"

	// UpdateCheckout runs fraud and authorisation and returns the client
	// secret synchronously.
	UpdateCheckout = "checkout"
	// UpdateCancel cancels a paid booking within the event's policy.
	UpdateCancel = "cancel"
	// UpdateStaffCancel cancels a booking outside the fan's policy (support
	// staff, or the organiser cancelling the event): no deadline applies.
	UpdateStaffCancel = "staff-cancel"
	// UpdateRetryNow skips the backoff of the provider step support sees
	// pending: the step is asked again at once, under its step key.
	UpdateRetryNow = "retry-now"
	// UpdateRefundAndClose gives the fan's money back and ends the
	// booking, whatever step it is stuck at: a paid booking is cancelled
	// and refunded, a sale still capturing is undone and refunded (or its
	// authorisation voided), a pending hold released.
	UpdateRefundAndClose = "refund-and-close"

	// EventCancellationWorkflowName is the registered name of
	// EventCancellation, the job that refunds a cancelled event's bookings.
	EventCancellationWorkflowName = "EventCancellation"
	// StaffActionWorkflowName is the registered name of StaffAction: one
	// support action (refund, resend) run on the worker.
	StaffActionWorkflowName     = "StaffAction"
	eventCancelWorkflowIDPrefix = "event-cancel-"
	// WalkWorkflowName is the registered name of WalkGuests, which walks
	// hotel guests off an overbooked night (WalkWorkflowID).
	WalkWorkflowName     = "WalkGuests"
	walkWorkflowIDPrefix = "walk-"

	// QueryStep returns the booking's current step, for support staff.
	QueryStep = "step"

	// Search attributes registered on the namespace, for support staff to
	// filter bookings in the Temporal Web UI.
	SearchAttrEvent  = "EncoreEventId"
	SearchAttrUser   = "EncoreUserId"
	SearchAttrStatus = "EncoreBookingStatus"
	// SearchAttrStep is the saga's current step (vocab.Step).
	SearchAttrStep = "EncoreStep"
	// SearchAttrAmount is the hold's total in minor units.
	SearchAttrAmount = "EncoreAmount"
	// SearchAttrAttention is true while a provider step has kept failing
	// (attentionAfter), false again once it succeeds.
	SearchAttrAttention = "EncoreAttention"
	// SearchAttrEmailHash is the fan's e-mail, keyed-hashed (EmailHash):
	// support finds a fan's bookings by it without the address in clear.
	SearchAttrEmailHash = "EncoreEmailHash"
)

// Activity type names as recorded in history. Workflows call the methods of
// Activities and HoldActivities, whose names these are; Register pins each
// method to its name here, so renaming a method cannot rename its activity.
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
	ActivityRefundPart   = "RefundPart"
	ActivityCancelSale   = "CancelSale"
	ActivityIssueTickets = "IssueTickets"
	// ActivityPaySellers pays a resale booking's sellers.
	ActivityPaySellers  = "PaySellers"
	ActivityNotify      = "Notify"
	ActivityFlagPayment = "FlagPayment"
	ActivityReconcile   = "ReconcilePayments"
	ActivityStaffAction = "StaffAction"
	// ActivityRecordStaffStep audits a support action on a running saga.
	ActivityRecordStaffStep = "RecordStaffStep"
	// ActivitySettledStatus reads how a booking given back ended.
	ActivitySettledStatus = "SettledStatus"
	// ActivityCheckPayment reads, from the provider and the database, the
	// payment a provider event names (the saga never acts on a signal's
	// own words).
	ActivityCheckPayment = "CheckPayment"
	ActivityPaidPage     = "PaidBookingsPage"
	ActivityJobItem      = "RecordJobItem"
	ActivityFinishJob    = "FinishJob"
	ActivityRelocate     = "RelocateGuests"
	ActivityRefundWalk   = "RefundWalk"
	ActivityTellWalked   = "TellWalkedGuest"
	ActivityAuditStore   = "AuditStore"
	// Reconciliation's repairs.
	ActivityUndeliveredWebhooks = "UndeliveredWebhooks"
	ActivityRepair              = "Repair"
)

// Errors the checkout and cancel updates return, as ApplicationError types;
// the API maps each to a problem.
const (
	ErrTypeDeclined    = "payment-declined"
	ErrTypeRefused     = "payment-refused"
	ErrTypeHoldExpired = "hold-expired"
	ErrTypeNotPending  = "hold-not-pending"
	ErrTypeBusy        = "request-in-progress"
	ErrTypeUnavailable = "unavailable"
	ErrTypeNotAllowed  = "cancel-not-allowed"
	// ErrTypeNothingToRetry: retry-now found no provider step waiting.
	ErrTypeNothingToRetry = "nothing-to-retry"
	// ErrTypeStaffRequired: a support Update that does not say who sent it
	// (the audit log needs its actor).
	ErrTypeStaffRequired = "staff-required"
)

// Change IDs of workflow.GetVersion: each names a change to the booking's
// commands, so workflows started before it replay as they ran.
const (
	// versionCancelExpiryAfterSale: a sold booking cancels its expiry timer.
	versionCancelExpiryAfterSale = "cancel-expiry-timer-after-sale"
	// versionUnsellableCompensates: a confirm that cannot sell the hold's
	// nights gives the money and the hold back (before: the workflow failed).
	versionUnsellableCompensates = "unsellable-confirm-compensates"
	// versionStayPenalty: cancelling a booking with stays past the hotel's
	// free window refunds the total less the first night.
	versionStayPenalty = "stay-cancel-penalty"
	// versionStaffWaivesPenalty: a cancel by support staff or the organiser
	// refunds everything, whatever the stays' window (before: the first
	// night was kept as on a fan's cancel).
	versionStaffWaivesPenalty = "staff-cancel-waives-stay-penalty"
	// versionFailedEventWaitsForCheckout: a payment-failed event counts
	// only while the fan holds a 3-D Secure challenge (before: one arriving
	// during the last attempt's checkout released the hold under it, and
	// that checkout answered hold-expired instead of its decline).
	versionFailedEventWaitsForCheckout = "failed-event-waits-for-checkout"
	// versionVisibleSteps: a provider step (authorise, capture, void,
	// refund) whose first, local attempt fails continues as a regular
	// activity, visible in the UI as a pending activity (before: one local
	// activity retried inside the workflow task).
	versionVisibleSteps = "provider-steps-visible"
	// versionSupportAttrs: the saga upserts EncoreStep on every step
	// change, EncoreAttention while a provider step keeps failing, and
	// EncoreBookingStatus right after each database transition (before:
	// the status only when the saga's own status changed, PENDING_PAYMENT
	// through a failing capture the database already called PAID).
	versionSupportAttrs = "support-search-attributes"
	// versionCancelCompensates: a workflow cancellation (the UI's "Request
	// Cancellation") releases the hold and voids the payment under a
	// disconnected context before the workflow ends (before: it ended with
	// the money and seats left as they were).
	versionCancelCompensates = "workflow-cancel-compensates"
	// versionStaffCancelAudited: a staff-cancel sent from the Temporal UI
	// (not through StaffAction, which audits) writes the audit record and
	// the fan's e-mail (before: neither).
	versionStaffCancelAudited = "staff-cancel-audited"
	// versionStaffCancelAlwaysAudited: the saga audits every staff-cancel
	// (before: it believed a request marked Audited, which anyone able to
	// send an Update could set to skip the audit record and the e-mail).
	versionStaffCancelAlwaysAudited = "staff-cancel-always-audited"
	// versionClosedAsTheDatabaseSays: refund-and-close during a stuck
	// capture ends with the status the booking's page shows (CANCELLED when
	// the authorisation was voided, REFUNDED when captured money went back;
	// before: REFUNDED either way).
	versionClosedAsTheDatabaseSays = "closed-as-the-database-says"
	// versionProviderEventsChecked: a payment signal is checked with the
	// provider and the database before the saga acts on it, and acted on as
	// they tell it (before: as the signal said, so a signal forged from the
	// Web UI could sell seats on a payment that never happened).
	versionProviderEventsChecked = "provider-events-checked"
	// versionCheckoutKeepsTheSaleStep: a checkout whose answer arrives
	// after the provider's event started the sale leaves the sale's step as
	// it is (before: it set awaiting-payment or awaiting-checkout over
	// confirming or capturing, so a cancel taken during the capture was
	// answered PAID and refunded nothing, and a second checkout could start).
	versionCheckoutKeepsTheSaleStep = "checkout-keeps-the-sale-step"
	// versionCapturedSaleResumed: a payment event that finds its intent
	// captured while the saga holds the booking pending carries the sale
	// on when the database already has it PAID (its confirm and capture ran
	// in a lost workflow task); before, it refunded the money of a sold
	// booking (soldAlready).
	versionCapturedSaleResumed = "captured-sale-resumed"
	// versionAdoptedSaleCarriedOn: ending a hold (a release, an expiry, a
	// refusal) that finds it PAID, sold by a lost workflow task, carries
	// the sale on to its capture and tickets (endHold), and so does a start
	// whose adopted hold is PAID with a provider event waiting
	// (soldByALostTask); before, the saga adopted PAID, issuing no ticket.
	versionAdoptedSaleCarriedOn = "adopted-sale-carried-on"
	// versionStaffCancelUndoesTheSale: a staff cancel taken while the hold
	// read pending, overtaken by the sale it waited on, cancels and refunds
	// that sale (before: it answered PAID and refunded nothing).
	versionStaffCancelUndoesTheSale = "staff-cancel-undoes-the-sale"
)

// EventCancelWorkflowID derives the cancellation job's workflow ID from the
// job's, so a second submit finds the first job.
func EventCancelWorkflowID(jobID string) string { return eventCancelWorkflowIDPrefix + jobID }

// BookingWorkflowID derives the workflow ID from the reservation ID, so a
// second start for the same hold is a no-op.
func BookingWorkflowID(reservationID string) string { return bookingWorkflowIDPrefix + reservationID }

// SearchAttributes are the saga's search attributes with their types, for
// registering on a namespace (the embedded server does it itself; a real
// cluster's operator registers the same map).
var SearchAttributes = map[string]enumspb.IndexedValueType{
	SearchAttrEvent:     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrUser:      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrStatus:    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrStep:      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrAmount:    enumspb.INDEXED_VALUE_TYPE_INT,
	SearchAttrAttention: enumspb.INDEXED_VALUE_TYPE_BOOL,
	SearchAttrEmailHash: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}
