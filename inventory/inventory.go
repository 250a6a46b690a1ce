// Package inventory names the states of Encore's inventory. Each typed state
// lists its full set here and nowhere else; the SQL CHECK constraints in
// schema/migrations mirror these lists.
package inventory

// SeatStatus is the state of one seat.
type SeatStatus string

// Every seat status.
const (
	SeatAvailable SeatStatus = "AVAILABLE"
	SeatHeld      SeatStatus = "HELD"
	SeatSold      SeatStatus = "SOLD"
	SeatBlocked   SeatStatus = "BLOCKED"
)

// SeatStatuses is the full set, in bitmap code order (0 available .. 3 blocked).
var SeatStatuses = []SeatStatus{SeatAvailable, SeatHeld, SeatSold, SeatBlocked}

// ReservationStatus is the state of a hold. A reservation ends exactly one
// way: PAID, EXPIRED or CANCELLED, and every path that ends it locks its row.
type ReservationStatus string

// Every reservation status.
const (
	ReservationPending   ReservationStatus = "PENDING_PAYMENT"
	ReservationPaid      ReservationStatus = "PAID"
	ReservationExpired   ReservationStatus = "EXPIRED"
	ReservationCancelled ReservationStatus = "CANCELLED"
)

// ReservationStatuses is the full set.
var ReservationStatuses = []ReservationStatus{ReservationPending, ReservationPaid, ReservationExpired, ReservationCancelled}

// Live reports whether a reservation in this status owns its seats.
func (s ReservationStatus) Live() bool { return s == ReservationPending || s == ReservationPaid }

// SectionKind says how a section's inventory is counted.
type SectionKind string

// Every section kind.
const (
	SectionSeated  SectionKind = "seated"  // identified inventory: one row per seat
	SectionGeneral SectionKind = "general" // counted inventory: a capacity and a taken count
)

// MaxSeatsPerHold bounds one cart.
const MaxSeatsPerHold = 6
