package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// PageCursor is the position after the last row of a fan's list page:
// newest first by (created, id). The zero value is the first page.
type PageCursor struct {
	At time.Time
	ID string
}

// String encodes the cursor for a URL: "<unix microseconds>_<id>".
func (c PageCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "_" + c.ID
}

// ParsePageCursor decodes String's form; ok is false for anything else.
func ParsePageCursor(s string) (PageCursor, bool) {
	us, id, found := strings.Cut(s, "_")
	n, err := strconv.ParseInt(us, 10, 64)
	if !found || err != nil || id == "" || len(id) > 100 {
		return PageCursor{}, false
	}
	return PageCursor{At: time.UnixMicro(n), ID: id}, true
}

// cutPage cuts rows, read with one more than limit, to a page; next is the
// cursor after its last row, nil when no row was left over (the last page).
func cutPage[T any](rows []T, limit int, cursor func(last T) PageCursor) (page []T, next *PageCursor) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	c := cursor(rows[limit-1])
	return rows, &c
}

// TicketsOfUser lists a fan's tickets, newest first, after the cursor; next
// is the cursor of the following page, nil on the last.
func (s *Tickets) TicketsOfUser(ctx context.Context, userID string, after *PageCursor, limit int) ([]Ticket, *PageCursor, error) {
	var at *time.Time
	var id *string
	if after != nil {
		at, id = &after.At, &after.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+listedTicketColumns+` FROM tickets t JOIN reservations r ON r.id = t.reservation_id
		JOIN sections sec ON sec.id = t.section_id LEFT JOIN seats st ON st.id = t.seat_id
		JOIN events e ON e.id = t.event_id JOIN venues v ON v.id = e.venue_id
		WHERE t.user_id = $1 AND ($2::timestamptz IS NULL OR (t.issued_at, t.id) < ($2, $3::text))
		ORDER BY t.issued_at DESC, t.id DESC LIMIT $4`, userID, at, id, limit+1)
	if err != nil {
		return nil, nil, err
	}
	got, err := pgx.CollectRows(rows, scanListedTicket)
	if err != nil {
		return nil, nil, err
	}
	got, next := cutPage(got, limit, func(last Ticket) PageCursor { return PageCursor{At: last.IssuedAt, ID: last.ID} })
	return got, next, nil
}

// BookingViewsOfUser lists a page of a fan's bookings (reservations), each
// as Booking reads it, newest first, after the cursor; next is the cursor
// of the following page, nil on the last. It costs the same five queries
// whatever the page's size (bookingViews).
func (s *Bookings) BookingViewsOfUser(ctx context.Context, userID string, after *PageCursor, limit int) ([]BookingView, *PageCursor, error) {
	var at *time.Time
	var id *uuid.UUID
	if after != nil {
		u, err := uuid.Parse(after.ID)
		if err != nil {
			return nil, nil, nil // a cursor no page produced: nothing follows it
		}
		at, id = &after.At, &u
	}
	views, err := s.bookingViews(ctx, `r.user_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3::uuid))
		ORDER BY r.created_at DESC, r.id DESC LIMIT $4`, userID, at, id, limit+1)
	if err != nil {
		return nil, nil, err
	}
	views, next := cutPage(views, limit, func(last BookingView) PageCursor {
		return PageCursor{At: last.Hold.CreatedAt, ID: last.Hold.ID.String()}
	})
	return views, next, nil
}

// bookingViews reads the bookings the condition (a WHERE clause over
// reservations r, with its ORDER BY and LIMIT) selects, in its order, with
// everything a BookingView shows: the reservation with its payment in one
// query, then its items, stay nights, tickets, vouchers and disputes in one
// query each for every booking at once. A page of a hundred bookings costs
// six queries, as one booking does; reading them one by one cost six each.
//
// The queries share one snapshot (a read-only repeatable-read transaction):
// read one by one, a dispute lost between the tickets' query and the
// disputes' showed a CHARGED_BACK booking with its tickets still VALID,
// though one transaction revokes them as it records the loss.
func (s *Bookings) bookingViews(ctx context.Context, where string, args ...any) ([]BookingView, error) {
	var views []BookingView
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		views, err = bookingViewsIn(ctx, tx, where, args...)
		return err
	})
	return views, err
}

