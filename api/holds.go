package api

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/booking/saga"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/money"
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
}

// HoldResponse is a hold as the contract shows it.
type HoldResponse struct {
	HoldID    string         `json:"hold_id"`
	EventID   string         `json:"event_id"`
	Status    string         `json:"status"`
	SeatIDs   []string       `json:"seat_ids"`
	SectionID string         `json:"section_id,omitempty"`
	Quantity  int            `json:"quantity"`
	ExpiresAt time.Time      `json:"expires_at"`
	Total     money.Money    `json:"total"`
	PromoCode string         `json:"promo_code,omitempty"`
	Items     []HoldItemJSON `json:"items"`
}

// HoldItemJSON is one frozen line.
type HoldItemJSON struct {
	SeatID    string      `json:"seat_id,omitempty"`
	SectionID string      `json:"section_id"`
	Quantity  int         `json:"quantity"`
	Price     money.Money `json:"price"`
	BasePrice int64       `json:"base_price"`
	SurgeBps  int         `json:"surge_bps"`
	Discount  int64       `json:"discount"`
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
	if !idPattern.MatchString(req.EventID) {
		errs = append(errs, FieldError{"event_id", "required: letters, digits, '_', '-', '.', ':' (at most 100)"})
	}
	cart := holds.Cart{EventID: req.EventID, SectionID: req.SectionID, Quantity: req.Quantity,
		Adjacent: req.Adjacent, PromoCode: strings.TrimSpace(req.PromoCode)}
	switch {
	case len(req.SeatIDs) > 0 && (req.SectionID != "" || req.Quantity != 0 || req.Adjacent):
		errs = append(errs, FieldError{"seat_ids", "give either seat_ids or section_id with quantity, not both"})
	case len(req.SeatIDs) > 0:
		if len(req.SeatIDs) > vocab.MaxSeatsPerHold {
			errs = append(errs, FieldError{"seat_ids", fmt.Sprintf("at most %d seats per hold", vocab.MaxSeatsPerHold)})
			break
		}
		seen := map[string]bool{}
		for i, id := range req.SeatIDs {
			if !idPattern.MatchString(id) {
				errs = append(errs, FieldError{fmt.Sprintf("seat_ids[%d]", i), "not a seat ID"})
			} else if seen[id] {
				errs = append(errs, FieldError{fmt.Sprintf("seat_ids[%d]", i), "duplicate seat " + id})
			}
			seen[id] = true
		}
		cart.SeatIDs = slices.Sorted(slices.Values(req.SeatIDs))
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
	if cart.PromoCode != "" && !promoPattern.MatchString(cart.PromoCode) {
		errs = append(errs, FieldError{"promo_code", "letters, digits, '_' and '-', at most 64"})
	}
	return cart, errs
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

func holdResponse(h store.Hold) HoldResponse {
	r := HoldResponse{HoldID: h.ID.String(), EventID: h.EventID, Status: string(h.Status), SeatIDs: h.SeatIDs(),
		ExpiresAt: h.ExpiresAt.UTC(), Total: h.Total, PromoCode: h.PromoCode, Items: []HoldItemJSON{}}
	for _, it := range h.Items {
		r.Quantity += it.Quantity
		if it.SeatID == "" {
			r.SectionID = it.SectionID
		}
		r.Items = append(r.Items, HoldItemJSON{SeatID: it.SeatID, SectionID: it.SectionID, Quantity: it.Quantity,
			Price: it.Price, BasePrice: it.Base, SurgeBps: it.SurgeBps, Discount: it.Discount})
	}
	return r
}

func (s *Server) createHold(c *gin.Context) {
	who := identity(c)
	body, err := readBody(c)
	if err != nil {
		s.problem(c, Invalid(FieldError{"body", "larger than 16 KiB or unreadable"}))
		return
	}
	cart, errs := DecodeHoldRequest(body)
	if len(errs) > 0 {
		s.problem(c, Invalid(errs...))
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		s.problem(c, Invalid(*fe))
		return
	}
	render := func(h store.Hold) (int, []byte, error) {
		b, err := json.Marshal(holdResponse(h))
		return http.StatusCreated, b, err
	}
	hold, stored, err := s.Holds.Hold(c.Request.Context(), who, cart, key, cartHash(cart), c.GetHeader("X-Admission-Pass"), render)
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	if stored != nil {
		c.Header("Idempotent-Replayed", "true")
		c.Data(stored.Status, "application/json", stored.Body)
		return
	}
	c.Header("Location", "/v1/holds/"+hold.ID.String())
	c.JSON(http.StatusCreated, holdResponse(hold))
}

func (s *Server) getHold(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such hold"))
		return
	}
	hold, err := s.Holds.Store.GetHold(c.Request.Context(), id, identity(c).UserID)
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	c.JSON(http.StatusOK, holdResponse(hold))
}

func (s *Server) deleteHold(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		s.problem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such hold"))
		return
	}
	err = s.Holds.Release(c.Request.Context(), identity(c), id)
	if err == nil && s.Temporal != nil {
		// The seats went back at once (owner checked in the database); the
		// booking workflow is told so it ends now, not at the expiry timer.
		if serr := saga.Release(c.Request.Context(), s.Temporal, id.String()); serr != nil && !errors.Is(serr, saga.ErrNoBooking) {
			s.Log.Warn("tell booking workflow of release", "hold", id, "err", serr)
		}
	}
	if errors.Is(err, store.ErrNotPending) {
		// Releasing what already ended is a no-op success unless it was paid.
		hold, gerr := s.Holds.Store.GetHold(c.Request.Context(), id, identity(c).UserID)
		if gerr == nil && hold.Status != vocab.ReservationPaid {
			c.Status(http.StatusNoContent)
			return
		}
	}
	if err != nil {
		s.problem(c, s.problemFor(err))
		return
	}
	c.Status(http.StatusNoContent)
}
