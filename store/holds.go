package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/pricing"
	"github.com/encore-tickets/encore/vocab"
)

// HoldRequest is one validated cart. SeatIDs is sorted and free of duplicates;
// either SeatIDs or SectionID with Quantity is set.
type HoldRequest struct {
	ReservationID uuid.UUID
	UserID        string
	EventID       string
	SeatIDs       []string
	SectionID     string
	Quantity      int
	Adjacent      bool
	PromoCode     string
	// Idempotency: empty Key means none. Hash identifies the request body.
	IdempotencyKey string
	RequestHash    []byte
}

// Item is one frozen line of a hold.
type Item struct {
	SeatID    string      `json:"seat_id,omitempty"`
	SectionID string      `json:"section_id"`
	Quantity  int         `json:"quantity"`
	Price     money.Money `json:"price"`
	Base      int64       `json:"base_price"`
	SurgeBps  int         `json:"surge_bps"`
	Discount  int64       `json:"discount"`
}

// Hold is a reservation as the buy plane sees it.
type Hold struct {
	ID        uuid.UUID
	UserID    string
	EventID   string
	Status    vocab.ReservationStatus
	CreatedAt time.Time
	ExpiresAt time.Time
	EndedAt   *time.Time
	Total     money.Money
	PromoCode string
	Items     []Item
}

// SeatIDs lists the seats of the hold in order.
func (h Hold) SeatIDs() []string {
	out := make([]string, 0, len(h.Items))
	for _, it := range h.Items {
		if it.SeatID != "" {
			out = append(out, it.SeatID)
		}
	}
	return out
}

// Ended is what ending a reservation released, for the caller to clean up
// hints and publish nothing twice (the outbox rows are already written).
type Ended struct {
	ReservationID uuid.UUID
	EventID       string
	SeatIDs       []string
	Status        vocab.ReservationStatus
}

// EventLimits is what the cheap pre-check learnt about the event.
type EventLimits struct {
	Metered bool
	HoldTTL time.Duration
}

// PreCheck runs the cheap, lock-free refusals before any hint or lock: event
// on sale, no other live pending checkout, purchase limit. CreateHold checks
// each again inside its transaction; this only refuses doomed carts early.
func (s *Store) PreCheck(ctx context.Context, userID, eventID string, want int) (EventLimits, error) {
	var limit, owned, ttl int
	var onsale, metered bool
	var pendingID *uuid.UUID
	err := s.pool.QueryRow(ctx, `
		SELECT e.per_customer_limit, e.onsale_at <= now(), e.metered, e.hold_ttl_seconds,
		       (SELECT r.id FROM reservations r WHERE r.user_id = $1 AND r.event_id = e.id
		          AND r.status = 'PENDING_PAYMENT' AND r.expires_at > now()),
		       (SELECT coalesce(sum(i.quantity), 0) FROM reservations r JOIN reservation_items i ON i.reservation_id = r.id
		          WHERE r.user_id = $1 AND r.event_id = e.id AND i.live
		            AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now())))
		FROM events e WHERE e.id = $2`, userID, eventID).Scan(&limit, &onsale, &metered, &ttl, &pendingID, &owned)
	if errors.Is(err, pgx.ErrNoRows) {
		return EventLimits{}, &InvalidError{Field: "event_id", Message: "no such event"}
	}
	if err != nil {
		return EventLimits{}, err
	}
	ev := EventLimits{Metered: metered, HoldTTL: time.Duration(ttl) * time.Second}
	if !onsale {
		return ev, ErrNotOnSale
	}
	if pendingID != nil {
		return ev, &PendingCheckoutError{HoldID: pendingID.String()}
	}
	if owned+want > limit {
		return ev, &PurchaseLimitError{Limit: limit, Owned: owned, Requested: want}
	}
	return ev, nil
}

