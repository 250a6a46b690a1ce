package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/internal/bulkhead"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/waitingroom"
)

// Problem is an RFC 9457 problem details object. Type is "/problems/<name>";
// the extension members below are part of the public contract too.
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
	// The sale's times (not-on-sale only); offsale_at is absent when the
	// sale does not close by itself.
	OnsaleAt  *time.Time `json:"onsale_at,omitempty"`
	OffsaleAt *time.Time `json:"offsale_at,omitempty"`
	// Challenge is the proof of work to solve (challenge-required only).
	Challenge *waitingroom.Challenge `json:"challenge,omitempty"`
	// The night a stay could not get (room-unavailable only).
	PropertyID string `json:"property_id,omitempty"`
	RoomType   string `json:"room_type,omitempty"`
	Night      string `json:"night,omitempty"`
	// The listings a resale hold could not get (listing-unavailable only),
	// and the highest price a listing may ask (price-above-cap only).
	UnavailableListingIDs []string     `json:"unavailable_listing_ids,omitempty"`
	Cap                   *money.Money `json:"cap,omitempty"`
	// The nights an inventory change would leave short of rooms
	// (inventory-conflict only), with room_type and property_id above.
	Nights []NightConflict `json:"nights,omitempty"`

	retryAfter time.Duration
}

// NightConflict is one night an inventory change would leave with more
// rooms held and sold than allotment plus overbooking limit: the counters
// as they stand and the allotment and limit asked for.
type NightConflict struct {
	Night         string `json:"night"`
	Held          int    `json:"held"`
	Sold          int    `json:"sold"`
	Allotment     int    `json:"allotment"`
	OverbookLimit int    `json:"overbook_limit"`
}

// FieldError names the offending field of an invalid request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem names. The first eleven are the public contract's fixed names; the
// rest extend it. Clients match on type, so a name never changes.
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
	ProbNotOnSale            = "not-on-sale"           // 403: the sale has not opened, has closed, or the event is cancelled (onsale_at, offsale_at)
	ProbHoldNotPending       = "hold-not-pending"      // 409: the hold is paid or already ended
	ProbMethodNotAllowed     = "method-not-allowed"    // 405
	ProbInternal             = "internal"              // 500: a bug; never expected
	ProbForbidden            = "forbidden"             // 403: the caller lacks the role or organiser scope
	ProbConflict             = "conflict"              // 409: the thing cannot change now (a published event's prices, a sold seat, a taken code)

	ProbChallengeRequired = "challenge-required" // 428: solve the proof-of-work challenge in "challenge", then join again
	ProbAdmittedElsewhere = "admitted-elsewhere" // 409: the account was admitted on another device

	ProbPaymentDeclined     = "payment-declined"        // 402: the card was declined; try another
	ProbPaymentRefused      = "payment-refused"         // 403: the fraud check refused the payment
	ProbBookingNotCancelled = "booking-not-cancellable" // 409: outside the event's policy
	ProbWebhookConflict     = "webhook-conflict"        // 409: an event ID reused with other content
	ProbRoomUnavailable     = "room-unavailable"        // 409: a night of a stay has no room left; names it
	ProbLayoutTooLarge      = "layout-too-large"        // 413: a venue import passed a cap (body size, seats, sections); names the field and "limit"
	ProbStayLimit           = "stay-limit"              // 403: the fan's unpaid room-nights would pass the limit ("limit")
	ProbStayAlreadyHeld     = "stay-already-held"       // 409: the fan already holds this property on a night of the stay ("hold_id")

	ProbSalesPaused = "sales-paused" // 503: the operator paused the event's sales; retry after Retry-After

	ProbTicketOnOtherDevice   = "ticket-on-another-device" // 409: the ticket's wallet was opened on another device since; its codes come from there
	ProbTicketNotTransferable = "ticket-not-transferable"  // 409: the ticket is not valid, or already offered
	ProbTransferNotPending    = "transfer-not-pending"     // 409: the transfer was accepted, cancelled or has expired
	ProbTransferLimit         = "transfer-limit"           // 403: the ticket or the fan has passed the transfer limits
	ProbWrongRecipient        = "wrong-recipient"          // 403: the transfer is for another email address; sign in with that one
	ProbTicketTransferred     = "ticket-transferred"       // 410: the ticket was handed to someone else, who holds a new one

	ProbTicketListed       = "ticket-listed"       // 409: the ticket is listed for resale; withdraw the listing to use or send it
	ProbTicketNotListable  = "ticket-not-listable" // 409: the ticket is not valid, is offered to someone, or was used at the door
	ProbResaleClosed       = "resale-closed"       // 409: the organiser does not allow resale of this event, or it has closed
	ProbPriceAboveCap      = "price-above-cap"     // 422: the price passes the organiser's cap, which "cap" names
	ProbListingUnavailable = "listing-unavailable" // 409: listings sold, withdrawn, closed, held or offered first; "unavailable_listing_ids" names them
	ProbListingNotActive   = "listing-not-active"  // 409: the listing was sold, withdrawn or has expired
	ProbListingHeld        = "listing-held"        // 409: a buyer holds or is paying for the listing
	ProbResaleLimit        = "resale-limit"        // 403: the ticket or the fan has passed the listing limits
	ProbNoInvoice          = "no-invoice"          // 404: the booking has no invoice (not paid, a hotel-only stay, a resale) or no credit note

	ProbInventoryConflict = "inventory-conflict" // 409: an inventory change would leave nights with more rooms held and sold than allotment plus limit; "nights" names them
)

