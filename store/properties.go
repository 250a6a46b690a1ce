package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// Property is a hotel as its hoteliers run it: where it is, when guests
// arrive and leave, whom to email, the rules of its rate, and its room
// types. OrgID is the organisation whose hoteliers manage it (empty for a
// property made before properties had one: an admin's alone). Currency is
// empty until the property's first rate fixes it.
type Property struct {
	ID, OrgID      string
	Name, City     string
	Address        string
	Lat, Lng       *float64
	Timezone       string
	CheckInTime    string // HH:MM on the property's clocks
	CheckOutTime   string
	ContactEmail   string
	Currency       string
	VenueID        string // the venue it is near; empty for none
	MinStay        int
	FreeCancelDays int
	RoomTypes      []RoomType
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// RoomType is one kind of room of a property.
type RoomType struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MaxGuests int    `json:"max_guests"`
}

// ErrPropertyExists says a property with the ID is there already.
var ErrPropertyExists = errors.New("store: property exists")

const propertyColumns = `p.id, coalesce(p.org_id, ''), p.name, p.city, p.address, p.lat, p.lng, p.timezone,
	to_char(p.check_in_time, 'HH24:MI'), to_char(p.check_out_time, 'HH24:MI'), p.contact_email, coalesce(p.currency, ''),
	coalesce(p.venue_id, ''), p.min_stay, p.free_cancel_days, p.created_at, p.updated_at`

func scanProperty(row pgx.Row) (Property, error) {
	var p Property
	err := row.Scan(&p.ID, &p.OrgID, &p.Name, &p.City, &p.Address, &p.Lat, &p.Lng, &p.Timezone, &p.CheckInTime,
		&p.CheckOutTime, &p.ContactEmail, &p.Currency, &p.VenueID, &p.MinStay, &p.FreeCancelDays, &p.CreatedAt, &p.UpdatedAt)
	return p, err
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// InsertProperty writes a new property and its room types in one
// transaction: ErrPropertyExists when the ID is taken, an *InvalidError
// naming venue_id for a venue that does not exist.
func (s *Hotels) InsertProperty(ctx context.Context, p Property) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO properties (id, org_id, name, city, address, lat, lng, timezone, check_in_time,
			check_out_time, contact_email, currency, venue_id, min_stay, free_cancel_days)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::time, $10::time, $11, $12, $13, $14, $15)`,
			p.ID, nullable(p.OrgID), p.Name, p.City, p.Address, p.Lat, p.Lng, p.Timezone, p.CheckInTime, p.CheckOutTime,
			p.ContactEmail, nullable(p.Currency), nullable(p.VenueID), max(p.MinStay, 1), p.FreeCancelDays)
		if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "properties_pkey" {
			return ErrPropertyExists
		} else if code == pgForeignKeyViolation {
			return &InvalidError{Field: "venue_id", Message: "no such venue"}
		}
		if err != nil {
			return inputError(err)
		}
		return upsertRoomTypes(ctx, tx, p.ID, p.RoomTypes)
	})
}

// upsertRoomTypes adds the room types or renames and resizes those there.
func upsertRoomTypes(ctx context.Context, tx pgx.Tx, propertyID string, types []RoomType) error {
	if len(types) == 0 {
		return nil
	}
	ids, names, guests := make([]string, len(types)), make([]string, len(types)), make([]int32, len(types))
	for i, rt := range types {
		ids[i], names[i], guests[i] = rt.ID, rt.Name, int32(rt.MaxGuests)
	}
	_, err := tx.Exec(ctx, `INSERT INTO room_types (property_id, id, name, max_guests)
		SELECT $1, id, name, guests FROM unnest($2::text[], $3::text[], $4::int[]) AS u(id, name, guests)
		ON CONFLICT (property_id, id) DO UPDATE SET name = excluded.name, max_guests = excluded.max_guests`,
		propertyID, ids, names, guests)
	return inputError(err)
}

// Property reads one property with its room types. org restricts it to an
// organisation's properties ("" for any): another's is ErrNotFound.
func (s *Hotels) Property(ctx context.Context, id, org string) (Property, error) {
	p, err := scanProperty(s.pool.QueryRow(ctx, `SELECT `+propertyColumns+` FROM properties p
		WHERE p.id = $1 AND ($2 = '' OR p.org_id = $2)`, id, org))
	if err = orNotFound(err); err != nil {
		return Property{}, err
	}
	if p.RoomTypes, err = s.roomTypes(ctx, []string{id}); err != nil {
		return Property{}, err
	}
	return p, nil
}

func (s *Hotels) roomTypes(ctx context.Context, ids []string) ([]RoomType, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, max_guests FROM room_types WHERE property_id = ANY($1) ORDER BY property_id, id`, ids)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RoomType, error) {
		var rt RoomType
		err := row.Scan(&rt.ID, &rt.Name, &rt.MaxGuests)
		return rt, err
	})
	if out == nil {
		out = []RoomType{}
	}
	return out, err
}

