// Package workflows holds Encore's deterministic workflow code: the booking
// saga, one workflow per hold. Workflow functions are thin; the logic lives in
// unexported structs; every side effect is an activity in package activities.
package workflows

// Names shared by the API, the worker and support staff. Changing one breaks
// running workflows: add new names instead.
const (
	// TaskQueue is where booking workflows and their activities run.
	TaskQueue = "encore-booking"

	// BookingWorkflowName is the registered name of Booking.
	BookingWorkflowName = "Booking"

	// SignalRelease asks the booking to give its seats back now (the fan
	// pressed "release" or DELETE /v1/holds/{id}).
	SignalRelease = "release"

	// QueryStep returns the booking's current step, for support staff.
	QueryStep = "step"

	// Search attributes registered on the namespace, for support staff to
	// filter bookings in the Temporal Web UI.
	SearchAttrEvent  = "EncoreEventId"
	SearchAttrUser   = "EncoreUserId"
	SearchAttrStatus = "EncoreBookingStatus"
)

// BookingWorkflowID derives the workflow ID from the reservation ID, so a
// second start for the same hold is a no-op.
func BookingWorkflowID(reservationID string) string { return "booking-" + reservationID }
