package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Problem is an RFC 9457 problem details object. Type is "/problems/<name>"
// with the names fixed by DESIGN.md's API contract; the extension members are
// the contract's too.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`

	Errors []FieldError `json:"errors,omitempty"`
	// Pointers so a seat-unavailable problem always carries both lists,
	// empty or not, and other problems carry neither.
	UnavailableSeatIDs *[]string `json:"unavailable_seat_ids,omitempty"`
	Alternatives       *[]string `json:"alternatives,omitempty"`
	HoldID             string    `json:"hold_id,omitempty"`
	Limit              int       `json:"limit,omitempty"`
	DeclineCode        string    `json:"decline_code,omitempty"`
	AttemptsLeft       *int      `json:"attempts_left,omitempty"`

	retryAfter time.Duration
}

// FieldError names the offending field of an invalid request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem names. The first eleven are DESIGN.md's; the rest extend it.
const (
	ProbInvalidRequest       = "invalid-request"
	ProbSeatUnavailable      = "seat-unavailable"
	ProbHoldExpired          = "hold-expired"
	ProbIdempotencyKeyReused = "idempotency-key-reused"
	ProbRequestInProgress    = "request-in-progress"
	ProbPurchaseLimit        = "purchase-limit"
	ProbQueueRequired        = "queue-required"
	ProbRateLimited          = "rate-limited"
	ProbUnauthorized         = "unauthorized"
	ProbNotFound             = "not-found"
	ProbUnavailable          = "unavailable"

	ProbPendingCheckout      = "pending-checkout"      // 409: the fan already holds seats for this event
	ProbPromotionUnavailable = "promotion-unavailable" // 409: promotion cap reached or already used
	ProbNotOnSale            = "not-on-sale"           // 403: the sale has not opened
	ProbHoldNotPending       = "hold-not-pending"      // 409: the hold is paid or already ended
	ProbMethodNotAllowed     = "method-not-allowed"    // 405
	ProbInternal             = "internal"              // 500: a bug; never expected
)

var titles = map[string]string{
	ProbInvalidRequest:       "The request is not valid",
	ProbSeatUnavailable:      "Some seats are no longer available",
	ProbHoldExpired:          "The hold has expired",
	ProbIdempotencyKeyReused: "This Idempotency-Key was used for another request",
	ProbRequestInProgress:    "A request with this Idempotency-Key is still in progress",
	ProbPurchaseLimit:        "Purchase limit reached",
	ProbQueueRequired:        "Join the waiting room first",
	ProbRateLimited:          "Too many requests",
	ProbUnauthorized:         "Authentication required",
	ProbNotFound:             "Not found",
	ProbUnavailable:          "Temporarily unavailable, retry shortly",
	ProbPendingCheckout:      "You already have a hold for this event",
	ProbPromotionUnavailable: "The promotion cannot be used",
	ProbNotOnSale:            "The sale has not opened yet",
	ProbHoldNotPending:       "The hold is no longer pending",
	ProbMethodNotAllowed:     "Method not allowed",
	ProbInternal:             "Internal error",
}

// NewProblem builds a problem of a named type.
func NewProblem(status int, name, detail string) *Problem {
	return &Problem{Type: "/problems/" + name, Title: titles[name], Status: status, Detail: detail}
}

// Invalid is a 422 naming the offending fields.
func Invalid(errs ...FieldError) *Problem {
	p := NewProblem(http.StatusUnprocessableEntity, ProbInvalidRequest, errs[0].Field+": "+errs[0].Message)
	p.Errors = errs
	return p
}

// RetryAfter sets the Retry-After header the problem is sent with.
func (p *Problem) RetryAfter(d time.Duration) *Problem {
	p.retryAfter = d
	return p
}

// Write sends the problem.
func (p *Problem) Write(w http.ResponseWriter) {
	if p.retryAfter > 0 {
		secs := int((p.retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// Problem names of the admit plane (the waiting room).
const (
	ProbChallengeRequired = "challenge-required" // 428: solve the proof-of-work challenge in "challenge", then join again
	ProbAdmittedElsewhere = "admitted-elsewhere" // 409: the account was admitted on another device
)

func init() {
	titles[ProbChallengeRequired] = "Solve the challenge to join the waiting room"
	titles[ProbAdmittedElsewhere] = "Admitted on another device"
}