// Properties lists an organisation's properties (every one for org ""),
// newest first, each with its room types.
func (s *Hotels) Properties(ctx context.Context, org string) ([]Property, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+propertyColumns+` FROM properties p
		WHERE $1 = '' OR p.org_id = $1 ORDER BY p.created_at DESC, p.id LIMIT 1000`, org)
	if err != nil {
		return nil, err
	}
	props, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Property, error) { return scanProperty(row) })
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(props))
	for i, p := range props {
		ids[i] = p.ID
	}
	trows, err := s.pool.Query(ctx, `SELECT property_id, id, name, max_guests FROM room_types WHERE property_id = ANY($1)
		ORDER BY property_id, id`, ids)
	if err != nil {
		return nil, err
	}
	byProp := map[string][]RoomType{}
	var prop string
	var rt RoomType
	if _, err := pgx.ForEachRow(trows, []any{&prop, &rt.ID, &rt.Name, &rt.MaxGuests}, func() error {
		byProp[prop] = append(byProp[prop], rt)
		return nil
	}); err != nil {
		return nil, err
	}
	for i := range props {
		props[i].RoomTypes = byProp[props[i].ID]
		if props[i].RoomTypes == nil {
			props[i].RoomTypes = []RoomType{}
		}
	}
	return props, nil
}