// rowsQuerier runs a query that returns rows: the pool or a transaction.
type rowsQuerier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// bookingViewsIn reads the views the condition selects through q: the
// reservations first, then each part for all of them at once.
func bookingViewsIn(ctx context.Context, q rowsQuerier, where string, args ...any) ([]BookingView, error) {
	r := newViewRead()
	rows, err := q.Query(ctx, viewMainSQL+where, args...)
	if err != nil {
		return nil, err
	}
	if err := r.scanMain(rows); err != nil || len(r.views) == 0 {
		return r.views, err
	}
	ids := make([]uuid.UUID, len(r.views))
	for i := range r.views {
		ids[i] = r.views[i].Hold.ID
	}
	for _, p := range r.parts() {
		if err := eachRow(ctx, q, p.scan, p.sql, ids); err != nil {
			return nil, err
		}
	}
	return r.views, nil
}

// bookingView reads one booking, and, when info is not nil, the saga's
// terms of it (LoadBooking's) into *info, in one round trip: BEGIN of a
// read-only repeatable-read transaction, every query and the COMMIT are
// pipelined (readInSnapshot), so they share one snapshot as bookingViews'
// do, where the transaction cost a round trip for each query besides its
// BEGIN and COMMIT. A fan's page watching its booking reads it on every
// change. found is false for a missing booking.
func (s *Bookings) bookingView(ctx context.Context, id uuid.UUID, info *BookingInfo) (v BookingView, found bool, err error) {
	r := newViewRead()
	b := &pgx.Batch{}
	b.Queue(viewMainSQL+`r.id = $1`, id).Query(r.scanMain)
	ids := []uuid.UUID{id}
	for _, p := range r.parts() {
		sql, arg := p.sql, any(ids)
		if p.one != "" {
			sql, arg = p.one, id
		}
		b.Queue(sql, arg).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				if err := p.scan(rows); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	}
	if info != nil {
		var loaded bool // the view's own rows say whether it exists
		queueLoadBooking(b, id, info, &loaded)
	}
	if err := readInSnapshot(ctx, s.pool, b); err != nil {
		return BookingView{}, false, err
	}
	if len(r.views) == 0 {
		return BookingView{}, false, nil
	}
	return r.views[0], true, nil
}

// readInSnapshot runs b's queries in one read-only repeatable-read
// transaction, sent with its BEGIN and COMMIT in one round trip, on their
// generic plans (genericPlansSQL, for this transaction alone): its readers
// (a booking's page, a hold's pre-check, a refusal's alternatives) look
// rows up by key, and left to choose PostgreSQL planned them afresh again
// and again (a booking's page parts on every read: a millisecond of
// planning against a tenth of one executing). A query that fails leaves the
// transaction aborted (the server skips the rest of the pipeline, the
// COMMIT too): it is rolled back, so the connection goes back to the pool
// idle instead of being closed.
func readInSnapshot(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	full := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+3)}
	full.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	full.Queue(genericPlansSQL)
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	full.Queue(`COMMIT`)
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	err = c.SendBatch(ctx, full).Close()
	if pc := c.Conn().PgConn(); err != nil && !pc.IsClosed() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = c.Exec(rctx, `ROLLBACK`)
	}
	return err
}

// viewMainSQL reads the reservations of booking views, with their payment
// and event, for the WHERE clause appended to it.
const viewMainSQL = `SELECT r.id, r.user_id, coalesce(r.event_id, ''), r.status, r.created_at, r.expires_at,
		r.ended_at, r.total, r.currency, coalesce(r.promo_code, ''), r.status = 'PENDING_PAYMENT' AND r.expires_at <= now(),
		r.fees, r.tax, r.tax_rate_bp,
		coalesce(p.status, ''), coalesce(p.intent_id, ''), coalesce(p.flagged, ''),
		coalesce(e.title, ''), e.starts_at, coalesce(v.timezone, ''), coalesce(v.name, ''), coalesce(v.city, '')
		FROM reservations r LEFT JOIN payments p ON p.reservation_id = r.id
		LEFT JOIN events e ON e.id = r.event_id LEFT JOIN venues v ON v.id = e.venue_id WHERE `

