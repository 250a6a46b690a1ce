package rehearsal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/encore-tickets/encore/store"
)

// Summary is summary.json. The first twelve fields are the contract's
// names, fixed; the rest say more about the same sale.
type Summary struct {
	// Fans who arrived, and of them those admitted into checkout (past the
	// waiting room, or every fan on an unmetered event).
	Fans     int64 `json:"fans"`
	Admitted int64 `json:"admitted"`
	// Holds that were granted (201).
	Holds int64 `json:"holds"`
	// Bookings seen PAID, and paid bookings a second from the sale's
	// opening to the last one.
	BookingsPaid int64   `json:"bookings_paid"`
	GoodputPerS  float64 `json:"goodput_per_s"`
	// Goodput90PerS is the pace of the sale itself: the first 90% of the
	// run's paid bookings over the seconds from the opening until the last
	// of them was paid. GoodputPerS counts the tail too (seats a
	// cancellation gave back, resales, sold minutes later), so a sale that
	// sold out in half the window scores about the same as one that took
	// all of it; this one tells them apart.
	Goodput90PerS float64 `json:"goodput_90_per_s"`
	// Latency of POST /v1/holds, every answered attempt (granted or not).
	HoldP50MS float64 `json:"hold_p50_ms"`
	HoldP99MS float64 `json:"hold_p99_ms"`
	// From the granted hold's request to PAID seen by the fan: the fan's
	// pause before paying, the card, checkout, the saga and polling.
	HoldToPaidP99MS float64 `json:"hold_to_paid_p99_ms"`
	// From the inventory audit and the payment reconciliation.
	DoubleSales       int64 `json:"double_sales"`
	UnmatchedCaptures int   `json:"unmatched_captures"`
	// Kendall's tau-b between the paid fans' places in the queue and the
	// moments they bought; null when undefined (fewer than two).
	FairnessKendallTau *float64 `json:"fairness_kendall_tau"`
	// Seconds from the opening until the stack first said nothing was left
	// (every seat held or sold); null when it never did.
	SoldOutAfterS *float64 `json:"sold_out_after_s"`

	EventID        string    `json:"event_id"`
	API            string    `json:"api"`
	StartedAt      time.Time `json:"started_at"`
	DurationS      float64   `json:"duration_s"`
	OpenedAfterS   float64   `json:"opened_after_s"`
	Metered        bool      `json:"metered"`
	Seats          int       `json:"seats"`
	SeatsAvailable int       `json:"seats_available_at_start"`
	SeatsPaid      int64     `json:"seats_paid"`
	// SeatsCancelled are seats of paid bookings the fans cancelled: back
	// on sale, so SeatsPaid may exceed Seats by as many.
	SeatsCancelled   int64   `json:"seats_cancelled"`
	LastPaidAfterS   float64 `json:"last_paid_after_s"`
	HoldP90MS        float64 `json:"hold_p90_ms"`
	HoldAttempts     int64   `json:"hold_attempts"`
	HoldConflicts    int64   `json:"hold_conflicts"`
	HoldToPaidP50MS  float64 `json:"hold_to_paid_p50_ms"`
	SagaLagP50MS     float64 `json:"saga_lag_p50_ms"`
	SagaLagP99MS     float64 `json:"saga_lag_p99_ms"`
	CheckoutP50MS    float64 `json:"checkout_p50_ms"`
	CheckoutP99MS    float64 `json:"checkout_p99_ms"`
	Checkouts        int64   `json:"checkouts"`
	SoldOutFans      int64   `json:"sold_out_fans"`
	GaveUp           int64   `json:"gave_up"`
	FoundNothing     int64   `json:"found_nothing"`
	AbandonedDeleted int64   `json:"abandoned_released"`
	AbandonedExpired int64   `json:"abandoned_left_to_expire"`
	Declines         int64   `json:"declines"`
	ThreeDSCompleted int64   `json:"threeds_completed"`
	ThreeDSFailed    int64   `json:"threeds_failed"`
	SteppedUp        int64   `json:"stepped_up"`
	CancelsAsked     int64   `json:"cancels_asked"`
	Cancelled        int64   `json:"cancelled"`
	NotPaid          int64   `json:"bookings_not_paid"`
	Unsettled        int64   `json:"bookings_unsettled"`
	SocketFallbacks  int64   `json:"socket_fallbacks"`
	// Queue sockets the open-file limit left room for, and the fans who
	// found none free at some point and polled instead.
	SocketBudget      int   `json:"socket_budget"`
	SocketsOverBudget int64 `json:"sockets_over_budget"`
	ProofsOfWork      int64 `json:"proofs_of_work"`
	OwnCardsFailed    int64 `json:"own_cards_failed"`
	SourceAddresses   int   `json:"source_addresses"`
	// Answers that were problems: by type, and by call then type.
	Errors       map[string]int            `json:"errors"`
	ErrorsByCall map[string]map[string]int `json:"errors_by_call"`
	// The first detail the stack gave for each call and problem.
	ErrorExamples map[string]string `json:"error_examples"`
	// The stack's resident memory (the admin listener's
	// process_resident_memory_bytes), highest and last seen; 0 unknown.
	StackRSSMaxBytes  int64 `json:"stack_rss_max_bytes"`
	StackRSSLastBytes int64 `json:"stack_rss_last_bytes"`
	// The books: the audit's counts, and the reconciliation's.
	Audit            *store.AuditReport `json:"audit"`
	AuditViolations  int64              `json:"audit_violations"`
	AuditError       string             `json:"audit_error,omitempty"`
	Reconciled       int                `json:"payments_checked"`
	Captured         int                `json:"payments_captured"`
	Mismatches       []string           `json:"mismatches,omitempty"`
	ReconcileError   string             `json:"reconcile_error,omitempty"`
	ReconcileRetries int                `json:"reconcile_runs"`
	// SettleRuns: how many times the audit and the settle count were read
	// before their answer counted (again while a paid booking still waited
	// for its tickets, as after a late PostgreSQL restart).
	SettleRuns   int  `json:"settle_runs"`
	BooksChecked bool `json:"books_checked"`
	// TicketsPerBookingExact: every paid booking has exactly its tickets
	// (none missing, none beyond its sale, none revoked twice).
	TicketsPerBookingExact bool `json:"tickets_per_booking_exact"`
	// StuckWorkflows: holds pending past expiry and paid bookings without
	// tickets after the drain; LostWebhooks: provider events never handed
	// to their booking.
	StuckWorkflows int64  `json:"stuck_workflows"`
	LostWebhooks   int64  `json:"lost_webhooks"`
	SettleError    string `json:"settle_error,omitempty"`
	// LostWebhookEvents names the first lost ones (store.Settled).
	LostWebhookEvents []string `json:"lost_webhook_events,omitempty"`
	// UnsettledBookings names the first paid bookings missing tickets and
	// stuck holds, with their payment's state (store.Settled): the
	// workflows to open (booking-<id>) while the stack is still up.
	UnsettledBookings []string `json:"unsettled_bookings,omitempty"`
	// TransfersOffered and TransfersAccepted are tickets paid fans gave to
	// a friend; Listed the tickets put up for resale, ResaleHolds the
	// listings fans who found nothing else held, ResalePaid those paid.
	TransfersOffered  int64 `json:"transfers_offered"`
	TransfersAccepted int64 `json:"transfers_accepted"`
	Listed            int64 `json:"resale_listed"`
	ResaleHolds       int64 `json:"resale_holds"`
	ResalePaid        int64 `json:"resale_paid"`
	// PackageHolds are holds of seats with a hotel room; PackagesPaid those
	// paid.
	PackageHolds int64 `json:"package_holds"`
	PackagesPaid int64 `json:"packages_paid"`
	// Chaos are the kills and restarts played during the sale, in order.
	Chaos []ChaosEvent `json:"chaos,omitempty"`
	// Resources are the stack's memory, goroutines and connections over
	// the run, and whether they stayed flat; Soak: the run was a soak,
	// whose verdict includes them.
	Resources *Resources `json:"resources,omitempty"`
	Soak      bool       `json:"soak,omitempty"`

	// Interrupted: stopped before its end (Ctrl-C); stragglers: fans still
	// busy 15 seconds past the hard deadline were left behind.
	Interrupted bool `json:"interrupted"`
	Stragglers  bool `json:"stragglers"`

	Mix Mix `json:"mix"`
}