// UpdateProperty changes a property under its row lock: fn sees it as it
// stands and changes it (an error from fn writes nothing); the property is
// written whole, and fn's room types are added or renamed (never removed:
// nights and bookings name them). org restricts it as Property does.
func (s *Hotels) UpdateProperty(ctx context.Context, id, org string, fn func(*Property) error) (Property, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		p, err := scanProperty(tx.QueryRow(ctx, `SELECT `+propertyColumns+` FROM properties p
			WHERE p.id = $1 AND ($2 = '' OR p.org_id = $2) FOR NO KEY UPDATE`, id, org))
		if err = orNotFound(err); err != nil {
			return err
		}
		p.RoomTypes = nil
		if err := fn(&p); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE properties SET name = $2, city = $3, address = $4, lat = $5, lng = $6, timezone = $7,
			check_in_time = $8::time, check_out_time = $9::time, contact_email = $10, currency = coalesce(currency, $11),
			venue_id = $12, min_stay = $13, free_cancel_days = $14, updated_at = now() WHERE id = $1`,
			p.ID, p.Name, p.City, p.Address, p.Lat, p.Lng, p.Timezone, p.CheckInTime, p.CheckOutTime, p.ContactEmail,
			nullable(p.Currency), nullable(p.VenueID), max(p.MinStay, 1), p.FreeCancelDays)
		if code, _ := pgCode(err); code == pgForeignKeyViolation {
			return &InvalidError{Field: "venue_id", Message: "no such venue"}
		}
		if err != nil {
			return inputError(err)
		}
		return upsertRoomTypes(ctx, tx, p.ID, p.RoomTypes)
	})
	if err != nil {
		return Property{}, err
	}
	return s.Property(ctx, id, org)
}

// MaxInventoryNights bounds the nights one inventory change or read spans:
// a year, leap day included.
const MaxInventoryNights = 366

// InventoryChange sets a room type's nights from From to To, both
// included (dates at UTC midnight). Each field left nil keeps what a night
// has; nights not yet on sale are created and need Allotment and Rate.
// Weekdays, when set, limits the change to those ISO days (1 Monday to 7
// Sunday): a weekend rate over a season in one call.
type InventoryChange struct {
	PropertyID    string
	RoomType      string
	From, To      time.Time
	Allotment     *int
	OverbookLimit *int
	Rate          *money.Money
	StopSell      *bool
	Weekdays      []int
}

// InventoryResult says what a change did.
type InventoryResult struct {
	// Updated nights were on sale already; Created are new.
	Updated, Created int
	Currency         string
}

// NightConflict is one night an inventory change would leave with more
// rooms held and sold than its allotment plus overbooking limit: the
// counters as they stand, and the allotment and limit asked for.
type NightConflict struct {
	Night                    time.Time
	Held, Sold               int
	Allotment, OverbookLimit int
}

// InventoryConflictError refuses an inventory change that would leave
// guests without rooms: every night named, nothing changed (rule 11: a
// room-night is never held and sold past its allotment plus limit). Field
// is what to lower less: allotment, or overbook_limit when only the limit
// changed.
type InventoryConflictError struct {
	PropertyID, RoomType, Field string
	Nights                      []NightConflict
}

func (e *InventoryConflictError) Error() string {
	dates := make([]string, 0, min(len(e.Nights), 10))
	for i, n := range e.Nights {
		if i == 10 {
			dates = append(dates, fmt.Sprintf("and %d more", len(e.Nights)-10))
			break
		}
		dates = append(dates, n.Night.Format(time.DateOnly))
	}
	return fmt.Sprintf("store: %s %s has more rooms held and sold than allotment plus overbooking limit would allow on %s",
		e.PropertyID, e.RoomType, strings.Join(dates, ", "))
}

// SetInventory applies an inventory change in one transaction, all nights
// or none. It locks the property (inventory changes of one property run
// one after another) and the range's nights in date order, refuses the
// whole change with an *InventoryConflictError when any night would end up
// with more rooms held and sold than allotment plus limit, and an
// *InvalidError for an unknown room type, a rate in another currency than
// the property's, or new nights without allotment or rate. A rate changes
// only what later holds pay: held and paid stays keep the prices frozen in
// reservation_nights (rule 6).
func (s *Hotels) SetInventory(ctx context.Context, ch InventoryChange) (InventoryResult, error) {
	var res InventoryResult
	weekdays := make([]int32, len(ch.Weekdays))
	for i, d := range ch.Weekdays {
		weekdays[i] = int32(d)
	}
	const inRange = ` property_id = $1 AND room_type = $2 AND night BETWEEN $3 AND $4
		AND (cardinality($5::int[]) = 0 OR extract(isodow FROM night)::int = ANY($5))`
	args := []any{ch.PropertyID, ch.RoomType, ch.From, ch.To, weekdays}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		res = InventoryResult{}
		var currency *string
		var known bool
		err := tx.QueryRow(ctx, `SELECT p.currency, EXISTS (SELECT 1 FROM room_types WHERE property_id = p.id AND id = $2)
			FROM properties p WHERE p.id = $1 FOR NO KEY UPDATE`, ch.PropertyID, ch.RoomType).Scan(&currency, &known)
		if err = orNotFound(err); err != nil {
			return err
		}
		if !known {
			return &InvalidError{Field: "room_type", Message: "the property has no such room type"}
		}
		if ch.Rate != nil {
			if currency != nil && *currency != ch.Rate.Currency {
				return &InvalidError{Field: "rate.currency", Message: "the property's rates are in " + *currency}
			}
			if currency == nil {
				if _, err := tx.Exec(ctx, `UPDATE properties SET currency = $2, updated_at = now() WHERE id = $1`,
					ch.PropertyID, ch.Rate.Currency); err != nil {
					return err
				}
				currency = &ch.Rate.Currency
			}
		}
		if currency != nil {
			res.Currency = *currency
		}
		rows, err := tx.Query(ctx, `SELECT night, allotment, overbook_limit, held, sold FROM room_nights WHERE`+inRange+`
			ORDER BY night FOR UPDATE`, args...)
		if err != nil {
			return err
		}
		var conflicts []NightConflict
		var n NightConflict
		if _, err := pgx.ForEachRow(rows, []any{&n.Night, &n.Allotment, &n.OverbookLimit, &n.Held, &n.Sold}, func() error {
			res.Updated++
			if ch.Allotment != nil {
				n.Allotment = *ch.Allotment
			}
			if ch.OverbookLimit != nil {
				n.OverbookLimit = *ch.OverbookLimit
			}
			if n.Held+n.Sold > n.Allotment+n.OverbookLimit {
				conflicts = append(conflicts, n)
			}
			return nil
		}); err != nil {
			return err
		}
		if len(conflicts) > 0 {
			field := "allotment"
			if ch.Allotment == nil {
				field = "overbook_limit"
			}
			return &InventoryConflictError{PropertyID: ch.PropertyID, RoomType: ch.RoomType, Field: field, Nights: conflicts}
		}
		var wanted int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM generate_series($1::date, $2::date, interval '1 day') AS d
			WHERE cardinality($3::int[]) = 0 OR extract(isodow FROM d)::int = ANY($3)`, ch.From, ch.To, weekdays).Scan(&wanted); err != nil {
			return err
		}
		if missing := wanted - res.Updated; missing > 0 {
			switch {
			case ch.Allotment == nil:
				return &InvalidError{Field: "allotment", Message: fmt.Sprintf("required: %d nights of the range are not on sale yet", missing)}
			case ch.Rate == nil:
				return &InvalidError{Field: "rate", Message: fmt.Sprintf("required: %d nights of the range are not on sale yet", missing)}
			}
		}
		var rate *int64
		if ch.Rate != nil {
			rate = &ch.Rate.Amount
		}
		if res.Updated > 0 {
			if _, err := tx.Exec(ctx, `UPDATE room_nights SET allotment = coalesce($6, allotment),
				overbook_limit = coalesce($7, overbook_limit), price = coalesce($8, price), stop_sell = coalesce($9, stop_sell)
				WHERE`+inRange, append(args, ch.Allotment, ch.OverbookLimit, rate, ch.StopSell)...); err != nil {
				return err
			}
		}
		if wanted > res.Updated {
			limit, stop := 0, false
			if ch.OverbookLimit != nil {
				limit = *ch.OverbookLimit
			}
			if ch.StopSell != nil {
				stop = *ch.StopSell
			}
			tag, err := tx.Exec(ctx, `INSERT INTO room_nights (property_id, room_type, night, allotment, overbook_limit, price, stop_sell)
				SELECT $1, $2, d::date, $6, $7, $8, $9 FROM generate_series($3::date, $4::date, interval '1 day') AS d
				WHERE cardinality($5::int[]) = 0 OR extract(isodow FROM d)::int = ANY($5)
				ON CONFLICT DO NOTHING`, append(args, *ch.Allotment, limit, *rate, stop)...)
			if err != nil {
				return err
			}
			res.Created = int(tag.RowsAffected())
		}
		return nil
	})
	if transient(err) {
		return InventoryResult{}, ErrBusy
	}
	return res, err
}

