package store

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// Question is one question the shop asks: per ticket (the attendee's
// name) or once per order.
type Question struct {
	ID       string             `json:"id"`
	Label    string             `json:"label"`
	Kind     vocab.QuestionKind `json:"kind"`
	Choices  []string           `json:"choices"`
	Required bool               `json:"required"`
	Per      vocab.QuestionPer  `json:"per"`
}

// Equal says a and b ask the same.
func (a Question) Equal(b Question) bool {
	return a.ID == b.ID && a.Label == b.Label && a.Kind == b.Kind && slices.Equal(a.Choices, b.Choices) &&
		a.Required == b.Required && a.Per == b.Per
}

// Answer is a checkout's answer to a question: for the ticket at
// TicketIndex (the hold's lines in order, each expanded by its quantity;
// 0 for a per-order question).
type Answer struct {
	QuestionID  string `json:"question_id"`
	TicketIndex int    `json:"ticket_index"`
	Value       string `json:"value"`
}

// questionsJSON reads event e's questions, in order, as JSON.
const questionsJSON = `coalesce((SELECT jsonb_agg(jsonb_build_object('id', q.id, 'label', q.label, 'kind', q.kind,
		'choices', to_jsonb(q.choices), 'required', q.required, 'per', q.per) ORDER BY q.position)
	FROM event_questions q WHERE q.event_id = e.id), '[]')`