// viewRead is one read of booking views: the reservations' rows make the
// views, and each part's rows, ordered by reservation and then as the
// single booking's reads always were, append to their own view.
type viewRead struct {
	views    []BookingView
	at       map[uuid.UUID]*BookingView
	lastStay map[uuid.UUID]int
}

func newViewRead() *viewRead {
	return &viewRead{at: map[uuid.UUID]*BookingView{}, lastStay: map[uuid.UUID]int{}}
}

// viewPart is a query over the views' reservation IDs ($1) and what each of
// its rows adds to its view. one is the same query for one booking's ID
// ($1 a UUID, not an array) when the part has such a form, "" if not: an
// equality on the booking's key has a generic plan through its index
// whatever the table's statistics, where "= ANY($1)" planned for an array
// of unknown length may scan the table.
type viewPart struct {
	sql, one string
	scan     func(pgx.Rows) error
}

// oneBooking is sql, a part over an array of reservation IDs, for one
// booking's ID: "" when the part reads its IDs otherwise (unnest).
func oneBooking(sql string) string {
	if !strings.Contains(sql, "= ANY($1)") {
		return ""
	}
	return strings.Replace(sql, "= ANY($1)", "= $1", 1)
}

// viewPartSQL are the parts' queries, in the order parts lists them;
// viewPartOneSQL their forms for one booking (oneBooking).
var (
	viewPartSQL = [...]string{
		`SELECT i.reservation_id, coalesce(i.seat_id, ''), i.section_id, i.quantity, i.price_at_lock, i.base_price, i.surge_bps, i.discount,
			coalesce(sec.name, ''), coalesce(st.row_label, ''), coalesce(st.number, 0),
			coalesce(i.ticket_type, ''), i.fee, coalesce(i.listing_id::text, '')
		FROM reservation_items i LEFT JOIN sections sec ON sec.id = i.section_id LEFT JOIN seats st ON st.id = i.seat_id
		WHERE i.reservation_id = ANY($1) ORDER BY i.reservation_id, i.seat_id COLLATE "C", i.id`,
		`SELECT reservation_id, stay, property_id, room_type, checkin, checkout, rooms, night, price, currency
		FROM reservation_nights WHERE reservation_id = ANY($1) ORDER BY reservation_id, stay, night, live`,
		`SELECT t.reservation_id, t.id, coalesce(t.seat_id, ''), t.status, sec.name, coalesce(st.row_label, ''), coalesce(st.number, 0)
		FROM tickets t JOIN sections sec ON sec.id = t.section_id LEFT JOIN seats st ON st.id = t.seat_id
		WHERE t.reservation_id = ANY($1) ORDER BY t.reservation_id, t.seat_id, t.unit`,
		`SELECT reservation_id, id, property_id, room_type, checkin, checkout, confirmation, status
		FROM vouchers WHERE reservation_id = ANY($1) ORDER BY reservation_id, stay`,
		disputesSQL,
	}
	viewPartOneSQL = func() (one [len(viewPartSQL)]string) {
		for i, sql := range viewPartSQL {
			one[i] = oneBooking(sql)
		}
		return one
	}()
)

func (r *viewRead) parts() []viewPart {
	scans := [len(viewPartSQL)]func(pgx.Rows) error{r.scanItem, r.scanNight, r.scanTicket, r.scanVoucher,
		func(rows pgx.Rows) error { return scanViewDispute(r.at, rows) }}
	parts := make([]viewPart, len(viewPartSQL))
	for i := range parts {
		parts[i] = viewPart{sql: viewPartSQL[i], one: viewPartOneSQL[i], scan: scans[i]}
	}
	return parts
}

