package system_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// TestCheckoutAsksTheAttendeesNamesAndTheyReachTicketDoorAndExportUntilErased:
// over HTTP with the saga. The event asks every ticket's name (required)
// and, for child tickets, a guardian; a checkout missing either is 422
// naming the question and the ticket, and starts no payment. Answered, the
// names are on the fan's tickets, in the gate's manifest and in the
// organiser's attendee CSV (neutralised); DELETE /v1/me erases them and
// keeps the booking and its invoice.
func TestCheckoutAsksTheAttendeesNamesAndTheyReachTicketDoorAndExportUntilErased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newE2E(t)
	for _, q := range []string{
		`INSERT INTO event_questions (event_id, id, position, label, kind, required, per) VALUES ($1, 'name', 0, 'Attendee name', 'text', true, 'ticket')`,
		`INSERT INTO event_questions (event_id, id, position, label, kind, required, per) VALUES ($1, 'guardian', 1, 'Guardian', 'text', false, 'ticket')`,
		`INSERT INTO event_questions (event_id, id, position, label, kind, choices, required, per) VALUES ($1, 'diet', 2, 'Diet', 'choice', '{none,vegan}', false, 'order')`,
		`INSERT INTO ticket_types (event_id, id, name, position) VALUES ($1, 'adult', 'Adult', 0)`,
		`INSERT INTO ticket_types (event_id, id, name, position, requires) VALUES ($1, 'child', 'Child', 1, 'guardian')`,
	} {
		_, err := e.store.Pool().Exec(ctx, q, e.eventID)
		require.NoError(t, err, q)
	}
	_, err := e.store.Pool().Exec(ctx, `INSERT INTO ticket_type_prices (event_id, type_id, category, amount)
		SELECT $1, 'child', category, 1000 FROM sections WHERE event_id = $1`, e.eventID)
	require.NoError(t, err)
	page, err := store.NewReader(e.store.Pool()).GetEvent(ctx, e.eventID)
	require.NoError(t, err)
	require.Len(t, page.Questions, 3, "the event page lists its questions")

	fan := e.fanWithEmail("nora", "nora@example.com")
	a, b := e.seat(3, 1), e.seat(3, 2)
	status, h := e.call(http.MethodPost, "/v1/holds", fan, map[string]any{"event_id": e.eventID, "seat_ids": []string{a, b},
		"ticket_types": map[string]string{b: "child"}})
	require.Equal(t, http.StatusCreated, status, "%v", h)
	hold := h["hold_id"].(string)
	checkout := func(answers []map[string]any) (int, map[string]any) {
		return e.call(http.MethodPost, "/v1/holds/"+hold+"/checkout", fan, map[string]any{"payment_method": e.pay.card(), "answers": answers})
	}
	for _, tc := range []struct {
		answers []map[string]any
		field   string
	}{
		{nil, "answers.name[0]"},
		{[]map[string]any{{"question_id": "name", "ticket_index": 0, "value": "Nora"}}, "answers.name[1]"},
		{[]map[string]any{{"question_id": "name", "ticket_index": 0, "value": "Nora"}, {"question_id": "name", "ticket_index": 1, "value": "Kid"}},
			"answers.guardian[1]"},
		{[]map[string]any{{"question_id": "name", "ticket_index": 0, "value": "Nora"}, {"question_id": "name", "ticket_index": 1, "value": "Kid"},
			{"question_id": "guardian", "ticket_index": 1, "value": "Nora"}, {"question_id": "diet", "ticket_index": 0, "value": "meat"}}, "answers.diet[0]"},
	} {
		status, p := checkout(tc.answers)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%v", p)
		require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"])
	}
	require.Zero(t, e.count(`SELECT count(*) FROM payments WHERE reservation_id = $1`, hold), "a refused checkout starts no payment")

	status, co := checkout([]map[string]any{{"question_id": "name", "ticket_index": 0, "value": "Nora Adult"},
		{"question_id": "name", "ticket_index": 1, "value": "=HYPERLINK(\"http://x.invalid\",\"Kid\")"},
		{"question_id": "guardian", "ticket_index": 1, "value": "Nora Adult"}, {"question_id": "diet", "ticket_index": 0, "value": "vegan"}})
	require.Equal(t, http.StatusOK, status, "%v", co)
	e.waitStatus(fan, hold, vocab.BookingPaid, 30*time.Second)
	require.Eventually(t, func() bool { return e.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1`, hold) == 2 },
		30*time.Second, 50*time.Millisecond)

	status, mine := e.call(http.MethodGet, "/v1/me/tickets", fan, nil)
	require.Equal(t, http.StatusOK, status)
	names := map[string]string{}
	for _, tk := range mine["tickets"].([]any) {
		names[tk.(map[string]any)["seat_id"].(string)] = tk.(map[string]any)["attendee"].(string)
	}
	require.Equal(t, "Nora Adult", names[a])
	require.Contains(t, names[b], "HYPERLINK")

	snap, err := e.store.Tickets.ManifestTickets(ctx, e.eventID, time.Time{})
	require.NoError(t, err)
	door := map[string]string{}
	for _, tk := range snap.Valid {
		door[tk.SeatID] = tk.Attendee
	}
	require.Equal(t, "Nora Adult", door[a], "the door checks the attendee's name")

	list, err := organiser.NewService(e.store).Attendees(ctx, venues.Admin("", "test"), e.eventID)
	require.NoError(t, err)
	require.Len(t, list.Attendees, 2)
	var csv bytes.Buffer
	require.NoError(t, list.WriteCSV(&csv))
	require.Contains(t, csv.String(), "vegan")
	require.NotContains(t, csv.String(), "\n=HYPERLINK", "a formula is neutralised")
	require.Contains(t, csv.String(), "'=HYPERLINK")

	status, erased := e.call(http.MethodDelete, "/v1/me", fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", erased)
	require.EqualValues(t, 4, erased["erased"].(map[string]any)["answers"])
	_, mine = e.call(http.MethodGet, "/v1/me/tickets", fan, nil)
	for _, tk := range mine["tickets"].([]any) {
		require.NotContains(t, tk.(map[string]any), "attendee")
	}
	require.Equal(t, 1, e.count(`SELECT count(*) FROM reservations WHERE id = $1 AND status = 'PAID' AND fan_email IS NULL`, hold))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices WHERE reservation_id = $1 AND kind = 'INVOICE'`, hold), "the invoice is kept")
}