// Inventory reads every room type's nights of a property from from to to,
// both included, by night then room type: the counters, the rate and
// whether the night is stop-sold.
func (s *Hotels) Inventory(ctx context.Context, propertyID string, from, to time.Time) ([]RoomNight, error) {
	rows, err := s.pool.Query(ctx, `SELECT room_type, night, allotment, overbook_limit, held, sold, price, stop_sell
		FROM room_nights WHERE property_id = $1 AND night BETWEEN $2 AND $3 ORDER BY night, room_type`, propertyID, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (RoomNight, error) {
		rn := RoomNight{PropertyID: propertyID}
		err := row.Scan(&rn.RoomType, &rn.Night, &rn.Allotment, &rn.OverbookLimit, &rn.Held, &rn.Sold, &rn.Price, &rn.StopSell)
		return rn, err
	})
}

// Arrival is one paid stay whose guest arrives at a property on a date:
// the first of its nights there (a guest walked off the first night
// arrives a night later; one walked in arrives on the walked night).
type Arrival struct {
	BookingID    string
	Confirmation string
	// Guest is who booked: the booking's email, else its account.
	Guest        string
	RoomType     string
	RoomTypeName string
	Rooms        int
	Nights       int
	Checkin      time.Time
	Checkout     time.Time
	// WalkedFrom is the property a walked-in guest comes from.
	WalkedFrom string
}

