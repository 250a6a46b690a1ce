package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// OrganiserEvent is an event as its organiser sees and changes it.
type OrganiserEvent struct {
	ID, OrgID, VenueID                string
	Title, Artist, Genre, Description string
	Status                            vocab.EventStatus
	StartsAt, OnsaleAt                time.Time
	OffsaleAt, CancellationDeadline   time.Time // zero: none (events older than the organiser API)
	Currency                          string
	Metered                           bool
	PerCustomerLimit, HoldTTLSeconds  int
	Prices                            map[string]int64 // category -> minor units of Currency
	CreatedAt                         time.Time
	PublishedAt                       time.Time // zero while DRAFT
	Sections, Seats, GeneralCapacity  int
	// Timezone is the venue's IANA zone (read, never written with the
	// event): the organiser's forms take and show times on its clocks.
	Timezone string
	Resale   ResalePolicy
	// Reentry lets a ticket scanned out at the door come back in.
	Reentry bool
	// TicketTypes are the event's types in order (none: one implicit type
	// at the event's prices); the first type's prices are Prices.
	TicketTypes []TicketType
	// ServiceFee is charged per ticket, in minor units of Currency.
	ServiceFee int64
	// SeriesID links the events of one series ("" for none).
	SeriesID string
}

// TicketType is one way of buying a seat of an event (Adult, Child,
// Student), with its own price per seat category: a category it does not
// price is not sold to it (the first type prices every category).
type TicketType struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Prices      map[string]int64 `json:"prices"`
	MaxPerOrder int              `json:"max_per_order,omitempty"`
	Requires    string           `json:"requires,omitempty"`
}

// ResalePolicy is an event's resale terms: whether fans may resell their
// tickets to each other, at most at MaxPriceBp of face value (basis
// points), the platform's fee (FeeBp of the resale price), and how many
// minutes before the show listings close.
type ResalePolicy struct {
	Enabled       bool
	MaxPriceBp    int
	FeeBp         int
	ClosesMinutes int
}

// DefaultResalePolicy is a new event's: off, capped at face value, a 5 %
// fee, closing an hour before the show.
var DefaultResalePolicy = ResalePolicy{MaxPriceBp: 10000, FeeBp: 500, ClosesMinutes: 60}

// SectionPrefix is the prefix of the IDs of the sections an event copies
// from its venue: "sec_" and the event ID without "evt_", then "_". A seat's
// ID is its section's, its row and its number joined by "-".
func SectionPrefix(eventID string) string {
	return "sec_" + strings.TrimPrefix(eventID, "evt_") + "_"
}

// CreateDraftEvent writes a DRAFT event, its prices, and copies its venue's
// layout into its sections and seats, each priced by its category, in one
// transaction. The caller has checked the venue is the organiser's and every
// category has a price. ErrEventExists when the ID is taken.
func (s *Catalogue) CreateDraftEvent(ctx context.Context, e OrganiserEvent) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '2min'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, venue_id, title, artist, genre, description, status,
			starts_at, onsale_at, offsale_at, cancellation_deadline, currency, metered, per_customer_limit, hold_ttl_seconds,
			resale_enabled, resale_max_price_bp, resale_fee_bp, resale_closes_minutes, reentry, service_fee, series_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'DRAFT', $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
			e.ID, e.OrgID, e.VenueID, e.Title, e.Artist, e.Genre, e.Description, e.StartsAt, e.OnsaleAt,
			nullTime(e.OffsaleAt), nullTime(e.CancellationDeadline), e.Currency, e.Metered, e.PerCustomerLimit, e.HoldTTLSeconds,
			e.Resale.Enabled, e.Resale.MaxPriceBp, e.Resale.FeeBp, e.Resale.ClosesMinutes, e.Reentry, e.ServiceFee, nullString(e.SeriesID))
		if code, _ := pgCode(err); code == pgUniqueViolation {
			return ErrEventExists
		}
		if err != nil {
			return inputError(err)
		}
		if err := writePrices(ctx, tx, e); err != nil {
			return err
		}
		if err := writeTicketTypes(ctx, tx, e); err != nil {
			return err
		}
		return copyLayout(ctx, tx, e.ID, e.VenueID)
	})
}

