package organiser

import (
	"context"
	"io"

	"github.com/encore-tickets/encore/internal/csvsafe"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Attendees is GET /v1/admin/events/{id}/attendees: every valid ticket with
// its booking, place, buyer's email and the answers given for it.
type Attendees struct {
	EventID   string           `json:"event_id"`
	Questions []store.Question `json:"questions"`
	Attendees []store.Attendee `json:"attendees"`
}

// Attendees reads the event's attendees for the scope's organisation.
func (s *Service) Attendees(ctx context.Context, scope venues.Scope, eventID string) (Attendees, error) {
	if err := scope.Check(); err != nil {
		return Attendees{}, err
	}
	list, qs, err := s.store.Bookings.Attendees(ctx, eventID, scope.Filter())
	if err != nil {
		return Attendees{}, err
	}
	if list == nil {
		list = []store.Attendee{}
	}
	for i := range list {
		list[i].Label = venues.Label(list[i].Place)
	}
	if qs == nil {
		qs = []store.Question{}
	}
	return Attendees{EventID: eventID, Questions: qs, Attendees: list}, nil
}

// WriteSalesCSV writes the sales report's CSV and, after an empty line,
// the attendees with their answers: the sales CSV an organiser asks with
// answers (?answers=1). Both parts neutralise what fans and organisers
// typed.
func WriteSalesCSV(w io.Writer, r Report, a Attendees) error {
	if err := r.WriteCSV(w); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return a.WriteCSV(w)
}

// WriteCSV writes the list as CSV, one column per question. Every answer
// and email goes through csvsafe: what a fan typed never reaches the
// organiser's spreadsheet as a formula.
func (a Attendees) WriteCSV(w io.Writer) error {
	cw := csvsafe.NewWriter(w)
	head := []string{"ticket_id", "booking_id", "section_id", "seat_id", "email"}
	for _, q := range a.Questions {
		head = append(head, q.ID)
	}
	_ = cw.Header(head...)
	for _, at := range a.Attendees {
		cells := []csvsafe.Cell{csvsafe.Text(at.TicketID), csvsafe.Text(at.BookingID.String()), csvsafe.Text(at.SectionID),
			csvsafe.Text(at.SeatID), csvsafe.Text(at.Email)}
		for _, q := range a.Questions {
			cells = append(cells, csvsafe.Text(at.Answers[q.ID]))
		}
		_ = cw.Write(cells...)
	}
	return cw.Flush()
}
