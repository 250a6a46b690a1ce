package activities

import "fmt"

// Non-retryable failures of activities, as ApplicationError types: retrying
// cannot change their outcome.
const (
	ErrTypeInvalidID      = "invalid"
	ErrTypeNotFound       = "not-found"
	ErrTypeRejected       = "rejected"     // the provider refused the request itself
	ErrTypeIntentMismatch = "mismatch"     // the intent names another booking
	ErrTypeUnsellable     = "unsellable"   // the hold's nights are no longer held
	ErrTypeAuditFailed    = "audit-failed" // the inventory audit found a broken rule
	ErrTypeNotPaid        = "not-paid"     // tickets asked for a booking that is no longer PAID
)

// Step-key names of the saga's money moves. The provider deduplicates a
// request by its key, so a retried step never moves money twice; a changed
// name would let a retry after a deploy charge again.
const (
	StepKeyAuthorise = "authorise"
	// StepKeyConfirmAttempt names a later attempt's confirm with another
	// card (its attempt number filled in): each card is a new request.
	StepKeyConfirmAttempt = "authorise-%d"
	StepKeyCapture        = "capture"
	StepKeyVoid           = "void"
	StepKeyRefund         = "refund"
)

// NotifyConfirmation is the kind of the message that confirms a sale; the
// database records it per booking so the fan gets it once.
const NotifyConfirmation = "confirmation"

// NotifyCancellation is the kind of the message that tells the fan staff or
// the organiser cancelled the booking, with their reason.
const NotifyCancellation = "cancellation"

// StepKey is the provider's idempotency key of one money step of a booking.
func StepKey(bookingID, step string) string { return bookingID + ":" + step }

// AttemptStepKey is the step key of checkout attempt n's confirm.
func AttemptStepKey(bookingID string, attempt int) string {
	return StepKey(bookingID, fmt.Sprintf(StepKeyConfirmAttempt, attempt))
}