// CreateSeries records a series of org's events; its dates are events
// created with its ID (OrganiserEvent.SeriesID).
func (s *Catalogue) CreateSeries(ctx context.Context, id, org, title string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO series (id, org_id, title) VALUES ($1, $2, $3)`, id, org, title)
	return inputError(err)
}

// ErrEventExists says an event with the ID is there already.
var ErrEventExists = errors.New("store: event exists")

func writePrices(ctx context.Context, tx pgx.Tx, e OrganiserEvent) error {
	if _, err := tx.Exec(ctx, `DELETE FROM event_prices WHERE event_id = $1`, e.ID); err != nil {
		return err
	}
	cats := slices.Sorted(maps.Keys(e.Prices))
	amounts := make([]int64, len(cats))
	for i, c := range cats {
		amounts[i] = e.Prices[c]
	}
	_, err := tx.Exec(ctx, `INSERT INTO event_prices (event_id, category, amount, currency)
		SELECT $1, c, a, $4 FROM unnest($2::text[], $3::bigint[]) AS p(c, a)`, e.ID, cats, amounts, e.Currency)
	return inputError(err)
}

// writeTicketTypes replaces the event's ticket types with e's.
func writeTicketTypes(ctx context.Context, tx pgx.Tx, e OrganiserEvent) error {
	if _, err := tx.Exec(ctx, `DELETE FROM ticket_types WHERE event_id = $1`, e.ID); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for i, t := range e.TicketTypes {
		var maxPer *int
		if t.MaxPerOrder > 0 {
			maxPer = &t.MaxPerOrder
		}
		b.Queue(`INSERT INTO ticket_types (event_id, id, name, position, max_per_order, requires) VALUES ($1, $2, $3, $4, $5, $6)`,
			e.ID, t.ID, t.Name, i, maxPer, nullString(t.Requires))
		for _, c := range slices.Sorted(maps.Keys(t.Prices)) {
			b.Queue(`INSERT INTO ticket_type_prices (event_id, type_id, category, amount) VALUES ($1, $2, $3, $4)`, e.ID, t.ID, c, t.Prices[c])
		}
	}
	return inputError(tx.SendBatch(ctx, b).Close())
}

// Equal says a and b are the same type at the same prices.
func (a TicketType) Equal(b TicketType) bool {
	return a.ID == b.ID && a.Name == b.Name && a.MaxPerOrder == b.MaxPerOrder && a.Requires == b.Requires && maps.Equal(a.Prices, b.Prices)
}

// nullString is s, or NULL when empty.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// copyLayout copies the venue's sections and seats into the event, priced
// from event_prices. Rows already there stay as they are, so a second copy
// repairs a partial one and never touches a seat that was sold.
func copyLayout(ctx context.Context, tx pgx.Tx, eventID, venueID string) error {
	prefix := SectionPrefix(eventID)
	if _, err := tx.Exec(ctx, `INSERT INTO sections (id, event_id, name, kind, capacity, base_price, sort_order, category)
		SELECT $3 || vs.id, $1, vs.name, vs.kind, vs.capacity, p.amount, vs.sort_order, vs.category
		FROM venue_sections vs JOIN event_prices p ON p.event_id = $1 AND p.category = vs.category
		WHERE vs.venue_id = $2
		ON CONFLICT (id) DO NOTHING`, eventID, venueID, prefix); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO seats (id, event_id, section_id, row_label, number, base_price, category, x, y)
		SELECT $3 || vs.section_id || '-' || vs.row_label || '-' || vs.number, $1, $3 || vs.section_id,
		       vs.row_label, vs.number, p.amount, vs.category, vs.x, vs.y
		FROM venue_seats vs JOIN event_prices p ON p.event_id = $1 AND p.category = vs.category
		WHERE vs.venue_id = $2
		ON CONFLICT (id) DO NOTHING`, eventID, venueID, prefix)
	return err
}