var titles = map[string]string{
	ProbInvalidRequest:        "The request is not valid",
	ProbSeatUnavailable:       "Some seats are no longer available",
	ProbRoomUnavailable:       "A night of the stay has no room left",
	ProbInventoryConflict:     "Some nights have more rooms booked than that would allow",
	ProbLayoutTooLarge:        "The venue layout is larger than allowed",
	ProbStayLimit:             "Too many unpaid room-nights",
	ProbStayAlreadyHeld:       "You already hold a stay at this property on these nights",
	ProbHoldExpired:           "The hold has expired",
	ProbIdempotencyKeyReused:  "This Idempotency-Key was used for another request",
	ProbRequestInProgress:     "A request with this Idempotency-Key is still in progress",
	ProbPurchaseLimit:         "Purchase limit reached",
	ProbQueueRequired:         "Join the waiting room first",
	ProbRateLimited:           "Too many requests",
	ProbUnauthorized:          "Authentication required",
	ProbNotFound:              "Not found",
	ProbUnavailable:           "Temporarily unavailable, retry shortly",
	ProbPendingCheckout:       "You already have a hold for this event",
	ProbPromotionUnavailable:  "The promotion cannot be used",
	ProbNotOnSale:             "The event is not on sale",
	ProbHoldNotPending:        "The hold is no longer pending",
	ProbMethodNotAllowed:      "Method not allowed",
	ProbInternal:              "Internal error",
	ProbForbidden:             "You are not allowed to do this",
	ProbConflict:              "This cannot change now",
	ProbChallengeRequired:     "Solve the challenge to join the waiting room",
	ProbAdmittedElsewhere:     "Admitted on another device",
	ProbPaymentDeclined:       "The payment was declined",
	ProbPaymentRefused:        "The payment was refused",
	ProbBookingNotCancelled:   "The booking cannot be cancelled",
	ProbWebhookConflict:       "The event ID was already used for other content",
	ProbSalesPaused:           "Sales of this event are paused",
	ProbTicketOnOtherDevice:   "The ticket is on another device",
	ProbTicketNotTransferable: "The ticket cannot be transferred now",
	ProbTransferNotPending:    "The transfer is no longer open",
	ProbTransferLimit:         "Transfer limit reached",
	ProbWrongRecipient:        "The transfer is for another email address",
	ProbTicketTransferred:     "The ticket was transferred",
	ProbTicketListed:          "The ticket is listed for resale",
	ProbTicketNotListable:     "The ticket cannot be listed now",
	ProbResaleClosed:          "Resale is closed for this event",
	ProbPriceAboveCap:         "The price is above the resale cap",
	ProbListingUnavailable:    "Some listings are no longer available",
	ProbListingNotActive:      "The listing is no longer active",
	ProbListingHeld:           "A buyer holds this listing",
	ProbResaleLimit:           "Resale limit reached",
	ProbNoInvoice:             "No invoice for this booking",
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

// writeProblem is the one way the edge answers with a problem: it names the
// request as the instance and ends the handler chain.
func writeProblem(c *gin.Context, p *Problem) {
	p.Instance = c.Request.URL.Path
	p.write(c.Writer)
	c.Abort()
}

func (p *Problem) write(w http.ResponseWriter) {
	if p.retryAfter > 0 {
		secs := int((p.retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// problems answers a failed request: problemFor is the one mapping from a
// domain error to its problem, writeProblem the one writer. The server and
// every handler group hold one over the server's log, so an error is
// answered (and an unexplained one logged) the same whichever route met it.
type problems struct{ log *slog.Logger }

// problemFor maps every domain error of every plane to its problem, in one
// place. Unknown errors come from infrastructure: they are logged and
// answered as a retryable 503, never as a 500.
func (ps problems) problemFor(err error) *Problem {
	var (
		su    *store.SeatUnavailableError
		pc    *store.PendingCheckoutError
		pl    *store.PurchaseLimitError
		inv   *store.InvalidError
		pr    *store.PromotionError
		rl    *holds.RateLimitedError
		ce    *seathint.ContendedError
		dec   *booking.DeclinedError
		shed  *backpressure.OverloadedError
		full  *bulkhead.FullError
		sig   *booking.SignatureError
		wrl   *waitingroom.RateLimitedError
		ch    *waitingroom.ChallengeRequiredError
		ru    *store.RoomUnavailableError
		sl    *store.StayLimitError
		sh    *store.StayHeldError
		nos   *store.NotOnSaleError
		cverr *controls.ValidationError
		verr  *venues.ValidationError
		vlim  *venues.LimitError
		lu    *store.ListingUnavailableError
		rc    *store.ResaleClosedError
		pcap  *store.PriceAboveCapError
		ic    *store.InventoryConflictError
	)
	switch {
	case errors.As(err, &ru):
		p := NewProblem(http.StatusConflict, ProbRoomUnavailable, ru.Detail)
		p.PropertyID, p.RoomType, p.Night = ru.PropertyID, ru.RoomType, ru.Night.Format(time.DateOnly)
		return p
	case errors.As(err, &ic):
		p := NewProblem(http.StatusConflict, ProbInventoryConflict, strings.TrimPrefix(ic.Error(), "store: ")+
			"; lower it less, or walk or cancel bookings first")
		p.PropertyID, p.RoomType = ic.PropertyID, ic.RoomType
		dates := make([]string, len(ic.Nights))
		for i, n := range ic.Nights {
			dates[i] = n.Night.Format(time.DateOnly)
			p.Nights = append(p.Nights, NightConflict{Night: dates[i], Held: n.Held, Sold: n.Sold, Allotment: n.Allotment,
				OverbookLimit: n.OverbookLimit})
		}
		p.Errors = []FieldError{{Field: ic.Field, Message: "more rooms are held and sold than this allows on " + strings.Join(dates, ", ")}}
		return p
	case errors.Is(err, store.ErrPropertyExists):
		return NewProblem(http.StatusConflict, ProbConflict, "a property with this ID exists")
	case errors.As(err, &sl):
		// Forbidden like purchase-limit: retrying cannot help until the fan
		// pays for or releases a hold.
		msg := fmt.Sprintf("at most %d unpaid room-nights per fan", sl.Limit)
		p := NewProblem(http.StatusForbidden, ProbStayLimit, fmt.Sprintf(
			"%s: you hold %d and this hold asks for %d; pay for or release a hold first", msg, sl.Held, sl.Requested))
		p.Limit, p.Errors = sl.Limit, []FieldError{{Field: "stays", Message: msg}}
		return p
	case errors.As(err, &sh):
		field := fmt.Sprintf("stays[%d].property_id", sh.Stay)
		p := NewProblem(http.StatusConflict, ProbStayAlreadyHeld, fmt.Sprintf(
			"your unpaid hold %s already has %s on a night of this stay; pay for or release it, or hold more rooms in one hold",
			sh.HoldID, sh.PropertyID))
		p.HoldID, p.PropertyID = sh.HoldID.String(), sh.PropertyID
		p.Errors = []FieldError{{Field: field, Message: "one unpaid hold per property and night"}}
		return p
	case errors.As(err, &su):
		p := NewProblem(http.StatusConflict, ProbSeatUnavailable, su.Detail)
		p.UnavailableSeatIDs = &[]string{}
		if su.SeatIDs != nil {
			p.UnavailableSeatIDs = &su.SeatIDs
		}
		p.Alternatives = &[]string{}
		if su.Alternatives != nil {
			p.Alternatives = &su.Alternatives
		}
		return p
	case errors.As(err, &ce):
		p := NewProblem(http.StatusConflict, ProbSeatUnavailable, "seats are being held by another fan")
		p.UnavailableSeatIDs, p.Alternatives = &ce.SeatIDs, &[]string{}
		return p
	case errors.As(err, &pc):
		p := NewProblem(http.StatusConflict, ProbPendingCheckout, "finish or release your current hold first")
		p.HoldID = pc.HoldID
		return p
	case errors.As(err, &pl):
		p := NewProblem(http.StatusForbidden, ProbPurchaseLimit, pl.Error()[len("store: "):])
		p.Limit = pl.Limit
		return p
	case errors.As(err, &inv):
		return Invalid(FieldError{Field: inv.Field, Message: inv.Message})
	case errors.As(err, &verr):
		return invalidFields(verr.Errors)
	case errors.As(err, &vlim):
		p := NewProblem(http.StatusRequestEntityTooLarge, ProbLayoutTooLarge, vlim.Field+": "+vlim.Message)
		p.Errors, p.Limit = []FieldError{{Field: vlim.Field, Message: vlim.Message}}, vlim.Limit
		return p
	case errors.Is(err, venues.ErrConflict):
		return NewProblem(http.StatusConflict, ProbConflict, strings.TrimPrefix(err.Error(), "conflict: "))
	case errors.As(err, &pr):
		return NewProblem(http.StatusConflict, ProbPromotionUnavailable, pr.Code+": "+pr.Reason)
	case errors.As(err, &rl):
		return NewProblem(http.StatusTooManyRequests, ProbRateLimited, "slow down").RetryAfter(rl.RetryAfter)
	case errors.As(err, &wrl):
		return NewProblem(http.StatusTooManyRequests, ProbRateLimited, "too many requests; slow down").RetryAfter(wrl.Wait)
	case errors.As(err, &ch):
		p := NewProblem(http.StatusPreconditionRequired, ProbChallengeRequired, ch.Detail)
		p.Challenge = &ch.Challenge
		return p
	case errors.As(err, &dec):
		p := NewProblem(http.StatusPaymentRequired, ProbPaymentDeclined, dec.Message)
		p.DeclineCode, p.AttemptsLeft = dec.Code, dec.AttemptsLeft
		return p
	case errors.As(err, &sig):
		return Invalid(FieldError{"Stripe-Signature", "refused: " + sig.Reason})
	case errors.As(err, &cverr):
		return invalidFields(cverr.Errors)
	case errors.Is(err, controls.ErrEmptyPatch):
		return Invalid(FieldError{Field: "body", Message: "name at least one dial"})
	case errors.Is(err, holds.ErrSalesPaused):
		return NewProblem(http.StatusServiceUnavailable, ProbSalesPaused, "sales of this event are paused by the operator; retry shortly").RetryAfter(30 * time.Second)
	case errors.Is(err, holds.ErrQueueRequired):
		return NewProblem(http.StatusTooManyRequests, ProbQueueRequired, err.Error()).RetryAfter(5 * time.Second)
	case errors.Is(err, waitingroom.ErrNoRoom):
		return NewProblem(http.StatusNotFound, ProbNotFound, "no waiting room for this event (unknown or not metered)")
	case errors.Is(err, waitingroom.ErrNotInLine):
		return NewProblem(http.StatusNotFound, ProbNotFound, "not in line; POST to this URL to join")
	case errors.Is(err, waitingroom.ErrAdmittedElsewhere):
		return NewProblem(http.StatusConflict, ProbAdmittedElsewhere, "this account was admitted on another device; continue there")
	case errors.Is(err, waitingroom.ErrUnavailable):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "the waiting room cannot answer now; retry").RetryAfter(2 * time.Second)
	case errors.Is(err, booking.ErrRefused):
		return NewProblem(http.StatusForbidden, ProbPaymentRefused, "the payment was refused")
	case errors.Is(err, booking.ErrNotCancellable):
		return NewProblem(http.StatusConflict, ProbBookingNotCancelled, "the booking can no longer change, or its cancellation deadline has passed")
	case errors.Is(err, booking.ErrBusy):
		return NewProblem(http.StatusConflict, ProbRequestInProgress, "a checkout of this booking is still running").RetryAfter(2 * time.Second)
	case errors.As(err, &shed):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, shed.Error()).RetryAfter(shed.RetryAfter)
	case errors.As(err, &full):
		// The read pool's share for this kind of read is taken: refused at
		// once rather than queued behind a flood (catalog.Service.Guard).
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "too many "+full.Class+" reads at once; retry shortly").RetryAfter(full.RetryAfter)
	case errors.Is(err, booking.ErrUnavailable):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "the booking service cannot answer now; retry").RetryAfter(2 * time.Second)
	case errors.Is(err, booking.ErrWebhookConflict):
		return NewProblem(http.StatusConflict, ProbWebhookConflict, err.Error())
	case errors.Is(err, booking.ErrUnknownPayment):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "unknown payment; retry").RetryAfter(5 * time.Second)
	case errors.Is(err, booking.ErrNotDelivered):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "stored; delivery to the booking failed, retry").RetryAfter(5 * time.Second)
	case errors.Is(err, tickets.ErrRevoked):
		return NewProblem(http.StatusNotFound, ProbNotFound, "the ticket was revoked (refunded or cancelled)")
	case errors.Is(err, store.ErrTicketNotTransferable):
		return NewProblem(http.StatusConflict, ProbTicketNotTransferable, "only a valid ticket not already offered can be transferred")
	case errors.Is(err, store.ErrTransferNotPending):
		return NewProblem(http.StatusConflict, ProbTransferNotPending, "the transfer was accepted, cancelled or has expired")
	case errors.Is(err, store.ErrTransferLimit):
		return NewProblem(http.StatusForbidden, ProbTransferLimit, "this ticket has changed hands as often as allowed, or you have as many open transfers as allowed")
	case errors.Is(err, store.ErrWrongRecipient):
		return NewProblem(http.StatusForbidden, ProbWrongRecipient, "sign in with the email address the ticket was sent to")
	case errors.As(err, &lu):
		p := NewProblem(http.StatusConflict, ProbListingUnavailable, lu.Detail)
		p.UnavailableListingIDs = lu.ListingIDs
		return p
	case errors.As(err, &rc):
		return NewProblem(http.StatusConflict, ProbResaleClosed, rc.Reason)
	case errors.As(err, &pcap):
		p := NewProblem(http.StatusUnprocessableEntity, ProbPriceAboveCap, "the organiser caps resale at "+money.Format(pcap.Cap)+" for this ticket")
		p.Cap = &pcap.Cap
		p.Errors = []FieldError{{Field: "price.amount", Message: "at most " + strconv.FormatInt(pcap.Cap.Amount, 10)}}
		return p
	case errors.Is(err, store.ErrTicketNotListable):
		return NewProblem(http.StatusConflict, ProbTicketNotListable, "only a valid ticket that is not offered to someone, listed already or used at the door can be listed")
	case errors.Is(err, store.ErrListingNotActive):
		return NewProblem(http.StatusConflict, ProbListingNotActive, "the listing was sold, withdrawn or has expired")
	case errors.Is(err, store.ErrListingHeld):
		return NewProblem(http.StatusConflict, ProbListingHeld, "a buyer holds or is paying for this listing; it can be withdrawn if their hold ends")
	case errors.Is(err, store.ErrResaleLimit):
		return NewProblem(http.StatusForbidden, ProbResaleLimit, "this ticket was listed or changed hands as often as allowed, or you have as many open listings as allowed")
	case errors.Is(err, store.ErrNoInvoice):
		return NewProblem(http.StatusNotFound, ProbNoInvoice, "this booking has no such document: invoices come with paid bookings the organiser sold, credit notes with their refunds")
	case errors.Is(err, tickets.ErrListed):
		return NewProblem(http.StatusConflict, ProbTicketListed, "this ticket is listed for resale; withdraw the listing to use or send it")
	case errors.Is(err, tickets.ErrTransferred):
		return NewProblem(http.StatusGone, ProbTicketTransferred, "this ticket was sent to someone else, who holds a new one; it no longer opens the door")
	case errors.Is(err, tickets.ErrOtherDevice):
		return NewProblem(http.StatusConflict, ProbTicketOnOtherDevice, "this ticket was opened on another device; open it there, or open its wallet here to move it back")
	case errors.Is(err, tickets.ErrSealing):
		ps.log.Error("ticket secret cannot be opened; check ENCORE_TICKET_SEALING_KEY", "err", err)
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "the ticket cannot be shown right now").RetryAfter(5 * time.Second)
	case errors.Is(err, catalog.ErrBadCursor):
		return Invalid(FieldError{"cursor", "not a cursor of this query; start again without it"})
	case errors.Is(err, store.ErrNotFound):
		return NewProblem(http.StatusNotFound, ProbNotFound, "not found")
	case errors.Is(err, booking.ErrForbidden), errors.Is(err, store.ErrOtherOrg):
		return NewProblem(http.StatusForbidden, ProbForbidden, "your roles do not cover this object")
	case errors.Is(err, store.ErrHoldExpired):
		return NewProblem(http.StatusGone, ProbHoldExpired, "the hold expired; its seats were released")
	case errors.Is(err, store.ErrNotPending):
		return NewProblem(http.StatusConflict, ProbHoldNotPending, "the hold is paid or already ended")
	case errors.Is(err, store.ErrKeyReused):
		return NewProblem(http.StatusUnprocessableEntity, ProbIdempotencyKeyReused, "send a new Idempotency-Key for a different request")
	case errors.Is(err, store.ErrRequestInProgress):
		return NewProblem(http.StatusConflict, ProbRequestInProgress, "retry after the first request finishes").RetryAfter(time.Second)
	case errors.As(err, &nos):
		p := NewProblem(http.StatusForbidden, ProbNotOnSale, nos.Reason)
		onsale := nos.OnsaleAt.UTC()
		p.OnsaleAt = &onsale
		if nos.OffsaleAt != nil {
			offsale := nos.OffsaleAt.UTC()
			p.OffsaleAt = &offsale
		}
		return p
	case errors.Is(err, store.ErrNotOnSale):
		return NewProblem(http.StatusForbidden, ProbNotOnSale, "the event is not on sale")
	case errors.Is(err, store.ErrBusy), errors.Is(err, context.DeadlineExceeded), errors.Is(err, seatmap.ErrUnavailable):
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "busy, retry").RetryAfter(time.Second)
	default:
		ps.log.Error("request failed", "err", err)
		return NewProblem(http.StatusServiceUnavailable, ProbUnavailable, "a dependency failed, retry").RetryAfter(2 * time.Second)
	}
}