// Arrivals lists the paid stays arriving at a property on date, by room
// type and booking.
func (s *Hotels) Arrivals(ctx context.Context, propertyID string, date time.Time) ([]Arrival, error) {
	rows, err := s.pool.Query(ctx, `
		WITH first AS (
			SELECT n.reservation_id, n.stay FROM reservation_nights n
			JOIN reservations r ON r.id = n.reservation_id AND r.status = 'PAID'
			WHERE n.property_id = $1 AND n.night = $2 AND n.live
			  AND NOT EXISTS (SELECT 1 FROM reservation_nights b WHERE b.reservation_id = n.reservation_id
			                  AND b.stay = n.stay AND b.property_id = n.property_id AND b.night = $2 - 1 AND b.live))
		SELECT r.id::text, coalesce(v.confirmation, ''), coalesce(nullif(r.fan_email, ''), r.user_id),
		       n.room_type, coalesce(rt.name, n.room_type), max(n.rooms)::int, count(*)::int, max(n.night),
		       coalesce((SELECT w.from_property FROM walks w WHERE w.reservation_id = r.id AND w.to_property = $1), '')
		FROM first f
		JOIN reservations r ON r.id = f.reservation_id
		JOIN reservation_nights n ON n.reservation_id = f.reservation_id AND n.stay = f.stay AND n.property_id = $1
		     AND n.live AND n.night >= $2
		LEFT JOIN room_types rt ON rt.property_id = $1 AND rt.id = n.room_type
		LEFT JOIN vouchers v ON v.reservation_id = r.id AND v.stay = f.stay AND v.status = 'VALID'
		GROUP BY r.id, f.stay, v.confirmation, n.room_type, rt.name
		ORDER BY n.room_type, r.id`, propertyID, date)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Arrival, error) {
		a := Arrival{Checkin: date}
		var last time.Time
		err := row.Scan(&a.BookingID, &a.Confirmation, &a.Guest, &a.RoomType, &a.RoomTypeName, &a.Rooms, &a.Nights, &last, &a.WalkedFrom)
		a.Checkout = last.AddDate(0, 0, 1)
		return a, err
	})
}

// PreviewWalk is what WalkBookings would do now: the walks it would record
// (with those already made), computed by running its very transaction and
// rolling it back, so the preview is the walk's own choice of bookings and
// destinations, not a second guess. Nothing is changed; the walk itself may
// still choose otherwise if bookings or rooms change in between.
func (s *Hotels) PreviewWalk(ctx context.Context, propertyID string, night time.Time, count, compensationNights int) ([]Walk, error) {
	var out []Walk
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, err = walkTx(ctx, tx, propertyID, night, count, compensationNights); err != nil {
			return err
		}
		return errPreviewDone
	})
	if errors.Is(err, errPreviewDone) {
		return out, nil
	}
	if transient(err) {
		return nil, ErrBusy
	}
	return nil, err
}

// errPreviewDone rolls a preview's transaction back.
var errPreviewDone = errors.New("store: preview rolled back")

// PropertyNotice is one thing to tell a property about one booking, with
// what its email says: the property, the guest, the booking's stays there
// (as they stand), and for a walk the night and the other property.
type PropertyNotice struct {
	ID            int64
	Kind          vocab.PropertyNoticeKind
	Night         time.Time // WALKED and CHANGED
	PropertyID    string
	PropertyName  string
	ContactEmail  string
	Timezone      string
	ReservationID string
	Guest         string
	Status        string
	Stays         []NoticeStay
	// OtherProperty is where a walked guest went (WALKED) or came from
	// (CHANGED); empty when the guest could not be relocated.
	OtherProperty string
}

// NoticeStay is one stay of the booking at the property.
type NoticeStay struct {
	RoomType, RoomTypeName string
	Rooms                  int
	Checkin, Checkout      time.Time
	Nights                 int
	Confirmation           string
	Total                  money.Money
}

