package api

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// HoldRequest is the body of POST /v1/holds.
type HoldRequest struct {
	EventID   string   `json:"event_id"`
	SeatIDs   []string `json:"seat_ids,omitempty"`
	SectionID string   `json:"section_id,omitempty"`
	Quantity  int      `json:"quantity,omitempty"`
	Adjacent  bool     `json:"adjacent,omitempty"`
	PromoCode string   `json:"promo_code,omitempty"`
	// Stays book hotel rooms: alone (no event_id) a hotel-only hold, with
	// seats a package (see stays.go).
	Stays []StayBody `json:"stays,omitempty"`
	// ListingIDs buy resale listings of the event (GET
	// /v1/events/{event_id}/listings) instead of seats.
	ListingIDs []string `json:"listing_ids,omitempty"`
	// TicketTypes name each seat's ticket type (seat ID -> type ID, from
	// the event's ticket_types); TicketType is a general-admission cart's
	// (and every seat's the map leaves out). None: the event's first type.
	TicketTypes map[string]string `json:"ticket_types,omitempty"`
	TicketType  string            `json:"ticket_type,omitempty"`
}

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 16 << 10

var (
	idPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)
	promoPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// DecodeHoldRequest parses and validates a hold body. Every refusal names the
// offending field. The returned cart has its seats sorted and is what the
// idempotency hash covers, so formatting and seat order do not matter.
func DecodeHoldRequest(body []byte) (holds.Cart, []FieldError) {
	var req HoldRequest
	if err := jsonUnmarshal(body, &req); err != nil {
		return holds.Cart{}, []FieldError{jsonFieldError(err)}
	}
	var errs []FieldError
	hotelOnly := len(req.Stays) > 0 && req.EventID == "" && len(req.SeatIDs) == 0 && req.SectionID == "" &&
		req.Quantity == 0 && !req.Adjacent && req.PromoCode == ""
	stays, serrs := decodeStays(req.Stays)
	errs = append(errs, serrs...)
	if hotelOnly {
		return holds.Cart{Stays: stays}, errs
	}
	if !idPattern.MatchString(req.EventID) {
		errs = append(errs, FieldError{"event_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	cart := holds.Cart{EventID: req.EventID, SectionID: req.SectionID, Quantity: req.Quantity,
		Adjacent: req.Adjacent, PromoCode: strings.TrimSpace(req.PromoCode), Stays: stays}
	switch {
	case len(req.ListingIDs) > 0 && (len(req.SeatIDs) > 0 || req.SectionID != "" || req.Quantity != 0 || req.Adjacent ||
		len(req.Stays) > 0 || cart.PromoCode != ""):
		errs = append(errs, FieldError{"listing_ids", "resale listings are bought alone: no seats, section, stays or promotion code beside them"})
	case len(req.ListingIDs) > 0:
		var bad []FieldError
		cart.ListingIDs, bad = cartIDs("listing_ids", "listing", req.ListingIDs, func(id string) bool {
			u, err := uuid.Parse(id)
			return err == nil && u.String() == id
		})
		errs = append(errs, bad...)
	case len(req.SeatIDs) > 0 && (req.SectionID != "" || req.Quantity != 0 || req.Adjacent):
		errs = append(errs, FieldError{"seat_ids", "give either seat_ids or section_id with quantity, not both"})
	case len(req.SeatIDs) > 0:
		var bad []FieldError
		cart.SeatIDs, bad = cartIDs("seat_ids", "seat", req.SeatIDs, idPattern.MatchString)
		errs = append(errs, bad...)
	case req.SectionID != "":
		if !idPattern.MatchString(req.SectionID) {
			errs = append(errs, FieldError{"section_id", "not a section ID"})
		}
		if req.Quantity < 1 || req.Quantity > vocab.MaxSeatsPerHold {
			errs = append(errs, FieldError{"quantity", fmt.Sprintf("must be 1 to %d", vocab.MaxSeatsPerHold)})
		}
	default:
		errs = append(errs, FieldError{"seat_ids", "required: 1 to 6 seat IDs, or section_id with quantity"})
	}
	errs = append(errs, decodeTicketTypes(req, &cart)...)
	if cart.PromoCode != "" && !promoPattern.MatchString(cart.PromoCode) {
		errs = append(errs, FieldError{"promo_code", "letters, digits, '_' and '-', at most 64"})
	}
	return cart, errs
}

// cartIDs checks a cart's list of ids in field (seat_ids, listing_ids): at
// most a hold's worth of them, each one valid, none twice. It gives them
// back sorted, the order in which a hold takes their locks.
func cartIDs(field, what string, ids []string, valid func(string) bool) ([]string, []FieldError) {
	if len(ids) > vocab.MaxSeatsPerHold {
		return nil, []FieldError{{field, fmt.Sprintf("at most %d %ss per hold", vocab.MaxSeatsPerHold, what)}}
	}
	var errs []FieldError
	seen := map[string]bool{}
	for i, id := range ids {
		switch {
		case !valid(id):
			errs = append(errs, FieldError{fmt.Sprintf("%s[%d]", field, i), "not a " + what + " ID"})
		case seen[id]:
			errs = append(errs, FieldError{fmt.Sprintf("%s[%d]", field, i), "duplicate " + what + " " + id})
		}
		seen[id] = true
	}
	return slices.Sorted(slices.Values(ids)), errs
}

// typePattern is a ticket type's ID.
var typePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// decodeTicketTypes checks the cart's ticket types: each named seat is one
// of the cart's, each type a well-formed ID; resale listings take none.
func decodeTicketTypes(req HoldRequest, cart *holds.Cart) []FieldError {
	var errs []FieldError
	if len(req.ListingIDs) > 0 && (len(req.TicketTypes) > 0 || req.TicketType != "") {
		return []FieldError{{"ticket_types", "a resale listing keeps the type it was bought as"}}
	}
	if req.TicketType != "" {
		if !typePattern.MatchString(req.TicketType) {
			errs = append(errs, FieldError{"ticket_type", "not a ticket type ID"})
		}
		cart.TicketType = req.TicketType
	}
	if len(req.TicketTypes) > 0 {
		cart.TicketTypes = map[string]string{}
		for _, seat := range slices.Sorted(maps.Keys(req.TicketTypes)) {
			t := req.TicketTypes[seat]
			switch {
			case !slices.Contains(req.SeatIDs, seat):
				errs = append(errs, FieldError{"ticket_types." + seat, "not one of the cart's seat_ids"})
			case !typePattern.MatchString(t):
				errs = append(errs, FieldError{"ticket_types." + seat, "not a ticket type ID"})
			default:
				cart.TicketTypes[seat] = t
			}
		}
	}
	return errs
}

func jsonFieldError(err error) FieldError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return FieldError{Field: te.Field, Message: "must be " + te.Type.String()}
	}
	if errors.Is(err, io.EOF) {
		return FieldError{Field: "body", Message: "a JSON object is required"}
	}
	return FieldError{Field: "body", Message: "malformed JSON: " + err.Error()}
}

