package store

// SurgeBySection is the surge read of the named sections, for tests that
// measure what it costs.
const SurgeBySection = surgeBySection

// OwnPendingSQL is a hold's lookup of the fan's own pending hold.
const OwnPendingSQL = ownPendingSQL

// ReadInSnapshot is readInSnapshot, for the test of its failure.
var ReadInSnapshot = readInSnapshot

// AlternativesNear is the read of a refused seat's nearest free seats.
const AlternativesNear = alternativesNear

// PreCheckSQL and CheckLimitSQL are the lookups of the fan's own
// reservations on an event, before and in a hold's transaction.
const (
	PreCheckSQL   = preCheckSQL
	CheckLimitSQL = checkLimitSQL
)

// UnpaidNightsSQL is a hotel hold's count of the account's ($1) unpaid
// room-nights in holds other than $2.
const UnpaidNightsSQL = unpaidNightsSQL