// UnsentPropertyNotices lists up to limit notices not yet emailed, oldest
// first.
func (s *Hotels) UnsentPropertyNotices(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM property_notices WHERE sent_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// PropertyNotice reads one notice with what its email says. The stays are
// every night the booking bought at the property (live or not: a
// cancellation names what was cancelled).
func (s *Hotels) PropertyNotice(ctx context.Context, id int64) (PropertyNotice, error) {
	var pn PropertyNotice
	var night *time.Time
	err := s.pool.QueryRow(ctx, `SELECT n.id, n.kind, n.night, n.property_id, p.name, p.contact_email, p.timezone,
		n.reservation_id::text, coalesce(nullif(r.fan_email, ''), r.user_id), r.status,
		coalesce(CASE n.kind WHEN 'WALKED' THEN (SELECT w.to_property FROM walks w WHERE w.reservation_id = n.reservation_id)
		                     WHEN 'CHANGED' THEN (SELECT w.from_property FROM walks w WHERE w.reservation_id = n.reservation_id) END, '')
		FROM property_notices n JOIN properties p ON p.id = n.property_id JOIN reservations r ON r.id = n.reservation_id
		WHERE n.id = $1`, id).Scan(&pn.ID, &pn.Kind, &night, &pn.PropertyID, &pn.PropertyName, &pn.ContactEmail, &pn.Timezone,
		&pn.ReservationID, &pn.Guest, &pn.Status, &pn.OtherProperty)
	if err = orNotFound(err); err != nil {
		return PropertyNotice{}, err
	}
	if night != nil {
		pn.Night = *night
	}
	rows, err := s.pool.Query(ctx, `SELECT n.room_type, coalesce(rt.name, n.room_type), max(n.rooms)::int, min(n.night), max(n.night),
		count(DISTINCT n.night)::int, coalesce(v.confirmation, ''), coalesce(sum(n.price * n.rooms) FILTER (WHERE n.live OR $3), 0)::bigint,
		max(n.currency)
		FROM reservation_nights n
		LEFT JOIN room_types rt ON rt.property_id = n.property_id AND rt.id = n.room_type
		LEFT JOIN vouchers v ON v.reservation_id = n.reservation_id AND v.stay = n.stay
		WHERE n.reservation_id = $1::uuid AND n.property_id = $2 AND (n.live OR $3)
		GROUP BY n.stay, n.room_type, rt.name, v.confirmation ORDER BY n.stay`, pn.ReservationID, pn.PropertyID,
		pn.Kind == vocab.NoticeCancelled || pn.Kind == vocab.NoticeWalked)
	if err != nil {
		return PropertyNotice{}, err
	}
	var st NoticeStay
	var first, last time.Time
	if _, err := pgx.ForEachRow(rows, []any{&st.RoomType, &st.RoomTypeName, &st.Rooms, &first, &last, &st.Nights,
		&st.Confirmation, &st.Total.Amount, &st.Total.Currency}, func() error {
		st.Checkin, st.Checkout = first, last.AddDate(0, 0, 1)
		pn.Stays = append(pn.Stays, st)
		return nil
	}); err != nil {
		return PropertyNotice{}, err
	}
	return pn, nil
}

// MarkPropertyNoticeSent records that the notice's email is queued.
func (s *Hotels) MarkPropertyNoticeSent(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE property_notices SET sent_at = coalesce(sent_at, now()) WHERE id = $1`, id)
	return err
}

// queueNotices queues a notice of kind to every property where the
// reservation has a live night, in the transaction that made the change:
// the sale (BOOKED) and the cancellation of a paid booking (CANCELLED). It
// runs before the nights are given back, while they are live.
func queueNotices(b *pgx.Batch, id uuid.UUID, kind vocab.PropertyNoticeKind) {
	b.Queue(`INSERT INTO property_notices (property_id, reservation_id, kind)
		SELECT DISTINCT property_id, reservation_id, $2 FROM reservation_nights WHERE reservation_id = $1 AND live
		ON CONFLICT ON CONSTRAINT property_notices_once DO NOTHING`, id, kind)
}

// WalkedOff is the bookings already walked off a property's night.
func (s *Hotels) WalkedOff(ctx context.Context, propertyID string, night time.Time) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT reservation_id::text FROM walks WHERE from_property = $1 AND night = $2`, propertyID, night)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}