// RepairEventLayout copies the event's venue layout again: the sections and
// seats missing are added, the rest is left as it is.
func (s *Catalogue) RepairEventLayout(ctx context.Context, eventID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var venueID string
		if err := tx.QueryRow(ctx, `SELECT venue_id FROM events WHERE id = $1`, eventID).Scan(&venueID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		return copyLayout(ctx, tx, eventID, venueID)
	})
}

const organiserEventColumns = `e.id, e.org_id, e.venue_id, e.title, e.artist, e.genre, e.description, e.status,
	e.starts_at, e.onsale_at, e.offsale_at, coalesce(e.cancellation_deadline, e.starts_at - make_interval(hours => e.cancel_cutoff_hours)),
	e.currency, e.metered, e.per_customer_limit, e.hold_ttl_seconds, e.created_at, e.published_at,
	coalesce((SELECT jsonb_object_agg(p.category, p.amount) FROM event_prices p WHERE p.event_id = e.id), '{}'),
	(SELECT count(*) FROM sections sec WHERE sec.event_id = e.id),
	(SELECT count(*) FROM seats st WHERE st.event_id = e.id),
	(SELECT coalesce(sum(capacity), 0) FROM sections sec WHERE sec.event_id = e.id AND sec.kind = 'general'),
	(SELECT v.timezone FROM venues v WHERE v.id = e.venue_id),
	e.resale_enabled, e.resale_max_price_bp, e.resale_fee_bp, e.resale_closes_minutes, e.reentry,
	e.service_fee, coalesce(e.series_id, ''), ` + ticketTypesJSON

// ticketTypesJSON reads event e's ticket types, in order, as JSON.
const ticketTypesJSON = `coalesce((SELECT jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name,
		'max_per_order', coalesce(t.max_per_order, 0), 'requires', coalesce(t.requires, ''),
		'prices', coalesce((SELECT jsonb_object_agg(p.category, p.amount) FROM ticket_type_prices p
		                    WHERE p.event_id = t.event_id AND p.type_id = t.id), '{}')) ORDER BY t.position)
	FROM ticket_types t WHERE t.event_id = e.id), '[]')`

func scanOrganiserEvent(row pgx.Row) (OrganiserEvent, error) {
	var e OrganiserEvent
	var offsale, published *time.Time
	err := row.Scan(&e.ID, &e.OrgID, &e.VenueID, &e.Title, &e.Artist, &e.Genre, &e.Description, &e.Status,
		&e.StartsAt, &e.OnsaleAt, &offsale, &e.CancellationDeadline, &e.Currency, &e.Metered, &e.PerCustomerLimit,
		&e.HoldTTLSeconds, &e.CreatedAt, &published, &e.Prices, &e.Sections, &e.Seats, &e.GeneralCapacity, &e.Timezone,
		&e.Resale.Enabled, &e.Resale.MaxPriceBp, &e.Resale.FeeBp, &e.Resale.ClosesMinutes, &e.Reentry,
		&e.ServiceFee, &e.SeriesID, &e.TicketTypes)
	if errors.Is(err, pgx.ErrNoRows) {
		return OrganiserEvent{}, ErrNotFound
	}
	if offsale != nil {
		e.OffsaleAt = *offsale
	}
	if published != nil {
		e.PublishedAt = *published
	}
	return e, err
}

// OrganiserEvent reads an event of org (any organisation when org is
// empty), or ErrNotFound.
func (s *Catalogue) OrganiserEvent(ctx context.Context, id, org string) (OrganiserEvent, error) {
	return scanOrganiserEvent(s.pool.QueryRow(ctx, `SELECT `+organiserEventColumns+`
		FROM events e WHERE e.id = $1 AND ($2 = '' OR e.org_id = $2)`, id, org))
}

// EventCursor is where a page of OrganiserEvents ends: the last event's
// creation time and ID.
type EventCursor struct {
	CreatedAt time.Time
	ID        string
}

// OrganiserEvents lists the events of org (every organisation's when org is
// empty), drafts included, newest first: those created before the cursor
// when one is given, at most limit.
func (s *Catalogue) OrganiserEvents(ctx context.Context, org string, before *EventCursor, limit int) ([]OrganiserEvent, error) {
	var at *time.Time
	var id string
	if before != nil {
		at, id = &before.CreatedAt, before.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+organiserEventColumns+` FROM events e
		WHERE ($1 = '' OR e.org_id = $1) AND ($2::timestamptz IS NULL OR (e.created_at, e.id) < ($2, $3))
		ORDER BY e.created_at DESC, e.id DESC LIMIT $4`, org, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (OrganiserEvent, error) { return scanOrganiserEvent(r) })
}

