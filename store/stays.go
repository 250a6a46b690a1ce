package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// StayHoldTTL is how long a hotel-only hold lives. A package (seats and
// stays) keeps the shorter of the event's hold TTL and this.
const StayHoldTTL = 15 * time.Minute

// MaxStayNights bounds one stay.
const MaxStayNights = 30

// DefaultMaxUnpaidRoomNights is how many unpaid room-nights (rooms times
// nights, over every pending hold, hotel-only or package) one account may
// hold at once when HoldRequest.MaxUnpaidRoomNights is not set: enough for a
// family's long weekend, too few for a handful of accounts to hoard a
// night's rooms (ENCORE_MAX_UNPAID_ROOM_NIGHTS).
const DefaultMaxUnpaidRoomNights = 8

// StayRequest is one stay of a hold: Rooms rooms of one room type for every
// night from Checkin up to, not including, Checkout (dates at UTC midnight).
type StayRequest struct {
	PropertyID string
	RoomType   string
	Checkin    time.Time
	Checkout   time.Time
	Rooms      int
}

// Nights is the number of nights of the stay.
func (r StayRequest) Nights() int { return int(r.Checkout.Sub(r.Checkin).Hours()+12) / 24 }

// Stay is one stay of a hold as taken, its nights' prices frozen.
type Stay struct {
	PropertyID string
	RoomType   string
	Checkin    time.Time
	Checkout   time.Time
	Rooms      int
	Nights     []StayNight
	// Total is every night's price times the rooms.
	Total money.Money
}

// StayNight is one night of a stay and its frozen price per room.
type StayNight struct {
	Night time.Time
	Price money.Money
}

// Voucher is a paid stay: what the guest shows at the desk.
type Voucher struct {
	ID           string    `json:"id"`
	PropertyID   string    `json:"property_id"`
	RoomType     string    `json:"room_type"`
	Checkin      time.Time `json:"-"`
	Checkout     time.Time `json:"-"`
	Confirmation string    `json:"confirmation"`
	Status       string    `json:"status"` // VALID or VOID
}

// RoomUnavailableError names the first night of a stay without a room left
// (or not on sale at all).
type RoomUnavailableError struct {
	PropertyID string
	RoomType   string
	Night      time.Time
	Detail     string
}

func (e *RoomUnavailableError) Error() string { return "store: room unavailable: " + e.Detail }

// StayLimitError says a hold would take the fan past the most unpaid
// room-nights one account may hold at once: Held are the room-nights of the
// fan's live pending holds, Requested this hold's.
type StayLimitError struct{ Limit, Held, Requested int }

func (e *StayLimitError) Error() string {
	return fmt.Sprintf("store: unpaid room-night limit %d: holds %d, asked %d", e.Limit, e.Held, e.Requested)
}

// StayHeldError says the fan already has an unpaid hold (HoldID) at the
// property of the hold's Stay-th stay on one of its nights. A fan holds a
// property's night once: more rooms go in one hold, not in a second one.
type StayHeldError struct {
	HoldID     uuid.UUID
	Stay       int
	PropertyID string
}

func (e *StayHeldError) Error() string {
	return fmt.Sprintf("store: stay at %s already held unpaid by hold %s", e.PropertyID, e.HoldID)
}

// CreateStayHold places a hotel-only hold: every night of every stay or
// nothing, in one transaction, under the same idempotency key machinery as
// CreateHold (a stored response is returned instead of a hold, nothing
// executed). The hold has no event and lives StayHoldTTL.
func (s *Hotels) CreateStayHold(ctx context.Context, req HoldRequest) (Hold, *StoredResponse, error) {
	return retryLazyExpiry(func() (Hold, *StoredResponse, error) { return s.createStayHold(ctx, req) })
}

