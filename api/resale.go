package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/venues"
)

// resaleHandlers serve fan-to-fan resale listings; buying one is POST
// /v1/holds with listing_ids.
type resaleHandlers struct {
	resale   *tickets.Resale
	problems problems
}

// listingView is a listing as the API shows it to me: the seller sees the
// ticket, fee and payout; anyone else the place and price.
func listingView(l store.Listing, me string) gin.H {
	v := gin.H{"listing_id": l.ID, "event_id": l.EventID, "section_id": l.SectionID, "seat_id": l.SeatID,
		"label": venues.Label(l.Place), "price": l.Price, "face_value": l.FaceValue, "status": l.Status,
		"created_at": l.CreatedAt.UTC(), "closes_at": l.ClosesAt.UTC()}
	if l.OfferedUntil != nil && l.OfferedTo != "" {
		v["offered_until"] = l.OfferedUntil.UTC()
		v["offered_to_you"] = l.OfferedTo == me
	}
	if l.SellerUser != me {
		return v
	}
	v["ticket_id"], v["fee"], v["held"] = l.TicketID, l.Fee, l.Held
	v["payout"] = gin.H{"amount": l.Payout.Amount.Amount, "currency": l.Payout.Amount.Currency,
		"refunded": l.Payout.Refunded, "owed": l.Payout.Owed, "status": l.Payout.Status}
	if l.EndedAt != nil {
		v["ended_at"] = l.EndedAt.UTC()
	}
	return v
}

// createListing is POST /v1/tickets/{ticket_id}/listings {"price":
// {"amount","currency"}}: 201 {"listing_id","status":"ACTIVE",...}; a price
// above the organiser's cap is 422 price-above-cap naming the cap.
func (h *resaleHandlers) createListing(c *gin.Context) {
	var req struct {
		Price *money.Money `json:"price"`
	}
	if err := decodeJSON(c, &req); err != nil {
		writeProblem(c, Invalid(*err))
		return
	}
	switch {
	case req.Price == nil || req.Price.Amount <= 0:
		writeProblem(c, Invalid(FieldError{"price.amount", "required: a positive amount in minor units (cents)"}))
		return
	case req.Price.Currency != "" && !isCurrency(req.Price.Currency):
		writeProblem(c, Invalid(FieldError{"price.currency", "an ISO 4217 code such as EUR"}))
		return
	}
	id := identity(c)
	l, err := h.resale.List(c.Request.Context(), id.UserID, id.Email, c.Param("ticket_id"), *req.Price)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, listingView(l, id.UserID))
}

// withdrawListing is DELETE /v1/listings/{listing_id} by its seller while
// no buyer holds it: 200 with the listing WITHDRAWN.
func (h *resaleHandlers) withdrawListing(c *gin.Context) {
	lid, err := uuid.Parse(c.Param("listing_id"))
	if err != nil {
		writeProblem(c, NewProblem(http.StatusNotFound, ProbNotFound, "no such listing"))
		return
	}
	id := identity(c)
	l, err := h.resale.Withdraw(c.Request.Context(), id.UserID, lid)
	h.problems.answer(c, listingView(l, id.UserID), err)
}

// eventListings is GET /v1/events/{event_id}/listings: what a buyer may
// hold now, cheapest first.
func (h *resaleHandlers) eventListings(c *gin.Context) {
	ls, err := h.resale.ForEvent(c.Request.Context(), c.Param("event_id"))
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.list(c, ls, identity(c).UserID)
}

// myListings is GET /v1/me/listings: the caller's listings, newest first,
// each with its status and payout.
func (h *resaleHandlers) myListings(c *gin.Context) {
	ls, err := h.resale.Of(c.Request.Context(), identity(c).UserID)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	h.list(c, ls, identity(c).UserID)
}

// isCurrency says s looks like an ISO 4217 code (three capitals); whether
// the event sells in it is the store's question.
func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

func (h *resaleHandlers) list(c *gin.Context, ls []store.Listing, me string) {
	out := make([]gin.H, len(ls))
	for i, l := range ls {
		out[i] = listingView(l, me)
	}
	c.JSON(http.StatusOK, gin.H{"listings": out})
}