// ChaosEvent is one kill or restart of a part of the stack during the sale.
type ChaosEvent struct {
	AfterS float64 `json:"after_s"` // seconds from the sale's start
	What   string  `json:"what"`
}

// Mix is the configuration the sale was played with.
type Mix struct {
	ArrivalRate    float64 `json:"arrival_rate"`
	Duration       string  `json:"duration"`
	Drain          string  `json:"drain"`
	Abandon        float64 `json:"abandon"`
	Decline        float64 `json:"decline"`
	ThreeDS        float64 `json:"threeds"`
	ThreeDSFail    float64 `json:"threeds_fail"`
	Cancel         float64 `json:"cancel"`
	Transfer       float64 `json:"transfer"`
	Resell         float64 `json:"resell"`
	Package        float64 `json:"package"`
	PackageRooms   int     `json:"package_rooms"`
	Think          string  `json:"think"`
	MaxSeats       int     `json:"max_seats"`
	Seed           int64   `json:"seed"`
	Concurrency    int     `json:"concurrency"`
	FansPerAddress int     `json:"fans_per_address"`
}

// Failed says whether the books found a broken rule: a double sale, a
// captured payment without exactly one paid booking or one refund, any
// audit violation, or books that could not be read; in a soak, also a
// resource that grew or was not measured.
func (s *Summary) Failed() bool {
	return s.DoubleSales > 0 || s.UnmatchedCaptures > 0 || s.AuditViolations > 0 || s.StuckWorkflows > 0 || s.LostWebhooks > 0 ||
		(s.BooksChecked && (s.AuditError != "" || s.ReconcileError != "" || s.SettleError != "" || !s.TicketsPerBookingExact)) ||
		(s.Soak && (s.Resources == nil || !s.Resources.Flat))
}

// write saves the summary as dir/summary.json.
func (s *Summary) write(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644)
}