func (s *Hotels) createStayHold(ctx context.Context, req HoldRequest) (Hold, *StoredResponse, error) {
	var (
		hold   Hold
		stored *StoredResponse
	)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		stored = nil
		if req.IdempotencyKey != "" {
			b := &pgx.Batch{}
			queueClaimKey(b, req, &stored)
			err := tx.SendBatch(ctx, b).Close()
			if errors.Is(err, errReplay) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		currency, err := stayTerms(ctx, tx, req.Stays)
		if err != nil {
			return err
		}
		// The account's row (written here on first sight) is locked by the
		// limits until commit.
		if err := checkStayLimits(ctx, tx, req); err != nil {
			return err
		}
		hold = Hold{ID: req.ReservationID, UserID: req.UserID, Status: vocab.ReservationPending}
		b := &pgx.Batch{}
		var email *string
		if req.FanEmail != "" {
			email = &req.FanEmail
		}
		b.Queue(`INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency, fan_email)
			VALUES ($1, $2, NULL, 'PENDING_PAYMENT', now() + make_interval(secs => $3), 0, $4, $5)
			RETURNING created_at, expires_at`, req.ReservationID, req.UserID, StayHoldTTL.Seconds(), currency, email).
			QueryRow(func(row pgx.Row) error {
				err := row.Scan(&hold.CreatedAt, &hold.ExpiresAt)
				if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "reservations_pkey" {
					return ErrReservationIDTaken
				}
				return err
			})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if hold.Stays, hold.Total, err = takeStays(ctx, tx, req.ReservationID, req.Stays, currency); err != nil {
			return err
		}
		b = &pgx.Batch{}
		b.Queue(`UPDATE reservations SET total = $2 WHERE id = $1`, req.ReservationID, hold.Total.Amount)
		if err := queueKeyRecord(b, req, hold); err != nil {
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil || stored != nil {
		return Hold{}, stored, err
	}
	return hold, nil, nil
}

// takePackageStays adds the cart's stays to a hold that has just taken its
// seats, in the same transaction: the stays' currency must be the event's,
// the total grows by theirs, and the hold keeps the shorter of its TTL and
// StayHoldTTL.
func takePackageStays(ctx context.Context, tx pgx.Tx, req HoldRequest, hold *Hold, ev eventTerms) error {
	currency, err := stayTerms(ctx, tx, req.Stays)
	if err != nil {
		return err
	}
	if err := checkStayLimits(ctx, tx, req); err != nil {
		return err
	}
	if currency != ev.currency {
		return &InvalidError{Field: "stays", Message: fmt.Sprintf("the hotel charges %s and the event %s; book them apart", currency, ev.currency)}
	}
	stays, total, err := takeStays(ctx, tx, req.ReservationID, req.Stays, currency)
	if err != nil {
		return err
	}
	hold.Stays = stays
	return tx.QueryRow(ctx, `UPDATE reservations SET total = total + $2,
			expires_at = least(expires_at, created_at + make_interval(secs => $3))
		WHERE id = $1 RETURNING total, expires_at`, req.ReservationID, total.Amount, StayHoldTTL.Seconds()).
		Scan(&hold.Total.Amount, &hold.ExpiresAt)
}

// The account's live pending holds other than this one (a package's
// reservation is already written), read from the account's reservations
// (fansReservations, by the account's index alone) as a seat hold's lookups
// are: a lookup naming the status and expiry could be planned through the
// index of every pending hold. $1 is the account, $2 this hold.
const (
	fansNights        = `FROM mine r JOIN reservation_nights n ON n.reservation_id = r.id AND n.live `
	fansPendingOthers = ` WHERE r.id <> $2 AND r.status = 'PENDING_PAYMENT' AND r.expires_at > now()`
	// unpaidNightsSQL counts the account's unpaid room-nights.
	unpaidNightsSQL = `WITH ` + fansReservations + ` SELECT coalesce(sum(n.rooms), 0)::int ` + fansNights + fansPendingOthers
)

// checkStayLimits refuses stays that would let one account hoard rooms: a
// stay at a property on a night the account already holds there unpaid
// (StayHeldError, naming that hold), and a hold that would take the
// account's unpaid room-nights, over every live pending hold, past
// req.MaxUnpaidRoomNights (StayLimitError). Paid stays count for nothing:
// the limit is on rooms kept from other guests without paying.
//
// It first locks the account's row (FOR NO KEY UPDATE, which a
// reservation's foreign key check does not wait on) until the transaction
// ends, so every hold with stays of one account, on any process, counts
// after the one before it has committed or rolled back: parallel holds can
// never add up past the limit. Seat-only holds never take the lock.
func checkStayLimits(ctx context.Context, tx pgx.Tx, req HoldRequest) error {
	limit := req.MaxUnpaidRoomNights
	if limit <= 0 {
		limit = DefaultMaxUnpaidRoomNights
	}
	want := 0
	props := make([]string, len(req.Stays))
	checkins := make([]time.Time, len(req.Stays))
	checkouts := make([]time.Time, len(req.Stays))
	for i, st := range req.Stays {
		want += st.Rooms * st.Nights()
		props[i], checkins[i], checkouts[i] = st.PropertyID, st.Checkin, st.Checkout
	}
	var held int
	var overlap *StayHeldError
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, req.UserID)
	b.Queue(`SELECT FROM users WHERE id = $1 FOR NO KEY UPDATE`, req.UserID)
	b.Queue(`WITH `+fansReservations+` SELECT (s.i - 1)::int, r.id `+fansNights+`
		JOIN unnest($3::text[], $4::date[], $5::date[]) WITH ORDINALITY AS s(property_id, checkin, checkout, i)
		  ON n.property_id = s.property_id AND n.night >= s.checkin AND n.night < s.checkout`+fansPendingOthers+`
		ORDER BY s.i, r.created_at, r.id LIMIT 1`, req.UserID, req.ReservationID, props, checkins, checkouts).
		QueryRow(func(row pgx.Row) error {
			var o StayHeldError
			err := row.Scan(&o.Stay, &o.HoldID)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			o.PropertyID = req.Stays[o.Stay].PropertyID
			overlap = &o
			return err
		})
	b.Queue(unpaidNightsSQL, req.UserID, req.ReservationID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&held) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if overlap != nil {
		return overlap
	}
	if held+want > limit {
		return &StayLimitError{Limit: limit, Held: held, Requested: want}
	}
	return nil
}

// stayTerms checks every stay against its property's rules (the room type
// exists, the minimum stay) and returns the one currency they share.
func stayTerms(ctx context.Context, tx pgx.Tx, stays []StayRequest) (string, error) {
	currency := ""
	for i, st := range stays {
		var cur string
		var minStay int
		err := tx.QueryRow(ctx, `SELECT p.currency, p.min_stay FROM properties p
			JOIN room_types rt ON rt.property_id = p.id WHERE p.id = $1 AND rt.id = $2`, st.PropertyID, st.RoomType).
			Scan(&cur, &minStay)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", &InvalidError{Field: fmt.Sprintf("stays[%d].room_type", i), Message: "no such property and room type"}
		}
		if err != nil {
			return "", err
		}
		if st.Nights() < minStay {
			return "", &InvalidError{Field: fmt.Sprintf("stays[%d].checkout", i),
				Message: fmt.Sprintf("%s sells stays of at least %d nights", st.PropertyID, minStay)}
		}
		if currency != "" && cur != currency {
			return "", &InvalidError{Field: "stays", Message: "every stay of one hold must be in one currency"}
		}
		currency = cur
	}
	return currency, nil
}