// CreateHold takes the whole cart or nothing in one short transaction: the
// idempotency key's lock and lookup, the fan's pending checkout and limit, the
// seats (one conditional UPDATE whose predicate is the rule), the promotion
// (locked row, per-user key), frozen prices, items, an inventory.changed
// outbox row per section and the key's record. When it returns a stored
// response instead of a hold, nothing was executed. The answer's body is not
// written here: the caller renders it after commit and keeps it with
// SaveHoldResponse.
func (s *Store) CreateHold(ctx context.Context, req HoldRequest) (Hold, *StoredResponse, error) {
	var (
		hold   Hold
		stored *StoredResponse
	)
	// A lazily expired reservation can be locked by the sweeper at that very
	// moment (NOWAIT refuses); a fresh attempt a few milliseconds later finds
	// it ended.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = s.tx(ctx, func(tx pgx.Tx) error {
			var err error
			hold, stored, err = createHold(ctx, tx, req)
			return err
		})
		if !errors.Is(err, errRetryLazyExpiry) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	if errors.Is(err, errRetryLazyExpiry) || transient(err) {
		return Hold{}, nil, ErrBusy
	}
	return hold, stored, inputError(err)
}

// ErrReservationIDTaken: the reservation ID derived from an idempotency key
// belongs to a hold whose stored response has been forgotten (older than 24
// hours). The key is free again; the caller retries with a fresh ID.
var ErrReservationIDTaken = errors.New("store: reservation ID already used")

var errRetryLazyExpiry = errors.New("store: retry after lazy expiry")

// createHold is one attempt of CreateHold, step by step. Every step runs in
// tx, so a refusal at any step leaves nothing behind.
func createHold(ctx context.Context, tx pgx.Tx, req HoldRequest) (Hold, *StoredResponse, error) {
	if req.IdempotencyKey != "" {
		prev, err := claimKey(ctx, tx, req)
		if err != nil || prev != nil {
			return Hold{}, prev, err
		}
	}
	terms, err := loadTerms(ctx, tx, req.EventID)
	if err != nil {
		return Hold{}, nil, err
	}
	if err := settleOwnPending(ctx, tx, req.UserID, req.EventID); err != nil {
		return Hold{}, nil, err
	}
	if err := checkLimit(ctx, tx, req, terms.limit); err != nil {
		return Hold{}, nil, err
	}
	hold, err := insertReservation(ctx, tx, req, terms)
	if err != nil {
		return Hold{}, nil, err
	}
	units, err := takeInventory(ctx, tx, req)
	if err != nil {
		return Hold{}, nil, err
	}
	discountBps, err := applyPromotion(ctx, tx, req)
	if err != nil {
		return Hold{}, nil, err
	}
	// The remaining writes cannot be refused by a rule, only by a bug or the
	// database: one round trip for all of them.
	batch := &pgx.Batch{}
	sections := unitSections(units)
	if hold.Items, hold.Total, err = priceItems(ctx, tx, batch, req, terms, units, sections, discountBps); err != nil {
		return Hold{}, nil, err
	}
	queueHoldOutbox(batch, hold, sections)
	if req.IdempotencyKey != "" {
		queueKeyRecord(batch, req)
	}
	if err := sendHoldBatch(ctx, tx, batch, hold); err != nil {
		return Hold{}, nil, err
	}
	return hold, nil, nil
}

// eventTerms is what the event says about any hold on it, read in the hold's
// transaction.
type eventTerms struct {
	currency string
	limit    int
	ttl      int
	startsAt time.Time
	now      time.Time
}

// loadTerms reads the event's terms and refuses an event not on sale.
func loadTerms(ctx context.Context, tx pgx.Tx, eventID string) (eventTerms, error) {
	var ev eventTerms
	var onsale bool
	err := tx.QueryRow(ctx, `SELECT currency, per_customer_limit, hold_ttl_seconds, starts_at, now(), onsale_at <= now()
		FROM events WHERE id = $1`, eventID).Scan(&ev.currency, &ev.limit, &ev.ttl, &ev.startsAt, &ev.now, &onsale)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventTerms{}, &InvalidError{Field: "event_id", Message: "no such event"}
	}
	if err != nil {
		return eventTerms{}, err
	}
	if !onsale {
		return eventTerms{}, ErrNotOnSale
	}
	return ev, nil
}

