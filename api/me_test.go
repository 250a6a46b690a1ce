package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
)

// meStack is the QR stack with the fan's own lists mounted, and a second,
// newer paid booking of two tickets for the same owner.
func meStack(t *testing.T) (*qrStack, uuid.UUID) {
	t.Helper()
	s := newQRStack(t)
	ctx := context.Background()
	first, err := s.store.Tickets.GetTicket(ctx, s.ticketID, s.owner)
	require.NoError(t, err)
	second := uuid.New()
	_, err = s.store.Pool().Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency, created_at)
		VALUES ($1, $2, $3, 'PAID', now(), now(), 10000, 'EUR', now() + interval '1 second')`, second, s.owner, first.EventID)
	require.NoError(t, err)
	var rows []store.TicketRow
	for n := 2; n <= 3; n++ {
		seat := demo.SeatID(first.SectionID, 0, n)
		_, err = s.store.Pool().Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, second, seat)
		require.NoError(t, err)
		rows = append(rows, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: second, EventID: first.EventID,
			SectionID: first.SectionID, SeatID: seat, Unit: 1, UserID: s.owner, SecretSealed: first.SecretSealed})
	}
	require.NoError(t, s.store.Tickets.InsertTickets(ctx, rows))
	_, err = s.store.Pool().Exec(ctx, `UPDATE tickets SET issued_at = now() + interval '1 second' WHERE reservation_id = $1`, second)
	require.NoError(t, err)

	srv := &api.Server{Sessions: s.issuer, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Tickets: &tickets.Wallet{Store: s.store}, Bookings: &booking.Service{Store: s.store}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s, second
}

type page struct {
	Tickets []struct {
		ID        string `json:"id"`
		BookingID string `json:"booking_id"`
		Status    string `json:"status"`
	} `json:"tickets"`
	Bookings []struct {
		BookingID string `json:"booking_id"`
		Status    string `json:"status"`
	} `json:"bookings"`
	NextCursor *string `json:"next_cursor"`
}

func (s *qrStack) page(t *testing.T, user, path string) page {
	t.Helper()
	resp, body := s.get(t, user, path)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var p page
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}

func TestMyTicketsAreTheCallersNewestFirstPageByPage(t *testing.T) {
	s, second := meStack(t)

	p1 := s.page(t, s.owner, "/v1/me/tickets?limit=2")
	require.Len(t, p1.Tickets, 2)
	for _, tk := range p1.Tickets {
		require.Equal(t, second.String(), tk.BookingID, "the newer booking's tickets come first")
		require.Equal(t, "VALID", tk.Status)
	}
	require.NotNil(t, p1.NextCursor)
	p2 := s.page(t, s.owner, "/v1/me/tickets?limit=2&cursor="+url.QueryEscape(*p1.NextCursor))
	require.Len(t, p2.Tickets, 1)
	require.Equal(t, s.ticketID, p2.Tickets[0].ID)
	require.Nil(t, p2.NextCursor, "the last page")

	require.Empty(t, s.page(t, "someone_else", "/v1/me/tickets").Tickets, "another fan sees none of them")
}

func TestMyBookingsAreTheCallersNewestFirstWithTheirStatus(t *testing.T) {
	s, second := meStack(t)

	p1 := s.page(t, s.owner, "/v1/me/bookings?limit=1")
	require.Len(t, p1.Bookings, 1)
	require.Equal(t, second.String(), p1.Bookings[0].BookingID)
	require.Equal(t, "PAID", p1.Bookings[0].Status)
	require.NotNil(t, p1.NextCursor)
	p2 := s.page(t, s.owner, "/v1/me/bookings?limit=1&cursor="+url.QueryEscape(*p1.NextCursor))
	require.Len(t, p2.Bookings, 1)
	require.Equal(t, s.booking.String(), p2.Bookings[0].BookingID)
	require.Nil(t, p2.NextCursor)

	require.Empty(t, s.page(t, "someone_else", "/v1/me/bookings").Bookings)
}

func TestMyListsRefuseBadPagingAndAnonymousCallers(t *testing.T) {
	s, _ := meStack(t)
	for _, tc := range []struct {
		user, path string
		status     int
	}{
		{s.owner, "/v1/me/tickets?limit=0", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/tickets?limit=abc", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/tickets?cursor=nonsense", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/bookings?cursor=123_not-a-uuid", http.StatusOK},
		{s.owner, "/v1/me/bookings?limit=101", http.StatusUnprocessableEntity},
		{"", "/v1/me/tickets", http.StatusUnauthorized},
		{"", "/v1/me/bookings", http.StatusUnauthorized},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := s.get(t, tc.user, tc.path)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
		})
	}
}