// takeStaySQL takes rooms on every night of a stay that has room and is
// not stop-sold: the predicate is the counted-inventory rule (held + sold +
// rooms <= allotment + overbook_limit). The caller compares the rows
// returned with the nights.
const takeStaySQL = `UPDATE room_nights SET held = held + $5
	WHERE property_id = $1 AND room_type = $2 AND night >= $3 AND night < $4
	  AND held + sold + $5 <= allotment + overbook_limit AND NOT stop_sell
	RETURNING night, price`

type takenNight struct {
	night time.Time
	price int64
}

func collectNights(rows pgx.Rows) ([]takenNight, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (takenNight, error) {
		var n takenNight
		err := row.Scan(&n.night, &n.price)
		return n, err
	})
}

// takeStays takes every night of every stay for reservation id, or fails
// with the first night that has no room. Nights held by an expired hold are
// given back first (lazy expiry, as takeSeats does for seats). The nights
// are written with their frozen prices.
func takeStays(ctx context.Context, tx pgx.Tx, id uuid.UUID, stays []StayRequest, currency string) ([]Stay, money.Money, error) {
	total := money.Money{Currency: currency}
	out := make([]Stay, 0, len(stays))
	for i, st := range stays {
		nights, err := takeStay(ctx, tx, id, st)
		if err != nil {
			return nil, money.Money{}, err
		}
		slices.SortFunc(nights, func(a, b takenNight) int { return a.night.Compare(b.night) })
		stay := Stay{PropertyID: st.PropertyID, RoomType: st.RoomType, Checkin: st.Checkin, Checkout: st.Checkout,
			Rooms: st.Rooms, Total: money.Money{Currency: currency}}
		dates := make([]time.Time, len(nights))
		prices := make([]int64, len(nights))
		for j, n := range nights {
			line, err := money.MulInt(n.price, int64(st.Rooms))
			if err != nil {
				return nil, money.Money{}, err
			}
			if stay.Total.Amount, err = money.AddInt(stay.Total.Amount, line); err != nil {
				return nil, money.Money{}, err
			}
			stay.Nights = append(stay.Nights, StayNight{Night: n.night, Price: money.Money{Amount: n.price, Currency: currency}})
			dates[j], prices[j] = n.night, n.price
		}
		if total.Amount, err = money.AddInt(total.Amount, stay.Total.Amount); err != nil {
			return nil, money.Money{}, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reservation_nights
			(reservation_id, stay, property_id, room_type, night, checkin, checkout, rooms, price, currency)
			SELECT $1, $2, $3, $4, n, $6, $7, $8, p, $9 FROM unnest($5::date[], $10::bigint[]) AS u(n, p)`,
			id, i, st.PropertyID, st.RoomType, dates, st.Checkin, st.Checkout, st.Rooms, currency, prices); err != nil {
			return nil, money.Money{}, err
		}
		out = append(out, stay)
	}
	return out, total, nil
}

// takeStay runs takeStaySQL for one stay; when a night did not move and an
// expired hold holds rooms on it, that hold is ended and the take runs once
// more.
func takeStay(ctx context.Context, tx pgx.Tx, id uuid.UUID, st StayRequest) ([]takenNight, error) {
	want := st.Nights()
	for round := 0; ; round++ {
		rows, err := tx.Query(ctx, takeStaySQL, st.PropertyID, st.RoomType, st.Checkin, st.Checkout, st.Rooms)
		if err != nil {
			return nil, err
		}
		nights, err := collectNights(rows)
		if err != nil {
			return nil, err
		}
		if len(nights) == want {
			return nights, nil
		}
		// Undo the partial take before deciding, so a retry sees the stay
		// whole and a refusal leaves the counters as they were.
		if len(nights) > 0 {
			dates := make([]time.Time, len(nights))
			for i, n := range nights {
				dates[i] = n.night
			}
			if _, err := tx.Exec(ctx, `UPDATE room_nights SET held = held - $4
				WHERE property_id = $1 AND room_type = $2 AND night = ANY($3)`, st.PropertyID, st.RoomType, dates, st.Rooms); err != nil {
				return nil, err
			}
		}
		if round > 0 {
			return nil, roomUnavailable(ctx, tx, st, nights)
		}
		stale, err := queryIDs(ctx, tx, `SELECT DISTINCT r.id FROM reservation_nights n JOIN reservations r ON r.id = n.reservation_id
			WHERE n.property_id = $1 AND n.room_type = $2 AND n.night >= $3 AND n.night < $4 AND n.live
			  AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now() AND r.id <> $5
			ORDER BY r.id`, st.PropertyID, st.RoomType, st.Checkin, st.Checkout, id)
		if err != nil {
			return nil, err
		}
		if len(stale) == 0 {
			return nil, roomUnavailable(ctx, tx, st, nights)
		}
		for _, sid := range stale {
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1 FOR UPDATE NOWAIT`, sid).Scan(&status)
			if code, _ := pgCode(err); code == pgLockNotAvailable {
				return nil, errRetryLazyExpiry
			}
			if err != nil {
				return nil, err
			}
			if status != string(vocab.ReservationPending) {
				continue
			}
			if _, err := endLocked(ctx, tx, sid, vocab.ReservationExpired); err != nil {
				return nil, err
			}
		}
	}
}