// settleOwnPending deals with the fan's own pending checkout on the event: a
// live one refuses, an expired one is ended here so it never blocks (lazy
// expiry). The row stays locked until commit, so two carts of one fan queue.
func settleOwnPending(ctx context.Context, tx pgx.Tx, userID, eventID string) error {
	var pendingID uuid.UUID
	var pendingExpired bool
	err := tx.QueryRow(ctx, `SELECT id, expires_at <= now() FROM reservations
		WHERE user_id = $1 AND event_id = $2 AND status = 'PENDING_PAYMENT' FOR UPDATE`,
		userID, eventID).Scan(&pendingID, &pendingExpired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case !pendingExpired:
		return &PendingCheckoutError{HoldID: pendingID.String()}
	}
	_, err = endLocked(ctx, tx, pendingID, vocab.ReservationExpired)
	return err
}

// checkLimit refuses a cart that would take the fan past the event's
// per-customer limit, counting paid and pending units.
func checkLimit(ctx context.Context, tx pgx.Tx, req HoldRequest, limit int) error {
	want := len(req.SeatIDs)
	if want == 0 {
		want = req.Quantity
	}
	var owned int
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(i.quantity), 0) FROM reservations r
		JOIN reservation_items i ON i.reservation_id = r.id
		WHERE r.user_id = $1 AND r.event_id = $2 AND i.live AND r.status IN ('PAID', 'PENDING_PAYMENT')`,
		req.UserID, req.EventID).Scan(&owned); err != nil {
		return err
	}
	if owned+want > limit {
		return &PurchaseLimitError{Limit: limit, Owned: owned, Requested: want}
	}
	return nil
}

// insertReservation writes the pending reservation (and the account on first
// sight). Its total is set once the items are priced.
func insertReservation(ctx context.Context, tx pgx.Tx, req HoldRequest, ev eventTerms) (Hold, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, req.UserID); err != nil {
		return Hold{}, err
	}
	hold := Hold{
		ID: req.ReservationID, UserID: req.UserID, EventID: req.EventID,
		Status: vocab.ReservationPending, PromoCode: req.PromoCode,
	}
	var promo *string
	if req.PromoCode != "" {
		promo = &req.PromoCode
	}
	err := tx.QueryRow(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency, promo_code)
		VALUES ($1, $2, $3, 'PENDING_PAYMENT', now() + make_interval(secs => $4), 0, $5, $6)
		RETURNING created_at, expires_at`,
		req.ReservationID, req.UserID, req.EventID, ev.ttl, ev.currency, promo).Scan(&hold.CreatedAt, &hold.ExpiresAt)
	if err != nil {
		switch code, constraint := pgCode(err); {
		case code == pgUniqueViolation && constraint == "reservations_one_pending":
			return Hold{}, &PendingCheckoutError{}
		case code == pgUniqueViolation && constraint == "reservations_pkey":
			return Hold{}, ErrReservationIDTaken
		}
		return Hold{}, err
	}
	return hold, nil
}

// unit is one line of the cart as taken: a seat, or a quantity of a
// general-admission section.
type unit struct {
	seatID, sectionID string
	qty               int
	base              int64
}

// takeInventory takes what the cart asks for, all of it or none: the named
// seats, adjacent seats picked for the fan (best available), or places of a
// general-admission section. Seats come back in ID order, the order a hold's
// items are read back in.
func takeInventory(ctx context.Context, tx pgx.Tx, req HoldRequest) ([]unit, error) {
	if req.Adjacent && len(req.SeatIDs) == 0 {
		// Best available: lock adjacent seats, then take them like a cart.
		seats, err := pickAdjacent(ctx, tx, req.EventID, req.SectionID, req.Quantity)
		if err != nil {
			return nil, err
		}
		req.SeatIDs = seats
	}
	if len(req.SeatIDs) == 0 {
		return takeGeneral(ctx, tx, req)
	}
	taken, err := takeSeats(ctx, tx, req)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(taken, func(a, b takenSeat) int { return strings.Compare(a.id, b.id) })
	units := make([]unit, 0, len(taken))
	for _, t := range taken {
		units = append(units, unit{seatID: t.id, sectionID: t.section, qty: 1, base: t.base})
	}
	return units, nil
}