// answer writes v as 200 OK or, when err is set, err's problem (fail): the
// end of a handler whose one outcome is a value or an error. v is
// evaluated either way, so it must be safe to build on failure.
func (ps problems) answer(c *gin.Context, v any, err error) {
	if err != nil {
		ps.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// fail answers err as its problem; a client that left gets nothing.
func (ps problems) fail(c *gin.Context, err error) {
	// A client that left cancels the request's context; the request's own
	// deadline (DeadlineExceeded) is answered below.
	if errors.Is(err, context.Canceled) && errors.Is(c.Request.Context().Err(), context.Canceled) {
		c.Abort()
		return
	}
	writeProblem(c, ps.problemFor(err))
}

// fail answers err as its problem over the server's log, for a handler
// written against the server itself (the deadline tests' slow route); the
// handler groups answer through the problems they hold.
func (s *Server) fail(c *gin.Context, err error) { problems{log: s.Log}.fail(c, err) }

// notFound answers 404 for a path parameter that cannot name anything.
func notFound(c *gin.Context, what string) {
	writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such "+what))
}

// invalidFields is Invalid naming each field of another package's refusal
// (field errors of the same two fields as FieldError).
func invalidFields[E venues.FieldError | controls.FieldError](errs []E) *Problem {
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		out[i] = FieldError(e)
	}
	return Invalid(out...)
}

// pathUUID is the path parameter param as a UUID. A value that is not one
// names no such what: that is answered here and ok is false.
func pathUUID(c *gin.Context, param, what string) (id uuid.UUID, ok bool) {
	id, err := uuid.Parse(c.Param(param))
	if err != nil {
		notFound(c, what)
		return uuid.UUID{}, false
	}
	return id, true
}

// countParam reads v, the raw value of the parameter name, as a whole
// number from 1 to most, def when v is empty; any other value is refused
// as bad, naming the parameter with msg.
func countParam(name, v string, def, most int, msg string) (n int, bad *FieldError) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, &FieldError{name, msg}
	}
	return n, nil
}

// pathID is the path parameter param when it has the form of an ID. Any
// other value names no such what: that is answered here and ok is false.
func pathID(c *gin.Context, param, what string) (id string, ok bool) {
	id = c.Param(param)
	if !idPattern.MatchString(id) {
		notFound(c, what)
		return "", false
	}
	return id, true
}