// cartHash identifies a request for idempotency: the normalised cart.
func cartHash(c holds.Cart) []byte {
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return h[:]
}

// holdHandlers serve holds and their checkout: a hold taken, read and
// released, then paid for through the booking use case.
type holdHandlers struct {
	holds *holds.Service
	// bookings releases a hold (its saga told) and checks it out; nil:
	// holds released by the hold use case alone, no checkout route.
	bookings *booking.Service
	// returns is where a checkout's return_url may point.
	returns  ReturnURLs
	problems problems
}

func (h *holdHandlers) createHold(c *gin.Context) {
	body, err := readBody(c)
	if err != nil {
		writeProblem(c, Invalid(FieldError{"body", "larger than 16 KiB or unreadable"}))
		return
	}
	cart, errs := DecodeHoldRequest(body)
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	ans, err := h.holds.Hold(c.Request.Context(), identity(c), cart, key, cartHash(cart), c.GetHeader("X-Admission-Pass"))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	if ans.Replayed {
		c.Header("Idempotent-Replayed", "true")
	} else {
		c.Header("Location", "/v1/holds/"+ans.Hold.ID.String())
	}
	c.Data(http.StatusCreated, jsonContentType, ans.Body)
}

// jsonContentType is what gin's c.JSON sends, for bodies rendered elsewhere.
const jsonContentType = "application/json; charset=utf-8"

func (h *holdHandlers) getHold(c *gin.Context) {
	id, ok := pathUUID(c, "id", "hold")
	if !ok {
		return
	}
	hold, err := h.holds.Get(c.Request.Context(), id, identity(c).UserID)
	h.problems.answer(c, holds.NewView(hold), err)
}

func (h *holdHandlers) deleteHold(c *gin.Context) {
	id, ok := pathUUID(c, "id", "hold")
	if !ok {
		return
	}
	var err error
	if h.bookings != nil {
		err = h.bookings.Release(c.Request.Context(), identity(c), id)
	} else {
		_, err = h.holds.Release(c.Request.Context(), identity(c), id)
	}
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// CheckoutRequest is the body of POST /v1/holds/{hold_id}/checkout.
type CheckoutRequest struct {
	PaymentMethod string `json:"payment_method,omitempty"`
	ReturnURL     string `json:"return_url,omitempty"`
	// Answers answer the event's questions (GET /v1/events/{id}):
	// [{"question_id","ticket_index","value"}].
	Answers []store.Answer `json:"answers,omitempty"`
}

var paymentMethodPattern = regexp.MustCompile(`^pm_[A-Za-z0-9_]{1,100}$`)

// checkout pays for a hold: the booking saga authorises the payment and
// sells the seats on the provider's verified event.
func (h *holdHandlers) checkout(c *gin.Context) {
	id, ok := pathUUID(c, "id", "hold")
	if !ok {
		return
	}
	var req CheckoutRequest
	if fe := decodeJSON(c, &req); fe != nil && fe.Message != "a JSON object is required" {
		writeProblem(c, Invalid(*fe))
		return
	}
	if req.PaymentMethod != "" && !paymentMethodPattern.MatchString(req.PaymentMethod) {
		writeProblem(c, Invalid(FieldError{"payment_method", "a payment method ID such as pm_card_visa"}))
		return
	}
	if fe := h.returns.check(req.ReturnURL); fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	who := identity(c)
	res, err := h.bookings.Checkout(c.Request.Context(), who, id, booking.CheckoutRequest{
		PaymentMethod: req.PaymentMethod, ReturnURL: req.ReturnURL, IP: clientIP(c.Request), DeviceID: who.DeviceID,
		Answers: req.Answers}, key)
	h.problems.answer(c, res, err)
}