// writeQuestions replaces the event's questions with e's.
func writeQuestions(ctx context.Context, tx pgx.Tx, e OrganiserEvent) error {
	if _, err := tx.Exec(ctx, `DELETE FROM event_questions WHERE event_id = $1`, e.ID); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for i, q := range e.Questions {
		choices := q.Choices
		if choices == nil {
			choices = []string{}
		}
		b.Queue(`INSERT INTO event_questions (event_id, id, position, label, kind, choices, required, per)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.ID, q.ID, i, q.Label, string(q.Kind), choices, q.Required, string(q.Per))
	}
	return inputError(tx.SendBatch(ctx, b).Close())
}

// place is one ticket of a hold, in the order answers index them.
type place struct {
	section, seat string
	unit          int
	ticketType    string
}

// SaveAnswers checks a checkout's answers against the event's questions
// and the hold's tickets, and replaces the hold's answers with them, in
// one transaction. A required question left unanswered (or a type's
// required question, for the tickets of that type) is an *InvalidError
// naming answers.<question>[<ticket index>]; so is an answer to no
// question, for no ticket, or of the wrong kind. A hold no longer pending
// is ErrNotPending.
func (s *Bookings) SaveAnswers(ctx context.Context, id uuid.UUID, answers []Answer) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var status string
		var qs []Question
		var requires map[string]string
		err := tx.QueryRow(ctx, `SELECT r.status, `+questionsJSON+`,
				coalesce((SELECT jsonb_object_agg(t.id, t.requires) FROM ticket_types t WHERE t.event_id = e.id AND t.requires IS NOT NULL), '{}')
			FROM reservations r JOIN events e ON e.id = r.event_id WHERE r.id = $1 FOR UPDATE OF r`, id).Scan(&status, &qs, &requires)
		if errors.Is(err, pgx.ErrNoRows) {
			if len(answers) > 0 {
				return &InvalidError{Field: "answers", Message: "this booking asks no questions"}
			}
			return nil // a hotel-only stay: no event, no questions
		}
		if err != nil {
			return err
		}
		if status != string(vocab.ReservationPending) {
			return ErrNotPending
		}
		if len(qs) == 0 {
			if len(answers) > 0 {
				return &InvalidError{Field: "answers", Message: "this event asks no questions"}
			}
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT section_id, coalesce(seat_id, ''), quantity, coalesce(ticket_type, '')
			FROM reservation_items WHERE reservation_id = $1 ORDER BY seat_id COLLATE "C", id`, id)
		if err != nil {
			return err
		}
		var places []place
		for rows.Next() {
			var p place
			var qty int
			if err := rows.Scan(&p.section, &p.seat, &qty, &p.ticketType); err != nil {
				rows.Close()
				return err
			}
			for u := 1; u <= qty; u++ {
				p.unit = u
				places = append(places, p)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		given, err := checkAnswers(qs, requires, places, answers)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM booking_answers WHERE reservation_id = $1`, id); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, a := range given {
			var sec, seat *string
			var unit *int
			if q := questionByID(qs, a.QuestionID); q.Per == vocab.PerTicket {
				p := places[a.TicketIndex]
				sec, unit = &p.section, &p.unit
				if p.seat != "" {
					seat, unit = &p.seat, nil
				}
			}
			b.Queue(`INSERT INTO booking_answers (reservation_id, question_id, ticket_index, section_id, seat_id, unit, value)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, a.QuestionID, a.TicketIndex, sec, seat, unit, a.Value)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

func questionByID(qs []Question, id string) Question {
	for _, q := range qs {
		if q.ID == id {
			return q
		}
	}
	return Question{}
}

// checkAnswers validates answers and returns them keyed once each.
func checkAnswers(qs []Question, requires map[string]string, places []place, answers []Answer) ([]Answer, error) {
	field := func(q string, i int) string { return fmt.Sprintf("answers.%s[%d]", q, i) }
	seen := map[string]bool{}
	var out []Answer
	for _, a := range answers {
		q := questionByID(qs, a.QuestionID)
		a.Value = strings.TrimSpace(a.Value)
		switch {
		case q.ID == "":
			return nil, &InvalidError{Field: field(a.QuestionID, a.TicketIndex), Message: "the event has no such question"}
		case q.Per == vocab.PerOrder && a.TicketIndex != 0:
			return nil, &InvalidError{Field: field(q.ID, a.TicketIndex), Message: "asked once per order: ticket_index 0"}
		case a.TicketIndex < 0 || a.TicketIndex >= len(places):
			return nil, &InvalidError{Field: field(q.ID, a.TicketIndex), Message: fmt.Sprintf("the hold has tickets 0 to %d", len(places)-1)}
		case seen[field(q.ID, a.TicketIndex)]:
			return nil, &InvalidError{Field: field(q.ID, a.TicketIndex), Message: "answered twice"}
		case len(a.Value) > 500:
			return nil, &InvalidError{Field: field(q.ID, a.TicketIndex), Message: "at most 500 characters"}
		}
		seen[field(q.ID, a.TicketIndex)] = true
		if a.Value == "" {
			continue // as unanswered: a required question is caught below
		}
		if msg := badValue(q, a.Value); msg != "" {
			return nil, &InvalidError{Field: field(q.ID, a.TicketIndex), Message: msg}
		}
		out = append(out, a)
	}
	answered := map[string]bool{}
	for _, a := range out {
		answered[field(a.QuestionID, a.TicketIndex)] = true
	}
	for _, q := range qs {
		tickets := []int{0}
		if q.Per == vocab.PerTicket {
			tickets = nil
			for i, p := range places {
				if q.Required || requires[p.ticketType] == q.ID {
					tickets = append(tickets, i)
				}
			}
		} else if !q.Required {
			continue
		}
		for _, i := range tickets {
			if !answered[field(q.ID, i)] {
				return nil, &InvalidError{Field: field(q.ID, i), Message: "required: " + q.Label}
			}
		}
	}
	return out, nil
}

// badValue says why v does not answer q ("" when it does).
func badValue(q Question, v string) string {
	switch q.Kind {
	case vocab.QuestionEmail:
		if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
			return "an email address such as name@example.com"
		}
	case vocab.QuestionChoice:
		if !slices.Contains(q.Choices, v) {
			return "one of: " + strings.Join(q.Choices, ", ")
		}
	case vocab.QuestionBool:
		if v != "true" && v != "false" {
			return "true or false"
		}
	}
	return ""
}

// Attendees are an event's answered questions per ticket, for the
// organiser's list and export: each valid ticket with its booking, place
// and answers (question ID -> value), per-order answers on every ticket
// of the order.
type Attendee struct {
	TicketID  string            `json:"ticket_id"`
	BookingID uuid.UUID         `json:"booking_id"`
	SectionID string            `json:"section_id"`
	SeatID    string            `json:"seat_id,omitempty"`
	Email     string            `json:"email"`
	Answers   map[string]string `json:"answers"`
	// Label is the place for people ("Stalls, Row B, Seat 6"), filled by
	// the organiser package from Place (venues.Label).
	Label string `json:"label"`
	Place Place  `json:"-"`
}

// Attendees lists the valid tickets of eventID (of org; any when "") with
// their answers, in booking order, at most 10,000.
func (s *Bookings) Attendees(ctx context.Context, eventID, org string) ([]Attendee, []Question, error) {
	var qs []Question
	err := s.pool.QueryRow(ctx, `SELECT `+questionsJSON+` FROM events e WHERE e.id = $1 AND ($2 = '' OR e.org_id = $2)`, eventID, org).Scan(&qs)
	if err = orNotFound(err); err != nil {
		return nil, nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.reservation_id, t.section_id, coalesce(t.seat_id, ''), coalesce(r.fan_email, ''),
			coalesce((SELECT jsonb_object_agg(a.question_id, a.value) FROM booking_answers a
			          WHERE a.reservation_id = t.reservation_id AND (a.section_id IS NULL
			             OR (a.seat_id = t.seat_id) OR (a.seat_id IS NULL AND a.section_id = t.section_id AND a.unit = t.unit))), '{}'),
			coalesce(sec.name, ''), coalesce(st.row_label, ''), coalesce(st.number, 0)
		FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		LEFT JOIN sections sec ON sec.id = t.section_id LEFT JOIN seats st ON st.id = t.seat_id
		WHERE t.event_id = $1 AND t.status = 'VALID' AND r.status = 'PAID'
		ORDER BY r.created_at, t.section_id, t.seat_id, t.unit LIMIT 10000`, eventID)
	if err != nil {
		return nil, nil, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Attendee, error) {
		var a Attendee
		err := row.Scan(&a.TicketID, &a.BookingID, &a.SectionID, &a.SeatID, &a.Email, &a.Answers, &a.Place.Section, &a.Place.Row, &a.Place.Number)
		return a, err
	})
	return list, qs, err
}

// attendeeNameSQL is the name a ticket t's attendee gave: the answer, for
// that ticket's place, to the event's first per-ticket text question.
const attendeeNameSQL = `(SELECT a.value FROM booking_answers a JOIN event_questions q ON q.event_id = t.event_id AND q.id = a.question_id
	WHERE a.reservation_id = t.reservation_id AND q.per = 'ticket' AND q.kind = 'text'
	  AND (a.seat_id = t.seat_id OR (a.seat_id IS NULL AND a.section_id = t.section_id AND a.unit = t.unit))
	ORDER BY q.position LIMIT 1)`

// Erasure counts what EraseUser removed.
type Erasure struct {
	Answers      int64 `json:"answers"`
	Reservations int64 `json:"bookings_anonymised"`
	Waitlist     int64 `json:"waitlist_entries"`
}

// EraseUser erases user's personal data in one transaction: their
// answers, the email their bookings and waitlist places carry, and the
// addresses of transfers they sent. Bookings, payments, tickets and
// invoices stay (the accounting the law requires keeps them); the invoice
// then names no buyer.
func (s *Bookings) EraseUser(ctx context.Context, user string) (Erasure, error) {
	var e Erasure
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM booking_answers a USING reservations r WHERE r.id = a.reservation_id AND r.user_id = $1`, user)
		if err != nil {
			return err
		}
		e.Answers = tag.RowsAffected()
		if tag, err = tx.Exec(ctx, `UPDATE reservations SET fan_email = NULL WHERE user_id = $1 AND fan_email IS NOT NULL`, user); err != nil {
			return err
		}
		e.Reservations = tag.RowsAffected()
		if tag, err = tx.Exec(ctx, `UPDATE waitlist_entries SET email = '' WHERE user_id = $1 AND email <> ''`, user); err != nil {
			return err
		}
		e.Waitlist = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE ticket_transfers SET from_email = '' WHERE from_user = $1`, user)
		return err
	})
	return e, err
}