// scanMain makes a view of each reservation row.
func (r *viewRead) scanMain(rows pgx.Rows) error {
	views, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (BookingView, error) {
		var v BookingView
		h := &v.Hold
		var status, payment string
		var expired bool
		var startsAt *time.Time
		ev := &v.Event
		err := row.Scan(&h.ID, &h.UserID, &h.EventID, &status, &h.CreatedAt, &h.ExpiresAt, &h.EndedAt, &h.Total.Amount,
			&h.Total.Currency, &h.PromoCode, &expired, &h.Fees, &h.Tax, &h.TaxRateBp, &payment, &v.IntentID, &v.Flagged,
			&ev.Title, &startsAt, &ev.Timezone, &ev.VenueName, &ev.VenueCity)
		if startsAt != nil {
			ev.ID, ev.StartsAt = h.EventID, *startsAt
		}
		// A pending hold past its expiry reads as EXPIRED before the sweeper
		// ends it (lazy expiry), as GetHold reads it.
		h.Status = vocab.ReservationStatus(status)
		if expired {
			h.Status = vocab.ReservationExpired
		}
		v.PaymentStatus = vocab.PaymentStatus(payment)
		v.Vouchers = []Voucher{}
		return v, err
	})
	if err != nil {
		return err
	}
	r.views = views
	for i := range r.views {
		r.at[r.views[i].Hold.ID] = &r.views[i]
	}
	return nil
}

func (r *viewRead) scanItem(rows pgx.Rows) error {
	var rid uuid.UUID
	var it Item
	if err := rows.Scan(&rid, &it.SeatID, &it.SectionID, &it.Quantity, &it.Price.Amount, &it.Base, &it.SurgeBps, &it.Discount,
		&it.Place.Section, &it.Place.Row, &it.Place.Number, &it.TicketType, &it.Fee, &it.ListingID); err != nil {
		return err
	}
	v := r.at[rid]
	it.Price.Currency = v.Hold.Total.Currency
	v.Hold.Items = append(v.Hold.Items, it)
	return nil
}

func (r *viewRead) scanNight(rows pgx.Rows) error {
	var rid uuid.UUID
	var idx, rooms int
	var prop, rt, cur string
	var in, out, night time.Time
	var price int64
	if err := rows.Scan(&rid, &idx, &prop, &rt, &in, &out, &rooms, &night, &price, &cur); err != nil {
		return err
	}
	v := r.at[rid]
	stays := &v.Hold.Stays
	if last, ok := r.lastStay[v.Hold.ID]; !ok || last != idx {
		*stays = append(*stays, Stay{PropertyID: prop, RoomType: rt, Checkin: in, Checkout: out, Rooms: rooms,
			Total: money.Money{Currency: cur}})
		r.lastStay[v.Hold.ID] = idx
	}
	st := &(*stays)[len(*stays)-1]
	if n := len(st.Nights); n > 0 && st.Nights[n-1].Night.Equal(night) {
		return nil // a walked night: the original (not live, first) is what the guest paid
	}
	st.Nights = append(st.Nights, StayNight{Night: night, Price: money.Money{Amount: price, Currency: cur}})
	st.Total.Amount += price * int64(rooms)
	return nil
}

func (r *viewRead) scanTicket(rows pgx.Rows) error {
	var rid uuid.UUID
	var t TicketRef
	if err := rows.Scan(&rid, &t.ID, &t.SeatID, &t.Status, &t.Place.Section, &t.Place.Row, &t.Place.Number); err != nil {
		return err
	}
	v := r.at[rid]
	v.Tickets = append(v.Tickets, t)
	return nil
}

func (r *viewRead) scanVoucher(rows pgx.Rows) error {
	var rid uuid.UUID
	var vc Voucher
	if err := rows.Scan(&rid, &vc.ID, &vc.PropertyID, &vc.RoomType, &vc.Checkin, &vc.Checkout, &vc.Confirmation, &vc.Status); err != nil {
		return err
	}
	v := r.at[rid]
	v.Vouchers = append(v.Vouchers, vc)
	return nil
}

// eachRow runs one query and hands each of its rows to scan.
func eachRow(ctx context.Context, q rowsQuerier, scan func(pgx.Rows) error, sql string, args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