// roomUnavailable names the first night of st that was not taken.
func roomUnavailable(ctx context.Context, tx pgx.Tx, st StayRequest, taken []takenNight) error {
	got := map[time.Time]bool{}
	for _, n := range taken {
		got[n.night.UTC()] = true
	}
	night := st.Checkin
	for d := st.Checkin; d.Before(st.Checkout); d = d.AddDate(0, 0, 1) {
		if !got[d.UTC()] {
			night = d
			break
		}
	}
	var left int
	var stopped bool
	err := tx.QueryRow(ctx, `SELECT allotment + overbook_limit - held - sold, stop_sell FROM room_nights
		WHERE property_id = $1 AND room_type = $2 AND night = $3`, st.PropertyID, st.RoomType, night).Scan(&left, &stopped)
	detail := fmt.Sprintf("%s %s has %d rooms left on %s, %d asked", st.PropertyID, st.RoomType, max(left, 0), night.Format(time.DateOnly), st.Rooms)
	if stopped {
		detail = fmt.Sprintf("%s %s does not sell %s any more (stop-sell)", st.PropertyID, st.RoomType, night.Format(time.DateOnly))
	}
	if errors.Is(err, pgx.ErrNoRows) {
		detail = fmt.Sprintf("%s %s is not on sale on %s", st.PropertyID, st.RoomType, night.Format(time.DateOnly))
	} else if err != nil {
		return err
	}
	return &RoomUnavailableError{PropertyID: st.PropertyID, RoomType: st.RoomType, Night: night, Detail: detail}
}

