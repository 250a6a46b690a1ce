package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/store"
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
}

// pageParams reads ?limit (1 to 100, default 20) and ?cursor; a refusal has
// been written when ok is false.
func pageParams(c *gin.Context) (limit int, after *store.PageCursor, ok bool) {
	limit = 20
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			writeProblem(c, Invalid(FieldError{"limit", "1 to 100"}))
			return 0, nil, false
		}
		limit = n
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

// myBookings lists the caller's bookings, newest first.
func (s *Server) myBookings(c *gin.Context) {
	limit, after, ok := pageParams(c)
	if !ok {
		return
	}
	who := identity(c)
	ids, next, err := s.Bookings.Store.Bookings.BookingsOfUser(c.Request.Context(), who.UserID, after, limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]booking.View, 0, len(ids))
	for _, id := range ids {
		v, err := s.Bookings.Get(c.Request.Context(), who, id)
		if err != nil {
			s.fail(c, err)
			return
		}
		out = append(out, v)
	}
	c.JSON(http.StatusOK, gin.H{"bookings": out, "next_cursor": cursorString(next)})
}

// myTickets lists the caller's tickets, newest first.
func (s *Server) myTickets(c *gin.Context) {
	limit, after, ok := pageParams(c)
	if !ok {
		return
	}
	rows, next, err := s.Tickets.Store.Tickets.TicketsOfUser(c.Request.Context(), identity(c).UserID, after, limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]TicketItem, len(rows))
	for i, t := range rows {
		out[i] = TicketItem{ID: t.ID, BookingID: t.ReservationID.String(), EventID: t.EventID, SectionID: t.SectionID,
			SeatID: t.SeatID, Status: string(t.Status), IssuedAt: t.IssuedAt}
	}
	c.JSON(http.StatusOK, gin.H{"tickets": out, "next_cursor": cursorString(next)})
}