// takeGeneral counts the places against the section's capacity in one
// conditional UPDATE.
func takeGeneral(ctx context.Context, tx pgx.Tx, req HoldRequest) ([]unit, error) {
	var base int64
	err := tx.QueryRow(ctx, `UPDATE sections SET ga_taken = ga_taken + $3
		WHERE id = $1 AND event_id = $2 AND kind = 'general' AND ga_taken + $3 <= capacity
		RETURNING base_price`, req.SectionID, req.EventID, req.Quantity).Scan(&base)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gaUnavailable(ctx, tx, req)
	}
	if err != nil {
		return nil, err
	}
	return []unit{{sectionID: req.SectionID, qty: req.Quantity, base: base}}, nil
}

// applyPromotion uses the cart's promotion, if any, and returns its discount.
func applyPromotion(ctx context.Context, tx pgx.Tx, req HoldRequest) (int, error) {
	if req.PromoCode == "" {
		return 0, nil
	}
	return usePromotion(ctx, tx, req)
}

// unitSections lists the sections of the taken units, sorted, so outbox rows
// and surge reads follow one order.
func unitSections(units []unit) []string {
	set := map[string]bool{}
	for _, u := range units {
		set[u.sectionID] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// priceItems freezes each unit's price (base, the section's surge, the
// discount), queues its item row and the reservation's total on b, and
// returns the items and total for the answer.
func priceItems(ctx context.Context, tx pgx.Tx, b *pgx.Batch, req HoldRequest, ev eventTerms, units []unit,
	sections []string, discountBps int) ([]Item, money.Money, error) {
	surge, err := sectionSurge(ctx, tx, sections, ev.startsAt, ev.now)
	if err != nil {
		return nil, money.Money{}, err
	}
	var total int64
	items := make([]Item, 0, len(units))
	for _, u := range units {
		q, err := pricing.Price(u.base, surge[u.sectionID], discountBps)
		if err != nil {
			return nil, money.Money{}, fmt.Errorf("store: price seat %s: %w", u.seatID, err)
		}
		line, err := money.MulInt(q.PriceAtLock, int64(u.qty))
		if err != nil {
			return nil, money.Money{}, err
		}
		if total, err = money.AddInt(total, line); err != nil {
			return nil, money.Money{}, err
		}
		var seat *string
		if u.seatID != "" {
			seat = &u.seatID
		}
		b.Queue(`INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity,
			base_price, surge_bps, discount, price_at_lock) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			req.ReservationID, req.EventID, u.sectionID, seat, u.qty, q.Base, q.SurgeBps, q.Discount, q.PriceAtLock)
		items = append(items, Item{SeatID: u.seatID, SectionID: u.sectionID, Quantity: u.qty,
			Price: money.Money{Amount: q.PriceAtLock, Currency: ev.currency}, Base: q.Base, SurgeBps: q.SurgeBps, Discount: q.Discount})
	}
	b.Queue(`UPDATE reservations SET total = $2 WHERE id = $1`, req.ReservationID, total)
	return items, money.Money{Amount: total, Currency: ev.currency}, nil
}

// queueHoldOutbox queues an inventory.changed row per section: the seat
// maps' invalidations. A hold writes nothing for the saga; its booking
// workflow starts at checkout.
func queueHoldOutbox(b *pgx.Batch, hold Hold, sections []string) {
	for _, sec := range sections {
		queueInventoryChanged(b, hold.EventID, sec)
	}
}

// sendHoldBatch sends the queued writes and maps a second live owner of a
// seat to a refusal.
func sendHoldBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch, hold Hold) error {
	err := tx.SendBatch(ctx, b).Close()
	if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "reservation_items_one_live_owner" {
		// Unreachable while seats.reservation_id and items agree; kept so a
		// bug elsewhere surfaces as a refusal, never as a double sale.
		return &SeatUnavailableError{SeatIDs: hold.SeatIDs(), Detail: "a seat already has a live owner"}
	}
	return err
}

type takenSeat struct {
	id, section string
	base        int64
}

// takeSeats moves every requested seat from AVAILABLE to HELD in one
// conditional UPDATE, or fails the cart. Seats held by an expired reservation
// are released here first (lazy expiry), locking that reservation's row.
func takeSeats(ctx context.Context, tx pgx.Tx, req HoldRequest) ([]takenSeat, error) {
	for round := 0; ; round++ {
		rows, err := tx.Query(ctx, `UPDATE seats SET status = 'HELD', reservation_id = $3, version = version + 1
			WHERE event_id = $1 AND id = ANY($2) AND status = 'AVAILABLE'
			RETURNING id, section_id, base_price`, req.EventID, req.SeatIDs, req.ReservationID)
		if err != nil {
			return nil, err
		}
		var taken []takenSeat
		for rows.Next() {
			var t takenSeat
			if err := rows.Scan(&t.id, &t.section, &t.base); err != nil {
				rows.Close()
				return nil, err
			}
			taken = append(taken, t)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(taken) == len(req.SeatIDs) {
			return taken, nil
		}
		if round > 0 {
			return nil, seatsUnavailable(ctx, tx, req, taken)
		}
		// Which seats did not move, and are any of them held by a hold that
		// has expired? Those are ended now; then one more round.
		rows, err = tx.Query(ctx, `SELECT DISTINCT r.id FROM seats s JOIN reservations r ON r.id = s.reservation_id
			WHERE s.event_id = $1 AND s.id = ANY($2) AND s.status = 'HELD'
			  AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now() AND r.id <> $3`,
			req.EventID, req.SeatIDs, req.ReservationID)
		if err != nil {
			return nil, err
		}
		stale, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return nil, err
		}
		if len(stale) == 0 {
			return nil, seatsUnavailable(ctx, tx, req, taken)
		}
		slices.SortFunc(stale, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		for _, id := range stale {
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1 FOR UPDATE NOWAIT`, id).Scan(&status)
			if code, _ := pgCode(err); code == pgLockNotAvailable {
				return nil, errRetryLazyExpiry
			}
			if err != nil {
				return nil, err
			}
			if _, err := endLocked(ctx, tx, id, vocab.ReservationExpired); err != nil {
				return nil, err
			}
		}
		// Our own partial UPDATE is undone before the retry so the second
		// round sees the whole cart again.
		if len(taken) > 0 {
			ids := make([]string, len(taken))
			for i, t := range taken {
				ids[i] = t.id
			}
			if _, err := tx.Exec(ctx, `UPDATE seats SET status = 'AVAILABLE', reservation_id = NULL, version = version + 1
				WHERE id = ANY($1) AND reservation_id = $2`, ids, req.ReservationID); err != nil {
				return nil, err
			}
		}
	}
}

// seatsUnavailable builds the 409: which requested seats are not free (or do
// not exist), and up to 6 free seats of the same sections, nearest rows first.
func seatsUnavailable(ctx context.Context, tx pgx.Tx, req HoldRequest, taken []takenSeat) error {
	got := map[string]bool{}
	for _, t := range taken {
		got[t.id] = true
	}
	rows, err := tx.Query(ctx, `SELECT id FROM seats WHERE event_id = $1 AND id = ANY($2)`, req.EventID, req.SeatIDs)
	if err != nil {
		return err
	}
	exists, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, id := range exists {
		known[id] = true
	}
	var unknown, unavailable []string
	for _, id := range req.SeatIDs {
		switch {
		case !known[id]:
			unknown = append(unknown, id)
		case !got[id]:
			unavailable = append(unavailable, id)
		}
	}
	if len(unknown) > 0 {
		return &InvalidError{Field: "seat_ids", Message: fmt.Sprintf("no such seats in this event: %v", unknown)}
	}
	alts, err := alternatives(ctx, tx, req.EventID, unavailable, req.SeatIDs, len(req.SeatIDs))
	if err != nil {
		return err
	}
	return &SeatUnavailableError{SeatIDs: unavailable, Alternatives: alts,
		Detail: fmt.Sprintf("%d of the %d seats are no longer available", len(unavailable), len(req.SeatIDs))}
}

// alternatives offers free seats in the sections of the taken ones, nearest to
// them by row and number. Advisory only: the seat map may change before the
// fan asks again.
func alternatives(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, eventID string, unavailable, exclude []string, n int) ([]string, error) {
	if len(unavailable) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `
		WITH ref AS (SELECT section_id, min(row_label) AS row_label, min(number) AS number
		             FROM seats WHERE event_id = $1 AND id = ANY($2) GROUP BY section_id)
		SELECT s.id FROM seats s JOIN ref ON ref.section_id = s.section_id
		WHERE s.status = 'AVAILABLE' AND NOT s.id = ANY($3)
		ORDER BY (s.row_label <> ref.row_label), abs(s.number - ref.number), s.row_label, s.number
		LIMIT $4`, eventID, unavailable, exclude, max(n, 2)*3)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func gaUnavailable(ctx context.Context, tx pgx.Tx, req HoldRequest) error {
	var kind string
	var left int
	err := tx.QueryRow(ctx, `SELECT kind, capacity - ga_taken FROM sections WHERE id = $1 AND event_id = $2`,
		req.SectionID, req.EventID).Scan(&kind, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return &InvalidError{Field: "section_id", Message: "no such section in this event"}
	}
	if err != nil {
		return err
	}
	if kind != string(vocab.SectionGeneral) {
		return &InvalidError{Field: "section_id", Message: "a seated section needs seat_ids (or adjacent: true)"}
	}
	return &SeatUnavailableError{Detail: fmt.Sprintf("only %d places left in section %s", left, req.SectionID)}
}

// usePromotion locks the promotion row (the global cap) and inserts the
// (code, user) use (the per-user cap), returning the discount.
func usePromotion(ctx context.Context, tx pgx.Tx, req HoldRequest) (int, error) {
	var bps, maxUses, used int
	var eventID *string
	err := tx.QueryRow(ctx, `SELECT discount_bps, max_uses, used, event_id FROM promotions WHERE code = $1 FOR UPDATE`,
		req.PromoCode).Scan(&bps, &maxUses, &used, &eventID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && eventID != nil && *eventID != req.EventID) {
		return 0, &InvalidError{Field: "promo_code", Message: "no such promotion for this event"}
	}
	if err != nil {
		return 0, err
	}
	if used >= maxUses {
		return 0, &PromotionError{Code: req.PromoCode, Reason: "all uses are taken"}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO promotion_uses (code, user_id, reservation_id) VALUES ($1, $2, $3)`,
		req.PromoCode, req.UserID, req.ReservationID); err != nil {
		if code, _ := pgCode(err); code == pgUniqueViolation {
			return 0, &PromotionError{Code: req.PromoCode, Reason: "already used by this account"}
		}
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE promotions SET used = used + 1 WHERE code = $1`, req.PromoCode); err != nil {
		return 0, err
	}
	return bps, nil
}

// sectionSurge reads the occupancy of the cart's sections from the
// transaction's snapshot (this cart included) and returns each multiplier.
func sectionSurge(ctx context.Context, tx pgx.Tx, sectionIDs []string, startsAt, now time.Time) (map[string]int, error) {
	rows, err := tx.Query(ctx, `
		SELECT sec.id, sec.capacity,
		       CASE WHEN sec.kind = 'general' THEN sec.ga_taken
		            ELSE (SELECT count(*) FROM seats s WHERE s.section_id = sec.id AND s.status IN ('HELD', 'SOLD')) END
		FROM sections sec WHERE sec.id = ANY($1)`, sectionIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var capacity, taken int64
		if err := rows.Scan(&id, &capacity, &taken); err != nil {
			return nil, err
		}
		out[id] = pricing.Multiplier(taken, capacity, startsAt, now)
	}
	return out, rows.Err()
}

// Alternatives offers free seats near the given unavailable ones, outside any
// transaction (the hint path refuses before one starts).
func (s *Store) Alternatives(ctx context.Context, eventID string, unavailable, exclude []string, n int) ([]string, error) {
	return alternatives(ctx, s.pool, eventID, unavailable, exclude, n)
}