// queueReleaseStays queues giving back a reservation's live nights: held
// rooms of a pending hold, sold rooms of a paid booking (paid true). It is
// part of endLocked, so every path that ends a hold (release, expiry, lazy
// expiry, the sweeper, a cancelled sale) gives the nights back.
func queueReleaseStays(b *pgx.Batch, id uuid.UUID, paid bool) {
	if paid {
		// The properties learn of the cancellation (their rooms are free
		// again), written while the nights are still live.
		queueNotices(b, id, vocab.NoticeCancelled)
	}
	b.Queue(`WITH gone AS (
			UPDATE reservation_nights SET live = false WHERE reservation_id = $1 AND live
			RETURNING property_id, room_type, night, rooms),
		per_night AS (SELECT property_id, room_type, night, sum(rooms)::int AS rooms FROM gone GROUP BY 1, 2, 3)
		UPDATE room_nights rn SET held = greatest(rn.held - CASE WHEN $2 THEN 0 ELSE p.rooms END, 0),
		                          sold = greatest(rn.sold - CASE WHEN $2 THEN p.rooms ELSE 0 END, 0)
		FROM per_night p
		WHERE rn.property_id = p.property_id AND rn.room_type = p.room_type AND rn.night = p.night`, id, paid)
	if paid {
		b.Queue(`UPDATE vouchers SET status = 'VOID' WHERE reservation_id = $1`, id)
	}
}

// ErrUnsellable says a hold's stays can no longer be sold: a night's held
// counter no longer covers the rooms the hold took (the row was changed
// underneath it). Nothing was sold; the saga gives the money back.
var ErrUnsellable = errors.New("store: the hold's nights are no longer held")

// staysSellable checks, inside ConfirmSale's transaction, that every live
// night of the hold is still counted as held. Only the hold's own ending
// lowers its held rooms, and the caller has its reservation row locked, so
// the answer stands until the sale's UPDATE; the CHECK (held >= 0) remains
// the backstop.
func staysSellable(ctx context.Context, tx pgx.Tx, id uuid.UUID) (bool, error) {
	var short int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM (
			SELECT property_id, room_type, night, sum(rooms)::int AS rooms FROM reservation_nights
			WHERE reservation_id = $1 AND live GROUP BY 1, 2, 3) p
		JOIN room_nights rn ON rn.property_id = p.property_id AND rn.room_type = p.room_type AND rn.night = p.night
		WHERE rn.held < p.rooms`, id).Scan(&short)
	return short == 0, err
}

// queueSellStays queues the nights of a hold becoming sold, one voucher
// per stay and a notice to each property, in ConfirmSale's transaction:
// every part of a package is sold with the seats, or none.
func queueSellStays(b *pgx.Batch, id uuid.UUID) {
	b.Queue(`WITH per_night AS (
			SELECT property_id, room_type, night, sum(rooms)::int AS rooms FROM reservation_nights
			WHERE reservation_id = $1 AND live GROUP BY 1, 2, 3)
		UPDATE room_nights rn SET held = rn.held - p.rooms, sold = rn.sold + p.rooms
		FROM per_night p
		WHERE rn.property_id = p.property_id AND rn.room_type = p.room_type AND rn.night = p.night`, id)
	b.Queue(`INSERT INTO vouchers (id, reservation_id, stay, property_id, room_type, checkin, checkout, confirmation)
		SELECT 'vch_' || replace($1::text, '-', '') || '_' || stay, $1, stay, property_id, room_type, checkin, checkout,
		       upper(substr(md5($1::text || ':' || stay), 1, 10))
		FROM (SELECT DISTINCT stay, property_id, room_type, checkin, checkout FROM reservation_nights
		      WHERE reservation_id = $1 AND live) s
		ON CONFLICT (reservation_id, stay) DO NOTHING`, id)
	queueNotices(b, id, vocab.NoticeBooked)
}

// holdStays reads a hold's stays with their frozen nights (live or not, as
// items are: a hold shows what it held).
func holdStays(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, id uuid.UUID) ([]Stay, error) {
	rows, err := q.Query(ctx, `SELECT stay, property_id, room_type, checkin, checkout, rooms, night, price, currency
		FROM reservation_nights WHERE reservation_id = $1 ORDER BY stay, night, live`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Stay
	last := -1
	for rows.Next() {
		var idx, rooms int
		var prop, rt, cur string
		var in, outd, night time.Time
		var price int64
		if err := rows.Scan(&idx, &prop, &rt, &in, &outd, &rooms, &night, &price, &cur); err != nil {
			return nil, err
		}
		if idx != last {
			out = append(out, Stay{PropertyID: prop, RoomType: rt, Checkin: in, Checkout: outd, Rooms: rooms,
				Total: money.Money{Currency: cur}})
			last = idx
		}
		st := &out[len(out)-1]
		if n := len(st.Nights); n > 0 && st.Nights[n-1].Night.Equal(night) {
			continue // a walked night: the original (not live, first) is what the guest paid
		}
		st.Nights = append(st.Nights, StayNight{Night: night, Price: money.Money{Amount: price, Currency: cur}})
		st.Total.Amount += price * int64(rooms)
	}
	return out, rows.Err()
}

// Vouchers lists a booking's vouchers, one per stay.
func (s *Hotels) Vouchers(ctx context.Context, id uuid.UUID) ([]Voucher, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, property_id, room_type, checkin, checkout, confirmation, status
		FROM vouchers WHERE reservation_id = $1 ORDER BY stay`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Voucher, error) {
		var v Voucher
		err := row.Scan(&v.ID, &v.PropertyID, &v.RoomType, &v.Checkin, &v.Checkout, &v.Confirmation, &v.Status)
		return v, err
	})
}

