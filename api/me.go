package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/waitlist"
)

// TicketItem is one ticket of GET /v1/me/tickets.
type TicketItem struct {
	ID        string    `json:"id"`
	BookingID string    `json:"booking_id"`
	EventID   string    `json:"event_id"`
	SectionID string    `json:"section_id"`
	SeatID    string    `json:"seat_id,omitempty"`
	Status    string    `json:"status"`
	IssuedAt  time.Time `json:"issued_at"`
	// Label is the ticket's place for people ("Lower 7, Row P, Seat 16").
	Label string `json:"label"`
	// Event is the ticket's event, so tickets of two events read apart.
	Event *booking.EventView `json:"event"`
	// Attendee is the name given for the ticket at checkout, if asked.
	Attendee string `json:"attendee,omitempty"`
}

// pageParams reads ?limit (1 to 100, default 20) and ?cursor; a refusal has
// been written when ok is false.
func pageParams(c *gin.Context) (limit int, after *store.PageCursor, ok bool) {
	limit, bad := countParam("limit", c.Query("limit"), 20, 100, "1 to 100")
	if bad != nil {
		writeProblem(c, Invalid(*bad))
		return 0, nil, false
	}
	if v := c.Query("cursor"); v != "" {
		cur, good := store.ParsePageCursor(v)
		if !good {
			writeProblem(c, Invalid(FieldError{"cursor", "a next_cursor of an earlier page"}))
			return 0, nil, false
		}
		after = &cur
	}
	return limit, after, true
}

func cursorString(c *store.PageCursor) *string {
	if c == nil {
		return nil
	}
	s := c.String()
	return &s
}

// meHandlers serve the fan's own lists: bookings, tickets and waitlist
// places (me, who the token says the caller is, is identity.go's).
type meHandlers struct {
	bookings *booking.Service
	tickets  *tickets.Wallet
	waitlist *waitlist.Offers
	problems problems
}

// myBookings lists the caller's bookings, newest first.
func (h *meHandlers) myBookings(c *gin.Context) {
	limit, after, ok := pageParams(c)
	if !ok {
		return
	}
	out, next, err := h.bookings.Mine(c.Request.Context(), identity(c), after, limit)
	h.problems.answer(c, gin.H{"bookings": out, "next_cursor": cursorString(next)}, err)
}

// myTickets lists the caller's tickets, newest first.
func (h *meHandlers) myTickets(c *gin.Context) {
	limit, after, ok := pageParams(c)
	if !ok {
		return
	}
	rows, next, err := h.tickets.Mine(c.Request.Context(), identity(c).UserID, after, limit)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	out := make([]TicketItem, len(rows))
	for i, t := range rows {
		out[i] = TicketItem{ID: t.ID, BookingID: t.ReservationID.String(), EventID: t.EventID, SectionID: t.SectionID,
			SeatID: t.SeatID, Status: string(t.Status), IssuedAt: t.IssuedAt, Label: venues.Label(t.Place), Event: booking.EventOf(t.Event),
			Attendee: t.Attendee}
	}
	c.JSON(http.StatusOK, gin.H{"tickets": out, "next_cursor": cursorString(next)})
}

// myWaitlist lists the caller's waitlist places, newest first, each with
// its status, position while waiting, and offer expiry once offered.
func (h *meHandlers) myWaitlist(c *gin.Context) {
	entries, err := h.waitlist.Mine(c.Request.Context(), identity(c).UserID)
	if err != nil {
		h.problems.fail(c, err)
		return
	}
	if entries == nil {
		entries = []store.WaitlistEntry{}
	}
	c.JSON(http.StatusOK, gin.H{"entries": entries})
}
