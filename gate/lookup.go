package gate

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// MaxLookup is the most tickets a lookup returns: staff narrow the search
// rather than scroll.
const MaxLookup = 20

// Found is a ticket a lookup found, with where it stands.
type Found struct {
	TicketID    string     `json:"ticket_id"`
	SectionID   string     `json:"section_id"`
	SeatID      string     `json:"seat_id,omitempty"`
	BookingCode string     `json:"booking_code,omitempty"`
	Attendee    string     `json:"attendee,omitempty"`
	Revoked     bool       `json:"revoked,omitempty"`
	EnteredAt   *time.Time `json:"entered_at,omitempty"`
	GateID      string     `json:"gate_id,omitempty"`
	Inside      bool       `json:"inside,omitempty"`
}

// isBookingPrefix says whether a normalized query can be the start of a
// booking code (a reservation ID is hexadecimal).
func isBookingPrefix(q string) bool {
	if len(q) < 4 {
		return false
	}
	for _, c := range q {
		if !strings.ContainsRune("0123456789ABCDEF", c) {
			return false
		}
	}
	return true
}

// likeEscape escapes LIKE's wildcards in what staff typed.
var likeEscape = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Lookup finds an event's tickets whose booking code starts with q (dashes
// and case ignored; four characters at least) or whose attendee contains q
// (case ignored for ASCII), at most MaxLookup, booking code order.
func (s *Store) Lookup(ctx context.Context, eventID, q string) ([]Found, error) {
	q = strings.TrimSpace(q)
	key := bookingKey(q)
	prefix := ""
	if isBookingPrefix(key) {
		prefix = key + "%"
	}
	return queryAll(ctx, s.read, `SELECT t.id, t.section_id, t.seat_id, t.booking_code, t.attendee, t.revoked,
		e.entered_at, coalesce(e.gate_id, ''), coalesce(e.inside, 0)
		FROM tickets t LEFT JOIN entries e ON e.ticket_id = t.id
		WHERE t.event_id = ? AND ((? <> '' AND t.booking_key LIKE ?) OR t.attendee LIKE ? ESCAPE '\')
		ORDER BY t.booking_code, t.seat_id, t.id LIMIT ?`, func(rows *sql.Rows) (Found, error) {
		var f Found
		var entered sql.NullInt64
		err := rows.Scan(&f.TicketID, &f.SectionID, &f.SeatID, &f.BookingCode, &f.Attendee, &f.Revoked,
			&entered, &f.GateID, &f.Inside)
		if entered.Valid {
			at := time.UnixMilli(entered.Int64).UTC()
			f.EnteredAt = &at
		}
		return f, err
	}, eventID, prefix, prefix, "%"+likeEscape.Replace(q)+"%", MaxLookup)
}

// Counts are an event's live numbers at the doors.
type Counts struct {
	EventID string `json:"event_id"`
	// Tickets is how many valid tickets the manifest holds.
	Tickets int `json:"tickets"`
	// Entered is how many tickets came in (each once, however often it
	// went out and back), Inside how many are in now.
	Entered int         `json:"entered"`
	Inside  int         `json:"inside"`
	Reentry bool        `json:"reentry"`
	Gates   []GateCount `json:"gates"`
}

// GateCount is how many tickets first came in through one gate.
type GateCount struct {
	GateID  string `json:"gate_id"`
	Entries int    `json:"entries"`
}

// Counts reads an event's numbers in one read transaction.
func (s *Store) Counts(ctx context.Context, eventID string) (Counts, error) {
	c := Counts{EventID: eventID, Gates: []GateCount{}}
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM tickets WHERE event_id = ? AND NOT revoked),
		count(e.ticket_id), coalesce(sum(e.inside), 0)
		FROM entries e JOIN tickets t ON t.id = e.ticket_id WHERE t.event_id = ?`, eventID, eventID).
		Scan(&c.Tickets, &c.Entered, &c.Inside); err != nil {
		return c, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT e.gate_id, count(*) FROM entries e JOIN tickets t ON t.id = e.ticket_id
		WHERE t.event_id = ? GROUP BY e.gate_id ORDER BY e.gate_id`, eventID)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var g GateCount
		if err := rows.Scan(&g.GateID, &g.Entries); err != nil {
			return c, err
		}
		c.Gates = append(c.Gates, g)
	}
	return c, rows.Err()
}