// RoomNight is one row of room-night inventory.
type RoomNight struct {
	PropertyID    string
	RoomType      string
	Night         time.Time
	Allotment     int
	OverbookLimit int
	Held          int
	Sold          int
	Price         int64
	// StopSell: the night sells nothing more (Inventory reads it).
	StopSell bool
}

// RoomNightCounters reads one night's counters (tests, the CLI, walks).
func (s *Hotels) RoomNightCounters(ctx context.Context, propertyID, roomType string, night time.Time) (RoomNight, error) {
	rn := RoomNight{PropertyID: propertyID, RoomType: roomType}
	err := s.pool.QueryRow(ctx, `SELECT night, allotment, overbook_limit, held, sold, price FROM room_nights
		WHERE property_id = $1 AND room_type = $2 AND night = $3`, propertyID, roomType, night).
		Scan(&rn.Night, &rn.Allotment, &rn.OverbookLimit, &rn.Held, &rn.Sold, &rn.Price)
	if errors.Is(err, pgx.ErrNoRows) {
		return RoomNight{}, ErrNotFound
	}
	return rn, err
}

// auditRoomNights counts the room-night violations: nights sold past their
// allotment plus limit, and nights whose held or sold counter differs from
// the live nights of pending or paid reservations.
func (s *Hotels) auditRoomNights(ctx context.Context, r *AuditReport) error {
	return s.pool.QueryRow(ctx, `
		WITH live AS (
			SELECT n.property_id, n.room_type, n.night,
			       sum(n.rooms) FILTER (WHERE r.status = 'PENDING_PAYMENT') AS held,
			       sum(n.rooms) FILTER (WHERE r.status = 'PAID') AS sold
			FROM reservation_nights n JOIN reservations r ON r.id = n.reservation_id
			WHERE n.live GROUP BY 1, 2, 3)
		SELECT
		  (SELECT count(*) FROM room_nights WHERE held + sold > allotment + overbook_limit OR sold > allotment + overbook_limit),
		  (SELECT count(*) FROM room_nights rn FULL JOIN live l
		     ON l.property_id = rn.property_id AND l.room_type = rn.room_type AND l.night = rn.night
		   WHERE coalesce(rn.held, 0) <> coalesce(l.held, 0) OR coalesce(rn.sold, 0) <> coalesce(l.sold, 0))`).
		Scan(&r.RoomNightsOverLimit, &r.RoomNightsMiscounted)
}