// UpdateEvent locks the event of org, lets change decide on its new state
// (refusing with any error), and writes it: the event's columns, its prices
// (re-pricing its sections and seats) and, when the venue changed, a fresh
// copy of the new venue's layout. Only a DRAFT may change prices or venue,
// which change must check: a DRAFT has no holds.
func (s *Catalogue) UpdateEvent(ctx context.Context, id, org string, change func(*OrganiserEvent) error) (OrganiserEvent, error) {
	var out OrganiserEvent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '2min'; SET LOCAL lock_timeout = '5s'`); err != nil {
			return err
		}
		before, err := scanOrganiserEvent(tx.QueryRow(ctx, `SELECT `+organiserEventColumns+`
			FROM events e WHERE e.id = $1 AND ($2 = '' OR e.org_id = $2) FOR UPDATE OF e`, id, org))
		if err != nil {
			return err
		}
		after := before
		after.Prices = maps.Clone(before.Prices)
		if err := change(&after); err != nil {
			return err
		}
		if after.Status == vocab.EventPublished && before.Status != vocab.EventPublished {
			after.PublishedAt = time.Now()
		}
		if _, err := tx.Exec(ctx, `UPDATE events SET venue_id = $2, title = $3, artist = $4, genre = $5, description = $6,
			status = $7, starts_at = $8, onsale_at = $9, offsale_at = $10, cancellation_deadline = $11, currency = $12,
			metered = $13, per_customer_limit = $14, hold_ttl_seconds = $15, published_at = $16,
			resale_enabled = $17, resale_max_price_bp = $18, resale_fee_bp = $19, resale_closes_minutes = $20, reentry = $21,
			service_fee = $22 WHERE id = $1`,
			id, after.VenueID, after.Title, after.Artist, after.Genre, after.Description, after.Status, after.StartsAt,
			after.OnsaleAt, nullTime(after.OffsaleAt), nullTime(after.CancellationDeadline), after.Currency, after.Metered,
			after.PerCustomerLimit, after.HoldTTLSeconds, nullTime(after.PublishedAt),
			after.Resale.Enabled, after.Resale.MaxPriceBp, after.Resale.FeeBp, after.Resale.ClosesMinutes, after.Reentry,
			after.ServiceFee); err != nil {
			return inputError(err)
		}
		if !slices.EqualFunc(after.TicketTypes, before.TicketTypes, TicketType.Equal) {
			if before.Status != vocab.EventDraft {
				return fmt.Errorf("store: event %s is %s: its ticket types are fixed", id, before.Status)
			}
			if err := writeTicketTypes(ctx, tx, after); err != nil {
				return err
			}
		}
		venueChanged := after.VenueID != before.VenueID
		pricesChanged := !maps.Equal(after.Prices, before.Prices) || after.Currency != before.Currency
		if (venueChanged || pricesChanged) && before.Status != vocab.EventDraft {
			return fmt.Errorf("store: event %s is %s: its layout and prices are fixed", id, before.Status)
		}
		if pricesChanged || venueChanged {
			if err := writePrices(ctx, tx, after); err != nil {
				return err
			}
		}
		if venueChanged {
			if _, err := tx.Exec(ctx, `DELETE FROM seats WHERE event_id = $1; `, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM sections WHERE event_id = $1`, id); err != nil {
				return err
			}
			if err := copyLayout(ctx, tx, id, after.VenueID); err != nil {
				return err
			}
		} else if pricesChanged {
			if _, err := tx.Exec(ctx, `UPDATE sections sec SET base_price = p.amount FROM event_prices p
				WHERE sec.event_id = $1 AND p.event_id = $1 AND p.category = sec.category`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE seats st SET base_price = p.amount FROM event_prices p
				WHERE st.event_id = $1 AND p.event_id = $1 AND p.category = st.category`, id); err != nil {
				return err
			}
		}
		out, err = scanOrganiserEvent(tx.QueryRow(ctx, `SELECT `+organiserEventColumns+` FROM events e WHERE e.id = $1`, id))
		return err
	})
	return out, err
}

// SeatConflictError names seats whose status refuses the change asked: a
// held or sold seat cannot be blocked, nor unblocked.
type SeatConflictError struct {
	Action vocab.SeatAction
	Seats  map[string]vocab.SeatStatus
}

func (e *SeatConflictError) Error() string {
	ids := slices.Sorted(maps.Keys(e.Seats))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + " is " + string(e.Seats[id])
	}
	return fmt.Sprintf("cannot %s: %s", e.Action, strings.Join(parts, ", "))
}

// SetSeatsBlocked blocks (AVAILABLE -> BLOCKED) or unblocks (BLOCKED ->
// AVAILABLE) seats of an event of org, all or none, logging each seat with
// the reason and the actor in seat_blocks, and publishing the change to seat
// maps. A seat already in the wanted state is logged and left; a HELD or
// SOLD seat refuses the whole request (*SeatConflictError); an unknown seat
// is an *InvalidError. It returns the seats whose status changed.
func (s *Catalogue) SetSeatsBlocked(ctx context.Context, eventID, org string, seatIDs []string, action vocab.SeatAction,
	reason, actor string) ([]string, error) {
	var changed []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT true FROM events WHERE id = $1 AND ($2 = '' OR org_id = $2)`,
			eventID, org).Scan(&ok); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, section_id, status FROM seats
			WHERE event_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, eventID, seatIDs)
		if err != nil {
			return err
		}
		status := map[string]vocab.SeatStatus{}
		section := map[string]string{}
		for rows.Next() {
			var id, sec string
			var st vocab.SeatStatus
			if err := rows.Scan(&id, &sec, &st); err != nil {
				return err
			}
			status[id], section[id] = st, sec
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var unknown []string
		for _, id := range seatIDs {
			if _, ok := status[id]; !ok {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			return &InvalidError{Field: "seat_ids", Message: "not seats of this event: " + strings.Join(unknown, ", ")}
		}
		from, to := vocab.SeatAvailable, vocab.SeatBlocked
		if action == vocab.SeatUnblock {
			from, to = vocab.SeatBlocked, vocab.SeatAvailable
		}
		conflict := &SeatConflictError{Action: action, Seats: map[string]vocab.SeatStatus{}}
		sections := map[string]bool{}
		for _, id := range seatIDs {
			switch status[id] {
			case from:
				changed = append(changed, id)
				sections[section[id]] = true
			case to:
			default:
				conflict.Seats[id] = status[id]
			}
		}
		if len(conflict.Seats) > 0 {
			return conflict
		}
		b := &pgx.Batch{}
		if len(changed) > 0 {
			b.Queue(`UPDATE seats SET status = $3, version = version + 1 WHERE event_id = $1 AND id = ANY($2) AND status = $4`,
				eventID, changed, to, from)
			queueSectionsChanged(b, eventID, slices.Sorted(maps.Keys(sections)))
		}
		b.Queue(`INSERT INTO seat_blocks (event_id, seat_id, action, reason, actor)
			SELECT $1, id, $3, $4, $5 FROM unnest($2::text[]) AS id`, eventID, seatIDs, action, reason, actor)
		return inputError(tx.SendBatch(ctx, b).Close())
	})
	return changed, err
}

// SeatBlock is an entry of the seat block log.
type SeatBlock struct {
	SeatID, Reason, Actor string
	Action                vocab.SeatAction
	At                    time.Time
}

// SeatBlocks lists an event's block log, oldest first.
func (s *Catalogue) SeatBlocks(ctx context.Context, eventID string) ([]SeatBlock, error) {
	rows, err := s.pool.Query(ctx, `SELECT seat_id, action, reason, actor, at FROM seat_blocks
		WHERE event_id = $1 ORDER BY id`, eventID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SeatBlock, error) {
		var b SeatBlock
		return b, r.Scan(&b.SeatID, &b.Action, &b.Reason, &b.Actor, &b.At)
	})
}
