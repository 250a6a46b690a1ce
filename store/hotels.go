package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// PropertySpec describes a hotel to create (demo data, tests).
type PropertySpec struct {
	ID, Name, City string
	VenueID        string // the venue it is near; empty for none
	Currency       string
	MinStay        int // nights; 0 means 1
	FreeCancelDays int
	RoomTypes      []RoomTypeSpec
}

// RoomTypeSpec is one room type and its nightly inventory from a first
// night for a number of nights.
type RoomTypeSpec struct {
	ID, Name      string
	MaxGuests     int
	Allotment     int
	OverbookLimit int
	Price         int64 // per night, minor units
	// WeekendPrice, when set, is the rate of Friday and Saturday nights.
	WeekendPrice int64
}

// CreateProperty inserts the property, its room types and their nights from
// first for nights nights, idempotently: rows already there (and their
// counters) are left alone.
func (s *Hotels) CreateProperty(ctx context.Context, p PropertySpec, first time.Time, nights int) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var venue *string
		if p.VenueID != "" {
			venue = &p.VenueID
		}
		if _, err := tx.Exec(ctx, `INSERT INTO properties (id, name, city, venue_id, currency, min_stay, free_cancel_days)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			p.ID, p.Name, p.City, venue, p.Currency, max(p.MinStay, 1), p.FreeCancelDays); err != nil {
			return err
		}
		for _, rt := range p.RoomTypes {
			if _, err := tx.Exec(ctx, `INSERT INTO room_types (property_id, id, name, max_guests) VALUES ($1, $2, $3, $4)
				ON CONFLICT DO NOTHING`, p.ID, rt.ID, rt.Name, rt.MaxGuests); err != nil {
				return err
			}
			weekend := rt.WeekendPrice
			if weekend == 0 {
				weekend = rt.Price
			}
			if _, err := tx.Exec(ctx, `INSERT INTO room_nights (property_id, room_type, night, allotment, overbook_limit, price)
				SELECT $1, $2, d::date, $3::int, $4::int, CASE WHEN extract(isodow FROM d) IN (5, 6) THEN $7::bigint ELSE $5::bigint END
				FROM generate_series($6::date, $6::date + ($8::int - 1), interval '1 day') AS d
				ON CONFLICT DO NOTHING`, p.ID, rt.ID, rt.Allotment, rt.OverbookLimit, rt.Price, first, weekend, nights); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetOverbooking sets the overbooking limit of one room-night. A limit
// below what is already held and sold is refused (the CHECK), never applied.
func (s *Hotels) SetOverbooking(ctx context.Context, propertyID, roomType string, night time.Time, limit int) (RoomNight, error) {
	if limit < 0 {
		return RoomNight{}, &InvalidError{Field: "limit", Message: "must not be negative"}
	}
	rn := RoomNight{PropertyID: propertyID, RoomType: roomType}
	err := s.pool.QueryRow(ctx, `UPDATE room_nights SET overbook_limit = $4
		WHERE property_id = $1 AND room_type = $2 AND night = $3
		RETURNING night, allotment, overbook_limit, held, sold, price`, propertyID, roomType, night, limit).
		Scan(&rn.Night, &rn.Allotment, &rn.OverbookLimit, &rn.Held, &rn.Sold, &rn.Price)
	if errors.Is(err, pgx.ErrNoRows) {
		return RoomNight{}, ErrNotFound
	}
	if code, constraint := pgCode(err); code == pgCheckViolation && constraint == "room_nights_within_limit" {
		return RoomNight{}, &InvalidError{Field: "limit", Message: "more rooms are already held or sold than allotment plus this limit"}
	}
	return rn, err
}

// HotelQuery is a hotel search: a destination (a city, or a venue ID), the
// stay's dates and the guests per room.
type HotelQuery struct {
	Dest     string
	Checkin  time.Time
	Checkout time.Time
	Guests   int
}

// HotelNight is one night of a room type as search shows it.
type HotelNight struct {
	Night     time.Time
	Available int
	Price     int64
}

// HotelRoomType is a room type with every night of the stay.
type HotelRoomType struct {
	ID, Name  string
	MaxGuests int
	Nights    []HotelNight
}

// HotelProperty is one property of a search with its room types.
type HotelProperty struct {
	ID, Name, City string
	Currency       string
	MinStay        int
	RoomTypes      []HotelRoomType
	// Address, coordinates and the distance from the venue in kilometres:
	// set by HotelsNear only (nil coordinates: the property has none).
	Address    string
	Lat, Lng   *float64
	DistanceKM *float64
}

// NearQuery asks for the properties near an event's venue with rooms that
// sleep Guests on every night from Checkin to Checkout.
type NearQuery struct {
	EventID           string
	Checkin, Checkout time.Time
	Guests            int
	// RadiusKM bounds the distance from the venue when both have
	// coordinates.
	RadiusKM float64
}

// EventPlace is where and when a published event is: what its hotels are
// searched by.
type EventPlace struct {
	EventID, VenueID, City, Timezone string
	StartsAt                         time.Time
	Lat, Lng                         *float64
}

// EventPlace reads a published event's venue, city, zone and start
// (ErrNotFound for an event fans cannot see).
func (r *Reader) EventPlace(ctx context.Context, eventID string) (EventPlace, error) {
	e := EventPlace{EventID: eventID}
	err := r.pool.QueryRow(ctx, `SELECT v.id, v.city, v.timezone, e.starts_at, v.lat, v.lng
		FROM events e JOIN venues v ON v.id = e.venue_id WHERE e.id = $1 AND e.status = 'PUBLISHED'`, eventID).
		Scan(&e.VenueID, &e.City, &e.Timezone, &e.StartsAt, &e.Lat, &e.Lng)
	if errors.Is(err, pgx.ErrNoRows) {
		return EventPlace{}, ErrNotFound
	}
	return e, err
}

// HotelsNear lists the properties near place, nearest first, with every
// room type that sleeps the guests and is on sale every night of the stay
// (a stop-sold night takes the room type out), each night's availability
// and price, as SearchHotels does. Near is within RadiusKM of the venue
// when the venue and the property both have coordinates (great-circle
// distance); otherwise a property of the venue or in the venue's city
// counts, with no distance. It reads on the browse plane's read-only pool.
func (r *Reader) HotelsNear(ctx context.Context, place EventPlace, q NearQuery) ([]HotelProperty, error) {
	nights := int(q.Checkout.Sub(q.Checkin).Hours()+12) / 24
	rows, err := r.pool.Query(ctx, `
		WITH near AS (
			SELECT p.id, CASE WHEN p.lat IS NOT NULL AND $5::float8 IS NOT NULL THEN
				2 * 6371 * asin(sqrt(power(sin(radians(p.lat - $5) / 2), 2)
				  + cos(radians($5)) * cos(radians(p.lat)) * power(sin(radians(p.lng - $6) / 2), 2))) END AS km
			FROM properties p
			WHERE (p.lat IS NOT NULL AND $5::float8 IS NOT NULL) OR p.venue_id = $7 OR lower(p.city) = lower($8))
		SELECT p.id, p.name, p.city, coalesce(p.currency, ''), p.min_stay, rt.id, rt.name, rt.max_guests,
		       rn.night, greatest(rn.allotment + rn.overbook_limit - rn.held - rn.sold, 0), rn.price,
		       p.address, p.lat, p.lng, near.km
		FROM near JOIN properties p ON p.id = near.id
		JOIN room_types rt ON rt.property_id = p.id
		JOIN room_nights rn ON rn.property_id = p.id AND rn.room_type = rt.id
		WHERE (near.km IS NULL OR near.km <= $4) AND rt.max_guests >= $3
		  AND rn.night >= $1 AND rn.night < $2 AND NOT rn.stop_sell
		ORDER BY near.km NULLS LAST, p.name, p.id, rt.id, rn.night`,
		q.Checkin, q.Checkout, q.Guests, q.RadiusKM, place.Lat, place.Lng, place.VenueID, place.City)
	if err != nil {
		return nil, err
	}
	return collectHotels(rows, nights, func(p *HotelProperty) []any { return []any{&p.Address, &p.Lat, &p.Lng, &p.DistanceKM} })
}

// SearchHotels lists the properties at the destination with every room type
// that sleeps the guests and is on sale every night of the stay, with each
// night's availability and price. Minimum stays are the caller's to apply
// (it shows why a property is left out). It reads on the browse plane's
// read-only pool.
func (r *Reader) SearchHotels(ctx context.Context, q HotelQuery) ([]HotelProperty, error) {
	nights := int(q.Checkout.Sub(q.Checkin).Hours()+12) / 24
	rows, err := r.pool.Query(ctx, `
		SELECT p.id, p.name, p.city, coalesce(p.currency, ''), p.min_stay, rt.id, rt.name, rt.max_guests,
		       rn.night, greatest(rn.allotment + rn.overbook_limit - rn.held - rn.sold, 0), rn.price
		FROM properties p
		JOIN room_types rt ON rt.property_id = p.id
		JOIN room_nights rn ON rn.property_id = p.id AND rn.room_type = rt.id
		WHERE (lower(p.city) = lower($1) OR p.venue_id = $1 OR p.id = $1)
		  AND rt.max_guests >= $4 AND rn.night >= $2 AND rn.night < $3 AND NOT rn.stop_sell
		ORDER BY p.name, p.id, rt.id, rn.night`, q.Dest, q.Checkin, q.Checkout, q.Guests)
	if err != nil {
		return nil, err
	}
	return collectHotels(rows, nights, func(p *HotelProperty) []any { return nil })
}

// collectHotels groups rows of property, room type and night (in that
// order, extra's columns after the night's) into properties, keeping the
// room types on sale every one of the stay's nights.
func collectHotels(rows pgx.Rows, nights int, extra func(*HotelProperty) []any) ([]HotelProperty, error) {
	defer rows.Close()
	var out []HotelProperty
	for rows.Next() {
		var p HotelProperty
		var rt HotelRoomType
		var n HotelNight
		dest := []any{&p.ID, &p.Name, &p.City, &p.Currency, &p.MinStay, &rt.ID, &rt.Name, &rt.MaxGuests, &n.Night, &n.Available, &n.Price}
		if err := rows.Scan(append(dest, extra(&p)...)...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].ID != p.ID {
			out = append(out, p)
		}
		last := &out[len(out)-1]
		if len(last.RoomTypes) == 0 || last.RoomTypes[len(last.RoomTypes)-1].ID != rt.ID {
			last.RoomTypes = append(last.RoomTypes, rt)
		}
		cur := &last.RoomTypes[len(last.RoomTypes)-1]
		cur.Nights = append(cur.Nights, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// A room type missing a night of the stay is not on sale for it.
	kept := out[:0]
	for _, p := range out {
		types := p.RoomTypes[:0]
		for _, rt := range p.RoomTypes {
			if len(rt.Nights) == nights {
				types = append(types, rt)
			}
		}
		if p.RoomTypes = types; len(types) > 0 {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// Walk is one booking moved off an overbooked night.
type Walk struct {
	ID            int64
	ReservationID uuid.UUID
	UserID        string
	Night         time.Time
	FromProperty  string
	FromRoomType  string
	ToProperty    string
	ToRoomType    string
	Rooms         int
	Refund        int64
	Compensation  int64
	Currency      string
	Notified      bool
	// Outcome is how the guest was walked: WalkRelocated to ToProperty, or
	// WalkCancelled when no property in town had room (ToProperty empty):
	// the whole booking is then cancelled and refunded by the walk workflow.
	Outcome WalkOutcome
	// IntentID is the booking's payment, which the refund is paid from;
	// RefundID the provider's refund once paid ("" until then).
	IntentID string
	RefundID string
}

// WalkOutcome is how a walked booking left its night.
type WalkOutcome string

// The outcomes of a walk.
const (
	WalkRelocated WalkOutcome = "relocated"
	WalkCancelled WalkOutcome = "cancelled"
)

// WalkBookings walks bookings off propertyID's night until count bookings
// have been walked from it that night (earlier calls count: a retry walks
// nobody twice, and walks_once_per_booking makes it impossible). The last
// paid bookings are walked first. Each walked booking's night moves to the
// property in the same city with the most rooms left that sleeps as many
// (never into that property's overbooking), the original night's rooms are
// given back, and the walk is recorded with the night's price as refund and
// compensationNights nights' price as compensation. A booking no property
// in town has room for is recorded as a WalkCancelled walk instead (no
// refund of its own, nothing moved): the caller cancels and refunds the
// booking whole. It returns every walk of that night, the earlier ones
// included.
func (s *Hotels) WalkBookings(ctx context.Context, propertyID string, night time.Time, count int, compensationNights int) ([]Walk, error) {
	var out []Walk
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = walkTx(ctx, tx, propertyID, night, count, compensationNights)
		return err
	})
	if transient(err) {
		return nil, ErrBusy
	}
	return out, err
}

// walkTx is WalkBookings's transaction (and PreviewWalk's, rolled back).
func walkTx(ctx context.Context, tx pgx.Tx, propertyID string, night time.Time, count, compensationNights int) ([]Walk, error) {
	var out []Walk
	err := func() error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`,
			idempotencyLockKey("walk", propertyID, night.Format(time.DateOnly))); err != nil {
			return err
		}
		var already int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM walks WHERE from_property = $1 AND night = $2`,
			propertyID, night).Scan(&already); err != nil {
			return err
		}
		if need := count - already; need > 0 {
			ids, err := queryIDs(ctx, tx, `SELECT r.id FROM reservations r
				WHERE r.status = 'PAID' AND NOT EXISTS (SELECT 1 FROM walks w WHERE w.reservation_id = r.id)
				  AND EXISTS (SELECT 1 FROM reservation_nights n WHERE n.reservation_id = r.id AND n.live
				              AND n.property_id = $1 AND n.night = $2)
				ORDER BY r.ended_at DESC, r.id LIMIT $3 FOR UPDATE OF r`, propertyID, night, need)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := walkOne(ctx, tx, id, propertyID, night, compensationNights); err != nil {
					return err
				}
			}
		}
		rows, err := tx.Query(ctx, `SELECT w.id, w.reservation_id, r.user_id, w.night, w.from_property, w.from_room_type,
			coalesce(w.to_property, ''), coalesce(w.to_room_type, ''), w.rooms, w.refund, w.compensation, w.currency,
			w.notified_at IS NOT NULL, w.outcome, coalesce(p.intent_id, ''), coalesce(w.refund_id, '')
			FROM walks w JOIN reservations r ON r.id = w.reservation_id LEFT JOIN payments p ON p.reservation_id = w.reservation_id
			WHERE w.from_property = $1 AND w.night = $2 ORDER BY w.id`, propertyID, night)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Walk, error) {
			var w Walk
			err := row.Scan(&w.ID, &w.ReservationID, &w.UserID, &w.Night, &w.FromProperty, &w.FromRoomType, &w.ToProperty,
				&w.ToRoomType, &w.Rooms, &w.Refund, &w.Compensation, &w.Currency, &w.Notified, &w.Outcome, &w.IntentID, &w.RefundID)
			return w, err
		})
		return err
	}()
	return out, err
}

// walkOne moves one booking's night at from to another property.
func walkOne(ctx context.Context, tx pgx.Tx, id uuid.UUID, from string, night time.Time, compensationNights int) error {
	var stay, rooms int
	var roomType, currency string
	var checkin, checkout time.Time
	var price int64
	if err := tx.QueryRow(ctx, `SELECT stay, room_type, rooms, price, currency, checkin, checkout FROM reservation_nights
		WHERE reservation_id = $1 AND property_id = $2 AND night = $3 AND live ORDER BY stay LIMIT 1`, id, from, night).
		Scan(&stay, &roomType, &rooms, &price, &currency, &checkin, &checkout); err != nil {
		return err
	}
	var toProp, toType string
	err := tx.QueryRow(ctx, `SELECT rn.property_id, rn.room_type FROM room_nights rn
		JOIN properties p ON p.id = rn.property_id
		JOIN room_types rt ON rt.property_id = rn.property_id AND rt.id = rn.room_type
		WHERE rn.night = $2 AND rn.property_id <> $1 AND p.currency = $5
		  AND lower(p.city) = (SELECT lower(city) FROM properties WHERE id = $1)
		  AND rt.max_guests >= (SELECT max_guests FROM room_types WHERE property_id = $1 AND id = $3)
		  AND rn.held + rn.sold + $4 <= rn.allotment AND NOT rn.stop_sell
		ORDER BY rn.allotment - rn.held - rn.sold DESC, rn.property_id, rn.room_type
		LIMIT 1 FOR UPDATE OF rn`, from, night, roomType, rooms, currency).Scan(&toProp, &toType)
	if errors.Is(err, pgx.ErrNoRows) {
		// Nowhere to go: recorded, and the booking is cancelled whole by the
		// caller, which gives its nights (and a package's seats) back.
		_, err := tx.Exec(ctx, `INSERT INTO walks (reservation_id, night, from_property, from_room_type, rooms,
			refund, compensation, currency, outcome) VALUES ($1, $2, $3, $4, $5, 0, $6, $7, 'cancelled')`,
			id, night, from, roomType, rooms, price*int64(rooms)*int64(compensationNights), currency)
		return err
	}
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	// The guest keeps the room at the other property; the original night is
	// given back (sold - rooms) and refunded, the new one sold at no charge.
	b.Queue(`UPDATE room_nights SET sold = sold + $4 WHERE property_id = $1 AND room_type = $2 AND night = $3`,
		toProp, toType, night, rooms)
	b.Queue(`UPDATE room_nights SET sold = sold - $4 WHERE property_id = $1 AND room_type = $2 AND night = $3`,
		from, roomType, night, rooms)
	b.Queue(`UPDATE reservation_nights SET live = false WHERE reservation_id = $1 AND property_id = $2 AND night = $3 AND stay = $4`,
		id, from, night, stay)
	b.Queue(`INSERT INTO reservation_nights (reservation_id, stay, property_id, room_type, night, checkin, checkout, rooms, price, currency)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)`, id, stay, toProp, toType, night, checkin, checkout, rooms, currency)
	refund := price * int64(rooms)
	b.Queue(`INSERT INTO walks (reservation_id, night, from_property, from_room_type, to_property, to_room_type, rooms,
		refund, compensation, currency) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		id, night, from, roomType, toProp, toType, rooms, refund, refund*int64(compensationNights), currency)
	// Both properties are told: one lost a guest for the night, the other
	// gained one.
	b.Queue(`INSERT INTO property_notices (property_id, reservation_id, kind, night) VALUES ($1, $3, $4, $5), ($2, $3, $6, $5)
		ON CONFLICT ON CONSTRAINT property_notices_once DO NOTHING`, from, toProp, id, vocab.NoticeWalked, night, vocab.NoticeChanged)
	return tx.SendBatch(ctx, b).Close()
}

// MarkWalkNotified records that the guest of a walk was told.
func (s *Hotels) MarkWalkNotified(ctx context.Context, id uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE walks SET notified_at = coalesce(notified_at, now()) WHERE reservation_id = $1`, id)
	return err
}

// WalkRefunds is what the booking's walks refunded (their nights' prices).
func (s *Hotels) WalkRefunds(ctx context.Context, id uuid.UUID) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(refund), 0)::bigint FROM walks WHERE reservation_id = $1`, id).Scan(&n)
	return n, err
}

// MarkWalkRefunded records the provider's refund of a walk's night.
func (s *Hotels) MarkWalkRefunded(ctx context.Context, walkID int64, refundID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE walks SET refund_id = $2 WHERE id = $1 AND refund_id IS NULL`, walkID, refundID)
	return err
}
