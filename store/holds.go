package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	// TicketTypes name the ticket type of each seat (seat ID -> type ID);
	// TicketType is a general-admission cart's, and a seat's that the map
	// does not name. A unit naming none is the event's first type, priced
	// at the seat's base price.
	TicketTypes map[string]string
	TicketType  string
	// Stays are the hotel stays of a package (with EventID) or of a
	// hotel-only hold (CreateStayHold), in a canonical order.
	Stays []StayRequest
	// MaxUnpaidRoomNights is the most room-nights the account may hold
	// unpaid over all its pending holds, this one's stays included (see
	// checkStayLimits); 0: DefaultMaxUnpaidRoomNights.
	MaxUnpaidRoomNights int
	// FanEmail is where the confirmation goes; empty: the fan's token had
	// no email.
	FanEmail string
	// Idempotency: empty Key means none. Hash identifies the request body.
	IdempotencyKey string
	RequestHash    []byte
	// Render makes the hold's answer under an Idempotency-Key. It runs
	// inside the hold's transaction, once the hold is complete, and its
	// bytes are written with the key's record: the answer commits with the
	// hold or not at all, and every replay answers these same bytes.
	Render func(Hold) ([]byte, error)
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
	// TicketType is the line's ticket type ("" on events without types);
	// Fee its service fee (per ticket times the quantity), apart from Price.
	TicketType string `json:"ticket_type,omitempty"`
	Fee        int64  `json:"fee,omitempty"`
	// ListingID is the resale listing the line buys (a resale hold).
	ListingID string `json:"listing_id,omitempty"`
	// Place is where the item is, as the venue's signs name it: read with
	// a booking's view, not with a hold (the hold's path reads no names).
	Place Place `json:"-"`
}

// Place is a seat or a standing area as the venue names it: the section's
// name, and for a seat its row and number (venues.Label writes it for
// people).
type Place struct {
	Section string
	Row     string
	Number  int
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
	// Fees and Tax are parts of Total, frozen at hold time: the service
	// fees of every line, and the tax at TaxRateBp (included in the prices
	// or added to them, as the organisation's settings said).
	Fees      int64
	Tax       int64
	TaxRateBp int
	PromoCode string
	Items     []Item
	// Stays are the hotel stays the hold carries (see store/stays.go).
	Stays []Stay
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

// preCheckSQL reads what PreCheck decides on: the event's sale and terms,
// the fan's live pending hold on it and the units the fan holds or bought.
const preCheckSQL = `WITH ` + fansReservations + `
		SELECT e.per_customer_limit, e.status, e.onsale_at, e.offsale_at, now(), e.metered, e.hold_ttl_seconds,
		       (SELECT r.id FROM mine r WHERE r.event_id = e.id
		          AND r.status = 'PENDING_PAYMENT' AND r.expires_at > now()),
		       (SELECT coalesce(sum(i.quantity), 0) FROM mine r JOIN reservation_items i ON i.reservation_id = r.id
		          WHERE r.event_id = e.id AND (i.live OR i.listing_id IS NOT NULL)
		            AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now())))
		FROM events e WHERE e.id = $2`

// PreCheck runs the cheap, lock-free refusals before any hint or lock: event
// on sale, no other live pending checkout, purchase limit. CreateHold checks
// each again inside its transaction; this only refuses doomed carts early.
func (s *Holds) PreCheck(ctx context.Context, userID, eventID string, want int) (EventLimits, error) {
	var limit, owned, ttl int
	var metered bool
	var sale saleWindow
	var pendingID *uuid.UUID
	// Its generic plan (readInSnapshot), planned once a connection: left to
	// choose, PostgreSQL planned it afresh on 2,500 of 6,000 holds (five
	// custom plans a connection after every ANALYZE of a growing table), a
	// third of a millisecond each.
	found := false
	b := &pgx.Batch{}
	b.Queue(preCheckSQL, userID, eventID).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&limit, &sale.status, &sale.onsale, &sale.offsale, &sale.now, &metered, &ttl, &pendingID, &owned)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // found stays false
		}
		found = err == nil
		return err
	})
	if err := readInSnapshot(ctx, s.pool, b); err != nil {
		return EventLimits{}, err
	}
	if !found || sale.status == vocab.EventDraft {
		return EventLimits{}, errNoSuchEvent()
	}
	ev := EventLimits{Metered: metered, HoldTTL: time.Duration(ttl) * time.Second}
	if err := sale.check(); err != nil {
		return ev, err
	}
	if pendingID != nil {
		return ev, &PendingCheckoutError{HoldID: pendingID.String()}
	}
	if owned+want > limit {
		return ev, &PurchaseLimitError{Limit: limit, Owned: owned, Requested: want}
	}
	return ev, nil
}

// fansReservations is a CTE of the fan's ($1) own reservations, read
// through the fan's index alone, for the lookups of the fan's pending hold
// and purchase limit on an event. Written as one WHERE, the lookups left
// PostgreSQL the event's indexes too, and on a fresh database's first sale
// plans made before the table's statistics caught up went through
// reservations_event_status or reservations_pending_expiry, reading every
// live hold of the event on every hold (2,400 buffers a lookup after 3,000
// holds, where the fan's index reads 2) until the next ANALYZE. A fan has a
// few reservations; an event, a whole sale's. The price: the CTE reads all
// of the fan's reservations, every event's, where a lookup through
// reservations_one_pending reads one index entry. A hotel hold's count of
// the account's unpaid nights reads it too (stays.go).
const fansReservations = `mine AS MATERIALIZED (SELECT id, event_id, status, expires_at, created_at FROM reservations WHERE user_id = $1)`

// CreateHold takes the whole cart or nothing in one short transaction: the
// idempotency key's lock and lookup, the fan's pending checkout and limit, the
// seats (one conditional UPDATE whose predicate is the rule), the promotion
// (locked row, per-user key), frozen prices, items, one inventory.changed
// outbox row naming every section taken from, and the key's record with the
// answer req.Render made of the hold. When it returns a stored response
// instead of a hold, nothing was kept.
func (s *Holds) CreateHold(ctx context.Context, req HoldRequest) (Hold, *StoredResponse, error) {
	together := true
	return retryLazyExpiry(func() (Hold, *StoredResponse, error) {
		hold, stored, err := s.createHold(ctx, req, together)
		if errors.Is(err, errTakeApart) {
			together = false
			hold, stored, err = s.createHold(ctx, req, false)
		}
		return hold, stored, err
	})
}

// errTakeApart: the take went with the checks, but the fan's own expired
// hold must end before it (its seats may be in the cart): the attempt is
// rolled back and made again with the take in a round trip of its own.
var errTakeApart = errors.New("store: take after ending the fan's expired hold")

// retryLazyExpiry runs create (one or, after errTakeApart, two
// transactions) up to three times while it meets a lazily
// expired reservation that the sweeper has locked at that very moment
// (NOWAIT refuses): a fresh attempt a few milliseconds later finds it ended.
// Still locked, or a transient failure, is ErrBusy.
func retryLazyExpiry(create func() (Hold, *StoredResponse, error)) (Hold, *StoredResponse, error) {
	var (
		hold   Hold
		stored *StoredResponse
		err    error
	)
	for attempt := 0; attempt < 3; attempt++ {
		hold, stored, err = create()
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

// checks is what the hold's first round trip learnt before anything is
// written.
type checks struct {
	stored         *StoredResponse // the key's earlier answer, if any
	terms          eventTerms
	expiredPending uuid.UUID // the fan's own expired hold, to end first
	// take is the inventory's take when it went in the same round trip as
	// the checks (nil: takeCart sends it).
	take *inventoryTake
}

// createHold is one attempt of CreateHold, step by step. Every step runs in
// one transaction, so a refusal at any step leaves nothing behind. Each round
// trip carries every statement that does not wait on an answer of the one
// before: the first begins the transaction, runs the checks that can
// refuse the cart (claimKey, loadTerms, settleOwnPending, checkLimit) and,
// with them, takes the inventory and reads the surge it causes; the second
// writes the reservation with its priced items, the outbox row and the
// key's record; then the commit. A check that refuses rolls the take back
// with everything else, so the take need not wait for the checks' answers;
// it waits only when the seats are not known yet (best available) or, on a
// second attempt, when the fan's own expired hold must end first
// (errTakeApart). Rare paths (an expired hold to end, best-available seats,
// lazy expiry, a promotion) add round trips of their own. A cart the
// checks refuse thus runs its take before the refusal rolls it back,
// holding the seats' (or a general-admission section's) row locks for that
// round trip: rare here, since holds.Service.check refused doomed carts and
// answered replays before the transaction with a lock-free read.
func (s *Holds) createHold(ctx context.Context, req HoldRequest, together bool) (Hold, *StoredResponse, error) {
	var early func(*pgx.Batch, *checks)
	if together && !(req.Adjacent && len(req.SeatIDs) == 0) {
		early = func(b *pgx.Batch, c *checks) { c.take = queueTakeInventory(b, req, &c.terms) }
	}
	return s.runHold(ctx, req, func(b *pgx.Batch, ev *eventTerms) {
		queueLoadTerms(b, req.EventID, ev)
		queueLoadTypes(b, req, ev)
	}, early, func(tx pgx.Tx, c checks) (Hold, error) { return takeCart(ctx, tx, req, c) })
}

// runHold is one hold's transaction: its first round trip begins it and
// runs the key's claim, the event's terms (terms queues them), the fan's
// own pending hold and purchase limit, then what early queues (nil:
// nothing); take does the rest. A replay of the key's stored answer
// returns it, its transaction rolled back.
func (s *Holds) runHold(ctx context.Context, req HoldRequest, terms func(*pgx.Batch, *eventTerms),
	early func(*pgx.Batch, *checks), take func(pgx.Tx, checks) (Hold, error)) (Hold, *StoredResponse, error) {
	first := &pgx.Batch{}
	first.BeginTx(pgx.TxOptions{})
	s.queueTimeouts(first)
	first.Queue(genericPlansSQL)
	var c checks
	if req.IdempotencyKey != "" {
		queueClaimKey(first, req, &c.stored)
	}
	terms(first, &c.terms)
	queueSettleOwnPending(first, req, &c.expiredPending)
	queueCheckLimit(first, req, &c.terms)
	if early != nil {
		early(first, &c)
	}
	br := s.pool.SendBatch(ctx, first)
	if br.Tx() == nil {
		return Hold{}, nil, br.Close() // no connection: nothing began
	}
	var hold Hold
	err := pgx.BeginFunc(ctx, begun{br.Tx()}, func(tx pgx.Tx) error {
		if err := br.Close(); err != nil {
			return err // a replay too: what early took is undone
		}
		var err error
		hold, err = take(tx, c)
		return err
	})
	if errors.Is(err, errReplay) {
		err = nil
	}
	if err != nil || c.stored != nil {
		return Hold{}, c.stored, err
	}
	return hold, nil, nil
}

// genericPlansSQL makes the statements after it in the hold's transaction
// run their generic plans, planned once per connection. Left to choose,
// PostgreSQL planned the take afresh on every hold (its generic plan's
// estimate for "id = ANY($2)" counts ten seats, so it never won), a third
// of a millisecond, the costliest step of a hold after its commit; the
// generic plan is the same primary-key scan. customPlans restores the
// choice before the statements whose plans depend on their parameters;
// a resale hold's are all lookups by key and keep the generic plans.
const genericPlansSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// customPlans gives the rest of the hold's transaction back the server's
// own plan_cache_mode, before the rarer steps whose best plan depends on
// the parameters (best available, the whole section's alternatives when
// too few seats are free near the taken ones, stays).
func customPlans(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', reset_val, true) FROM pg_settings WHERE name = 'plan_cache_mode'`)
	return err
}

// begun hands pgx.BeginFunc a transaction that a batch has already begun, so
// it is committed or rolled back as every other transaction is.
type begun struct{ tx pgx.Tx }

func (b begun) Begin(context.Context) (pgx.Tx, error) { return b.tx, nil }

// queueTimeouts bounds the transaction that b begins as Store.tx bounds every
// other, in the same round trip (nothing when the connection's own are the
// store's).
func (s *Holds) queueTimeouts(b *pgx.Batch) {
	if s.connTimeouts {
		return
	}
	b.Queue(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`,
		strconv.FormatInt(s.opts.LockTimeout.Milliseconds(), 10),
		strconv.FormatInt(s.opts.StatementTimeout.Milliseconds(), 10))
}

// takeCart is the hold once the checks passed: the inventory, the
// promotion, then the reservation with its priced items and the outbox row.
func takeCart(ctx context.Context, tx pgx.Tx, req HoldRequest, c checks) (Hold, error) {
	if c.expiredPending != uuid.Nil {
		if c.take != nil {
			return Hold{}, errTakeApart // the take missed the seats this ending frees
		}
		if _, err := endLocked(ctx, tx, c.expiredPending, vocab.ReservationExpired); err != nil {
			return Hold{}, err
		}
	}
	if req.Adjacent && len(req.SeatIDs) == 0 {
		// Best available picks its seats first, then takes them like a cart.
		if err := customPlans(ctx, tx); err != nil {
			return Hold{}, err
		}
		seats, err := pickAdjacent(ctx, tx, req.EventID, req.SectionID, req.Quantity)
		if err != nil {
			return Hold{}, err
		}
		req.SeatIDs = seats
	}
	// The seats name the reservation before it is written (their foreign
	// key is checked at commit): it is written last, with its total, once
	// the take has priced it (holdWritesSQL).
	take := c.take
	if take == nil {
		b := &pgx.Batch{}
		take = queueTakeInventory(b, req, &c.terms)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return Hold{}, err
		}
	}
	units, surge, err := take.finish(ctx, tx, req, c.terms)
	if err != nil {
		return Hold{}, err
	}
	disc, err := applyPromotion(ctx, tx, req, c.terms.now)
	if err != nil {
		return Hold{}, err
	}
	// The remaining writes cannot be refused by a rule, only by a bug or the
	// database: one round trip for all of them.
	b := &pgx.Batch{}
	hold, err := priceItems(b, req, c.terms, units, surge, disc, unitSections(units))
	if err != nil {
		return Hold{}, err
	}
	if len(req.Stays) == 0 {
		// The hold is complete: its answer goes in the same round trip.
		if err := queueKeyRecord(b, req, *hold); err != nil {
			return Hold{}, err
		}
	}
	if err := sendHoldBatch(ctx, tx, b, *hold); err != nil {
		return Hold{}, err
	}
	if len(req.Stays) > 0 {
		// A package: every night too, or nothing (the transaction rolls back).
		if err := customPlans(ctx, tx); err != nil {
			return Hold{}, err
		}
		if err := takePackageStays(ctx, tx, req, hold, c.terms); err != nil {
			return Hold{}, err
		}
		if err := sendKeyRecord(ctx, tx, req, *hold); err != nil {
			return Hold{}, err
		}
	}
	return *hold, nil
}

// eventTerms is what the event says about any hold on it, read in the hold's
// transaction.
type eventTerms struct {
	currency string
	limit    int
	ttl      int
	startsAt time.Time
	now      time.Time
	// serviceFee is charged per ticket; taxBp and taxIncluded are the
	// organisation's tax; firstType is the type a line naming none is.
	serviceFee  int64
	taxBp       int
	taxIncluded bool
	firstType   string
	// types are the ticket types the cart names, with their prices per
	// category (read only for a cart that names some).
	types map[string]*typeTerms
}

// typeTerms is one ticket type as a hold prices it.
type typeTerms struct {
	maxPerOrder int // 0: no limit of its own
	prices      map[string]int64
}

// queueLoadTerms reads the event's terms into *ev and refuses an event not on
// sale. The event's row is share-locked, as ConfirmSale does and in the
// order CancelEvent locks (event, then reservations): a hold either commits
// before a cancellation (which then releases it) or waits for it and is
// refused. Unlocked, a hold that read the event just before the
// cancellation committed could commit after its scan of pending holds and
// stay PENDING on a cancelled event. The reservation's foreign key takes the
// same lock at its insert anyway; this takes it before the status is read.
func queueLoadTerms(b *pgx.Batch, eventID string, ev *eventTerms) {
	b.Queue(`SELECT e.currency, e.per_customer_limit, e.hold_ttl_seconds, e.starts_at, now(), e.status, e.onsale_at, e.offsale_at,
			e.service_fee, coalesce(o.tax_rate_bp, 0), coalesce(o.prices_include_tax, true),
			coalesce((SELECT t.id FROM ticket_types t WHERE t.event_id = e.id ORDER BY t.position LIMIT 1), '')
		FROM events e LEFT JOIN organisations o ON o.id = e.org_id WHERE e.id = $1 FOR KEY SHARE OF e`, eventID).QueryRow(func(row pgx.Row) error {
		var sale saleWindow
		err := row.Scan(&ev.currency, &ev.limit, &ev.ttl, &ev.startsAt, &ev.now, &sale.status, &sale.onsale, &sale.offsale,
			&ev.serviceFee, &ev.taxBp, &ev.taxIncluded, &ev.firstType)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && sale.status == vocab.EventDraft:
			return errNoSuchEvent()
		case err != nil:
			return err
		}
		sale.now = ev.now
		return sale.check()
	})
}

// cartTypes lists the ticket types a cart names, sorted and unique.
func cartTypes(req HoldRequest) []string {
	set := map[string]bool{}
	for _, t := range req.TicketTypes {
		set[t] = true
	}
	if req.TicketType != "" {
		set[req.TicketType] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// queueLoadTypes reads the ticket types the cart names into ev.types: a
// cart naming none (the flash sale's common cart) adds no statement. A
// named type the event does not have is refused naming it.
func queueLoadTypes(b *pgx.Batch, req HoldRequest, ev *eventTerms) {
	names := cartTypes(req)
	if len(names) == 0 {
		return
	}
	b.Queue(`SELECT t.id, coalesce(t.max_per_order, 0), coalesce(p.category, ''), coalesce(p.amount, 0)
		FROM ticket_types t LEFT JOIN ticket_type_prices p ON p.event_id = t.event_id AND p.type_id = t.id
		WHERE t.event_id = $1 AND t.id = ANY($2)`, req.EventID, names).Query(func(rows pgx.Rows) error {
		ev.types = map[string]*typeTerms{}
		for rows.Next() {
			var id, cat string
			var maxPer int
			var amount int64
			if err := rows.Scan(&id, &maxPer, &cat, &amount); err != nil {
				return err
			}
			tt := ev.types[id]
			if tt == nil {
				tt = &typeTerms{maxPerOrder: maxPer, prices: map[string]int64{}}
				ev.types[id] = tt
			}
			if cat != "" {
				tt.prices[cat] = amount
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, n := range names {
			if ev.types[n] == nil {
				return &InvalidError{Field: typeField(req, n), Message: "this event has no ticket type " + n}
			}
		}
		return nil
	})
}

// typeField names the cart field that asked for ticket type t.
func typeField(req HoldRequest, t string) string {
	for _, seat := range slices.Sorted(maps.Keys(req.TicketTypes)) {
		if req.TicketTypes[seat] == t {
			return "ticket_types." + seat
		}
	}
	return "ticket_type"
}

// errNoSuchEvent answers a cart for an event that does not exist, or that
// its organiser has not published: a fan cannot tell a draft from nothing.
func errNoSuchEvent() error { return &InvalidError{Field: "event_id", Message: "no such event"} }

// saleWindow is what decides whether an event sells now.
type saleWindow struct {
	status      vocab.EventStatus
	onsale, now time.Time
	offsale     *time.Time
}

// check refuses a hold outside the sale: before the on-sale time, from the
// off-sale time on, or on a cancelled event.
func (w saleWindow) check() error {
	switch {
	case w.status == vocab.EventCancelled:
		return &NotOnSaleError{Reason: "the event is cancelled", OnsaleAt: w.onsale, OffsaleAt: w.offsale}
	case w.now.Before(w.onsale):
		return &NotOnSaleError{Reason: "the sale has not opened yet", OnsaleAt: w.onsale, OffsaleAt: w.offsale}
	case w.offsale != nil && !w.now.Before(*w.offsale):
		return &NotOnSaleError{Reason: "the sale has closed", OnsaleAt: w.onsale, OffsaleAt: w.offsale}
	}
	return nil
}

// ownPendingSQL locks the fan's own pending hold on the event, if any. It
// locks the fan's reservations of the event, read by the fan's index alone,
// in ID order as every reservation lock is taken, and keeps the pending one:
// the status is read once the rows are locked, so a hold ended meanwhile is
// not named. Neither the status nor the event may steer the plan: a lookup
// naming the status was planned, generic, through the index of every
// pending hold of the database (reservations_pending_expiry) whenever the
// statistics were taken with few holds pending, as in the minutes before a
// sale opens (thousands of buffers a hold, more with each hold, until the
// next ANALYZE), and one naming the event through the event's holds on a
// fresh table. So the event is compared with IS NOT DISTINCT FROM, which
// no index answers (the same as = for the event ID a hold always has), and
// the status outside (store/TestAFansOwnLookupsNeverReadThroughTheEventsIndexes).
const ownPendingSQL = `WITH fans AS MATERIALIZED (
		SELECT id, status, expires_at FROM reservations
		WHERE user_id = $1 AND event_id IS NOT DISTINCT FROM $2 ORDER BY id FOR UPDATE)
	SELECT id, expires_at <= now() FROM fans WHERE status = 'PENDING_PAYMENT'`

// queueSettleOwnPending deals with the fan's own pending checkout on the
// event: a live one refuses, an expired one is named in *expired for takeCart
// to end, so it never blocks (lazy expiry). The row stays locked until
// commit, so two carts of one fan queue.
func queueSettleOwnPending(b *pgx.Batch, req HoldRequest, expired *uuid.UUID) {
	b.Queue(ownPendingSQL, req.UserID, req.EventID).QueryRow(func(row pgx.Row) error {
		var id uuid.UUID
		var isExpired bool
		err := row.Scan(&id, &isExpired)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		case !isExpired:
			return &PendingCheckoutError{HoldID: id.String()}
		}
		*expired = id
		return nil
	})
}

// checkLimitSQL counts the units the fan ($1) holds live or bought on the
// event ($2).
const checkLimitSQL = `WITH ` + fansReservations + `
	SELECT coalesce(sum(i.quantity), 0) FROM mine r JOIN reservation_items i ON i.reservation_id = r.id
	WHERE r.event_id = $2 AND (i.live OR i.listing_id IS NOT NULL)
	  AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now()))`

// queueCheckLimit refuses a cart that would take the fan past the event's
// per-customer limit (read by queueLoadTerms into *ev, earlier in the same
// batch), counting paid and live pending units. An expired pending hold
// counts for nothing, as once takeCart has ended it.
func queueCheckLimit(b *pgx.Batch, req HoldRequest, ev *eventTerms) {
	want := len(req.SeatIDs)
	if want == 0 {
		want = req.Quantity
	}
	b.Queue(checkLimitSQL, req.UserID, req.EventID).QueryRow(func(row pgx.Row) error {
		var owned int
		if err := row.Scan(&owned); err != nil {
			return err
		}
		if owned+want > ev.limit {
			return &PurchaseLimitError{Limit: ev.limit, Owned: owned, Requested: want}
		}
		return nil
	})
}

// insertReservationSQL writes the pending reservation and, on first sight,
// the fan's account in one statement: the reservation's foreign key is
// checked at the statement's end, when the account's row is there.
const insertReservationSQL = `WITH fan AS (INSERT INTO users (id) VALUES ($2) ON CONFLICT DO NOTHING)
	INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency, promo_code, fan_email)
	VALUES ($1, $2, $3, 'PENDING_PAYMENT', now() + make_interval(secs => $4), 0, $5, $6, $7)
	RETURNING created_at, expires_at`

// queueInsertReservation queues the pending reservation (and the account on
// first sight) and returns the hold it fills in once b is sent: a resale's,
// whose items are written after it. A hold of the event's own seats writes
// its reservation with its items instead (holdWritesSQL).
func queueInsertReservation(b *pgx.Batch, req HoldRequest, ev eventTerms) *Hold {
	hold := newHold(req)
	promo, email := optionalFields(req)
	b.Queue(insertReservationSQL,
		req.ReservationID, req.UserID, req.EventID, ev.ttl, ev.currency, promo, email).QueryRow(hold.scanInserted)
	return hold
}

// newHold is the pending hold a request makes, before its reservation is
// written.
func newHold(req HoldRequest) *Hold {
	return &Hold{ID: req.ReservationID, UserID: req.UserID, EventID: req.EventID,
		Status: vocab.ReservationPending, PromoCode: req.PromoCode}
}

// optionalFields are the request's promotion code and e-mail as the
// reservation stores them: NULL when empty.
func optionalFields(req HoldRequest) (promo, email *string) {
	if req.PromoCode != "" {
		promo = &req.PromoCode
	}
	if req.FanEmail != "" {
		email = &req.FanEmail
	}
	return promo, email
}

// scanInserted reads the written reservation's times into the hold, and
// maps its insert's refusals: the fan's second pending hold, or an ID
// taken.
func (h *Hold) scanInserted(row pgx.Row) error {
	err := row.Scan(&h.CreatedAt, &h.ExpiresAt)
	switch code, constraint := pgCode(err); {
	case code == pgUniqueViolation && constraint == "reservations_one_pending":
		return &PendingCheckoutError{}
	case code == pgUniqueViolation && constraint == "reservations_pkey":
		return ErrReservationIDTaken
	}
	return err
}

// unit is one line of the cart as taken: a seat, or a quantity of a
// general-admission section.
type unit struct {
	seatID, sectionID string
	qty               int
	base              int64
	category          string
}

// inventoryTake is the take step between its queued statements and its
// outcome.
type inventoryTake struct {
	seats   []takenSeat // what the seats' conditional UPDATE moved
	general *unit       // the places counted, nil when the section had no room
	surge   map[string]int
}

// queueTakeInventory queues the take of what the cart asks for, the named
// seats (best-available seats are named by now) or places of a
// general-admission section, and the read of its sections' surge, which sees
// this cart's take. The terms *ev are read when the answers arrive: they may
// come earlier in the same batch.
func queueTakeInventory(b *pgx.Batch, req HoldRequest, ev *eventTerms) *inventoryTake {
	t := &inventoryTake{}
	if len(req.SeatIDs) == 0 {
		b.Queue(`UPDATE sections SET ga_taken = ga_taken + $3
			WHERE id = $1 AND event_id = $2 AND kind = 'general' AND ga_taken + $3 <= capacity
			RETURNING base_price, category`, req.SectionID, req.EventID, req.Quantity).QueryRow(func(row pgx.Row) error {
			u := unit{sectionID: req.SectionID, qty: req.Quantity}
			err := row.Scan(&u.base, &u.category)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // finish says why
			}
			t.general = &u
			return err
		})
		queueSurge(b, ev, &t.surge, []string{req.SectionID})
		return t
	}
	queueTakeSeats(b, req, ev, t)
	return t
}

// finish returns the units taken, all of them or an error: seats in ID
// order, the order a hold's items are read back in, and the surge of their
// sections.
func (t *inventoryTake) finish(ctx context.Context, tx pgx.Tx, req HoldRequest, ev eventTerms) ([]unit, map[string]int, error) {
	if len(req.SeatIDs) == 0 {
		if t.general == nil {
			return nil, nil, gaUnavailable(ctx, tx, req)
		}
		return []unit{*t.general}, t.surge, nil
	}
	taken, retried, err := takeSeats(ctx, tx, req, t.seats)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(taken, func(a, b takenSeat) int { return strings.Compare(a.id, b.id) })
	units := make([]unit, 0, len(taken))
	for _, s := range taken {
		units = append(units, unit{seatID: s.id, sectionID: s.section, qty: 1, base: s.base, category: s.category})
	}
	surge := t.surge
	if retried {
		// The batch's read saw the first, short take.
		if surge, err = sectionSurge(ctx, tx, unitSections(units), ev); err != nil {
			return nil, nil, err
		}
	}
	return units, surge, nil
}

// applyPromotion uses the cart's promotion, if any, and returns its discount.
func applyPromotion(ctx context.Context, tx pgx.Tx, req HoldRequest, now time.Time) (discount, error) {
	if req.PromoCode == "" {
		return discount{}, nil
	}
	return usePromotion(ctx, tx, req, now)
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

// holdWritesSQL writes what a hold has left to write once its units are
// priced, in one statement: the fan's account on first sight, the
// reservation with its total, every item (one row per element of the
// arrays, in their order), and the hold's inventory.changed outbox row. The
// items' and the account's foreign keys are checked at the statement's end,
// the seats' at commit: all find their rows. Written apart, the reservation
// first, that was a statement per item, two more, and an UPDATE of the
// reservation for its total: a hold's statements and row writes no longer
// grow with its seats, and its reservation is written once.
const holdWritesSQL = `WITH fan AS (
		INSERT INTO users (id) VALUES ($2) ON CONFLICT DO NOTHING
	), res AS (
		INSERT INTO reservations (id, user_id, event_id, status, expires_at, currency, promo_code, fan_email,
			total, fees, tax, tax_rate_bp, prices_include_tax)
		VALUES ($1, $2, $3, 'PENDING_PAYMENT', now() + make_interval(secs => $4), $5, $6, $7, $8, $9, $10, $11, $12)
		RETURNING created_at, expires_at
	), items AS (
		INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity,
			base_price, surge_bps, discount, price_at_lock, ticket_type, fee)
		SELECT $1, $3, i.section_id, i.seat_id, i.quantity, i.base_price, i.surge_bps, i.discount, i.price_at_lock,
			i.ticket_type, i.fee
		FROM unnest($13::text[], $14::text[], $15::int[], $16::bigint[], $17::int[], $18::bigint[], $19::bigint[], $20::text[],
			$21::bigint[]) WITH ORDINALITY
			AS i(section_id, seat_id, quantity, base_price, surge_bps, discount, price_at_lock, ticket_type, fee, n)
		ORDER BY i.n
	), changed AS (
		INSERT INTO outbox (topic, key, payload) VALUES ($22, $23, $24)
	)
	SELECT created_at, expires_at FROM res`

// itemRows are a hold's priced items as holdWritesSQL's arrays, one element
// an item; a nil element is SQL NULL.
type itemRows struct {
	sections                       []string
	seats, types                   []*string
	quantities, surges             []int32
	bases, discounts, prices, fees []int64
}

func (r *itemRows) add(sectionID string, seat, ttype *string, qty int, q pricing.Quote, fee int64) {
	r.sections = append(r.sections, sectionID)
	r.seats = append(r.seats, seat)
	r.types = append(r.types, ttype)
	r.quantities = append(r.quantities, int32(qty))
	r.surges = append(r.surges, int32(q.SurgeBps))
	r.bases = append(r.bases, q.Base)
	r.discounts = append(r.discounts, q.Discount)
	r.prices = append(r.prices, q.PriceAtLock)
	r.fees = append(r.fees, fee)
}

// priceItems freezes each unit's price (base, the section's surge, the
// discount) and queues on b, in one statement (holdWritesSQL), the
// reservation with its total, the item rows and the hold's outbox row
// naming sections; the hold it returns is filled in once b is sent.
func priceItems(b *pgx.Batch, req HoldRequest, ev eventTerms, units []unit,
	surge map[string]int, disc discount, sections []string) (*Hold, error) {
	var total, fees int64
	items := make([]Item, 0, len(units))
	var rows itemRows
	perType := map[string]int{}
	for _, u := range units {
		typ, base, err := typedBase(req, ev, u)
		if err != nil {
			return nil, err
		}
		perType[typ] += u.qty
		if tt := ev.types[typ]; tt != nil && tt.maxPerOrder > 0 && perType[typ] > tt.maxPerOrder {
			return nil, &InvalidError{Field: typeField(req, typ),
				Message: fmt.Sprintf("at most %d tickets of type %s per order", tt.maxPerOrder, typ)}
		}
		q, err := pricing.Price(base, surge[u.sectionID], disc.bps)
		if err != nil {
			return nil, fmt.Errorf("store: price seat %s: %w", u.seatID, err)
		}
		if off := min(disc.amount, q.PriceAtLock); off > 0 {
			q.Discount, q.PriceAtLock = q.Discount+off, q.PriceAtLock-off
		}
		line, err := money.MulInt(q.PriceAtLock, int64(u.qty))
		if err != nil {
			return nil, err
		}
		if total, err = money.AddInt(total, line); err != nil {
			return nil, err
		}
		var seat, ttype *string
		if u.seatID != "" {
			seat = &u.seatID
		}
		if typ != "" {
			ttype = &typ
		}
		fee, err := money.MulInt(ev.serviceFee, int64(u.qty))
		if err != nil {
			return nil, err
		}
		if fees, err = money.AddInt(fees, fee); err != nil {
			return nil, err
		}
		rows.add(u.sectionID, seat, ttype, u.qty, q, fee)
		items = append(items, Item{SeatID: u.seatID, SectionID: u.sectionID, Quantity: u.qty, TicketType: typ, Fee: fee,
			Price: money.Money{Amount: q.PriceAtLock, Currency: ev.currency}, Base: q.Base, SurgeBps: q.SurgeBps, Discount: q.Discount})
	}
	charged, err := money.AddInt(total, fees)
	if err != nil {
		return nil, err
	}
	tax := pricing.Tax(charged, ev.taxBp, ev.taxIncluded)
	if !ev.taxIncluded {
		if charged, err = money.AddInt(charged, tax); err != nil {
			return nil, err
		}
	}
	hold := newHold(req)
	// The times the reservation's insert will write (now() is the
	// transaction's, read with the terms), known before it is sent: the
	// key's record, encoded before the batch goes, carries them.
	hold.CreatedAt, hold.ExpiresAt = ev.now, ev.now.Add(time.Duration(ev.ttl)*time.Second)
	hold.Items, hold.Total = items, money.Money{Amount: charged, Currency: ev.currency}
	hold.Fees, hold.Tax, hold.TaxRateBp = fees, tax, ev.taxBp
	promo, email := optionalFields(req)
	topic, key, payload := sectionsChanged(req.EventID, sections)
	b.Queue(holdWritesSQL, req.ReservationID, req.UserID, req.EventID, ev.ttl, ev.currency, promo, email,
		charged, fees, tax, ev.taxBp, ev.taxIncluded,
		rows.sections, rows.seats, rows.quantities, rows.bases, rows.surges, rows.discounts, rows.prices, rows.types, rows.fees,
		topic, key, payload).QueryRow(hold.scanInserted)
	return hold, nil
}

// typedBase is the ticket type of unit u and its base price before surge
// and discount: the named type's price for the unit's category, or, for a
// unit naming none (or a type without a price of its own for that
// category), the seat's base price, which is the event's first type's.
func typedBase(req HoldRequest, ev eventTerms, u unit) (string, int64, error) {
	typ := req.TicketType
	if t := req.TicketTypes[u.seatID]; u.seatID != "" && t != "" {
		typ = t
	}
	if typ == "" {
		return ev.firstType, u.base, nil
	}
	tt := ev.types[typ]
	if tt == nil {
		return "", 0, &InvalidError{Field: typeField(req, typ), Message: "this event has no ticket type " + typ}
	}
	if p, ok := tt.prices[u.category]; ok {
		return typ, p, nil
	}
	if typ == ev.firstType {
		return typ, u.base, nil // the first type's prices are the event's
	}
	return "", 0, &InvalidError{Field: typeField(req, typ),
		Message: fmt.Sprintf("ticket type %s is not sold for %s seats", typ, u.category)}
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
	category    string
}

// updateSeatsSQL moves every requested seat that is AVAILABLE to HELD: the
// predicate is the rule that a seat has at most one live owner.
const updateSeatsSQL = `UPDATE seats SET status = 'HELD', reservation_id = $3, version = version + 1
	WHERE event_id = $1 AND id = ANY($2) AND status = 'AVAILABLE'
	RETURNING id, section_id, base_price, category`

// takeSeatsSQL is updateSeatsSQL answering, beside each seat it moved, its
// section's capacity and taken seats as the move leaves them: the section's
// count as the statement found it (the seats' trigger adds the statement's
// own seats when it ends) and the seats it took there: one statement where
// the take and the surge read were two.
const takeSeatsSQL = `WITH taken AS (` + updateSeatsSQL + `)
	SELECT t.id, t.section_id, t.base_price, t.category, sec.capacity,
		(SELECT coalesce(sum(c.taken), 0) FROM section_taken c WHERE c.section_id = t.section_id)
			+ count(*) OVER (PARTITION BY t.section_id)
	FROM taken t JOIN sections sec ON sec.id = t.section_id`

// queueTakeSeats queues the take of the cart's seats (takeSeatsSQL) into
// t.seats, and their sections' surge as the take leaves them into t.surge.
func queueTakeSeats(b *pgx.Batch, req HoldRequest, ev *eventTerms, t *inventoryTake) {
	b.Queue(takeSeatsSQL, req.EventID, req.SeatIDs, req.ReservationID).Query(func(rows pgx.Rows) error {
		t.surge = map[string]int{}
		var err error
		t.seats, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (takenSeat, error) {
			var s takenSeat
			var capacity, taken int64
			err := row.Scan(&s.id, &s.section, &s.base, &s.category, &capacity, &taken)
			t.surge[s.section] = pricing.Multiplier(taken, capacity, ev.startsAt, ev.now)
			return s, err
		})
		return err
	})
}

func collectTaken(rows pgx.Rows) ([]takenSeat, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (takenSeat, error) {
		var t takenSeat
		err := row.Scan(&t.id, &t.section, &t.base, &t.category)
		return t, err
	})
}

// takeSeats completes the take of every requested seat, or fails the cart:
// taken is what the first conditional UPDATE moved. Seats held by an expired
// reservation are released here (lazy expiry), locking that reservation's
// row, and the UPDATE runs once more; retried says it did.
func takeSeats(ctx context.Context, tx pgx.Tx, req HoldRequest, taken []takenSeat) (_ []takenSeat, retried bool, _ error) {
	for round := 0; ; round++ {
		if len(taken) == len(req.SeatIDs) {
			return taken, round > 0, nil
		}
		if round > 0 {
			return nil, true, seatsUnavailable(ctx, tx, req, taken)
		}
		// Which seats did not move, and are any of them held by a hold that
		// has expired? Those are ended now; then one more round. The
		// refusal's reads go with the question, since the answer is mostly
		// no.
		var stale []uuid.UUID
		b := &pgx.Batch{}
		b.Queue(`SELECT DISTINCT r.id FROM seats s JOIN reservations r ON r.id = s.reservation_id
			WHERE s.event_id = $1 AND s.id = ANY($2) AND s.status = 'HELD'
			  AND r.status = 'PENDING_PAYMENT' AND r.expires_at <= now() AND r.id <> $3`,
			req.EventID, req.SeatIDs, req.ReservationID).Query(func(rows pgx.Rows) error {
			var err error
			stale, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			return err
		})
		refused := queueRefusal(b, req, taken)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, false, err
		}
		if len(stale) == 0 {
			return nil, false, refused.err(ctx, tx)
		}
		slices.SortFunc(stale, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		for _, id := range stale {
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM reservations WHERE id = $1 FOR UPDATE NOWAIT`, id).Scan(&status)
			if code, _ := pgCode(err); code == pgLockNotAvailable {
				return nil, false, errRetryLazyExpiry
			}
			if err != nil {
				return nil, false, err
			}
			if _, err := endLocked(ctx, tx, id, vocab.ReservationExpired); err != nil {
				return nil, false, err
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
				return nil, false, err
			}
		}
		rows, err := tx.Query(ctx, updateSeatsSQL, req.EventID, req.SeatIDs, req.ReservationID)
		if err != nil {
			return nil, false, err
		}
		if taken, err = collectTaken(rows); err != nil {
			return nil, false, err
		}
	}
}

// seatsUnavailable builds the 409: which requested seats are not free (or do
// not exist), and up to 6 free seats of the same sections, nearest rows
// first, read in one round trip.
func seatsUnavailable(ctx context.Context, tx pgx.Tx, req HoldRequest, taken []takenSeat) error {
	b := &pgx.Batch{}
	r := queueRefusal(b, req, taken)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return r.err(ctx, tx)
}

// refusal is the 409 of a cart whose seats were not all taken, between the
// reads queued for it and its error. The seats' existence and the
// alternatives to the ones not taken are read together (a seat that does
// not exist names no section, so it adds no alternative), on the generic
// plans the hold's transaction runs.
type refusal struct {
	req          HoldRequest
	missing      []string // requested and not taken
	alt          altQuery
	exists, near []string
}

// queueRefusal queues the reads of the refusal of req, taken having moved.
func queueRefusal(b *pgx.Batch, req HoldRequest, taken []takenSeat) *refusal {
	got := map[string]bool{}
	for _, t := range taken {
		got[t.id] = true
	}
	r := &refusal{req: req}
	for _, id := range req.SeatIDs {
		if !got[id] {
			r.missing = append(r.missing, id)
		}
	}
	r.alt = newAltQuery(req.EventID, r.missing, req.SeatIDs, len(req.SeatIDs))
	b.Queue(`SELECT id FROM seats WHERE event_id = $1 AND id = ANY($2)`, req.EventID, req.SeatIDs).Query(func(rows pgx.Rows) error {
		var err error
		r.exists, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	r.alt.queueNear(b, &r.near)
	return r
}

// err is the refusal: seats that do not exist are named as invalid;
// otherwise the seats no longer available, with their alternatives.
func (r *refusal) err(ctx context.Context, tx pgx.Tx) error {
	known := map[string]bool{}
	for _, id := range r.exists {
		known[id] = true
	}
	var unknown, unavailable []string
	for _, id := range r.missing {
		if known[id] {
			unavailable = append(unavailable, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return &InvalidError{Field: "seat_ids", Message: fmt.Sprintf("no such seats in this event: %v", unknown)}
	}
	alts, err := r.alt.finish(ctx, tx, r.near, func() error { return customPlans(ctx, tx) })
	if err != nil {
		return err
	}
	return &SeatUnavailableError{SeatIDs: unavailable, Alternatives: alts,
		Detail: fmt.Sprintf("%d of the %d seats are no longer available", len(unavailable), len(r.req.SeatIDs))}
}

// altQuery is one read of the alternatives to unavailable seats: free seats
// in their sections, nearest to them by row and number, never one of
// exclude, at most limit. Advisory only: the seat map may change before the
// fan asks again.
type altQuery struct {
	eventID              string
	unavailable, exclude []string
	limit                int
}

// newAltQuery asks for three alternatives a seat of the cart (n seats), at
// least six.
func newAltQuery(eventID string, unavailable, exclude []string, n int) altQuery {
	return altQuery{eventID: eventID, unavailable: unavailable, exclude: exclude, limit: max(n, 2) * 3}
}

// queueNear queues alternativesNear, its answer into *near.
func (a altQuery) queueNear(b *pgx.Batch, near *[]string) {
	if len(a.unavailable) == 0 {
		return
	}
	b.Queue(alternativesNear, a.eventID, a.unavailable, a.exclude, a.limit, alternativesBand).Query(func(rows pgx.Rows) error {
		var err error
		*near, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
}

// finish answers near when it filled the limit. Otherwise too few seats are
// free within the band in every row, which mostly means a nearly full
// section: the whole section's free seats decide, after before (nil:
// nothing), since alternativesAll's best plan depends on its parameters.
func (a altQuery) finish(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, near []string, before func() error) ([]string, error) {
	if len(a.unavailable) == 0 || len(near) == a.limit {
		return near, nil
	}
	if before != nil {
		if err := before(); err != nil {
			return nil, err
		}
	}
	rows, err := q.Query(ctx, alternativesAll, a.eventID, a.unavailable, a.exclude, a.limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// The alternatives to taken seats, in one order: free seats of the taken
// seat's row by distance, then free seats of its other rows by distance in
// seat number, row and number breaking ties. alternativesAll ranks every
// free seat of the section. alternativesNear ranks the row's free seats
// (through the section's row index) and, only when they are fewer than the
// limit, the other rows' within alternativesBand seat numbers (through
// seats_available_by_number; the one-time filter on in_row's count skips
// that scan, which visited every row of the section, on the common
// refusal); when it fills the limit its answer is alternativesAll's, since
// every seat left out ranks after the seats it ranked. The row's branch
// tests the status so that no status index is used (IS TRUE): that index
// would visit the whole section. The other rows' branch keeps its own
// LIMIT, so it stays a scan of the section by index for each taken seat:
// without it, its generic plan, made on statistics that saw every seat
// free (an ANALYZE before a sale), joined the taken seats to a scan of
// every seat of every event, about 20 ms a refusal once the row was full
// (BenchmarkHoldHTTPContended: 80 requests a second instead of 1,000). Its
// generic plan was its custom plan on
// the stadium (the seats reach it through ref's primary-key lookup), so it
// runs the generic one, planned once a connection: planned afresh, it cost
// a refusal more than its execution.
const (
	alternativesBand = 3
	alternativesRef  = `WITH ref AS (SELECT section_id, min(row_label) AS row_label, min(number) AS number
		             FROM seats WHERE event_id = $1 AND id = ANY($2) GROUP BY section_id)`
	alternativesAll = alternativesRef + `
		SELECT s.id FROM seats s JOIN ref ON ref.section_id = s.section_id
		WHERE s.status = 'AVAILABLE' AND NOT s.id = ANY($3)
		ORDER BY (s.row_label <> ref.row_label), abs(s.number - ref.number), s.row_label, s.number
		LIMIT $4`
	alternativesNear = alternativesRef + `,
		in_row AS (SELECT c.* FROM ref CROSS JOIN LATERAL (
			SELECT s.id, abs(s.number - ref.number) AS d, s.row_label, s.number
			FROM seats s WHERE s.section_id = ref.section_id AND s.row_label = ref.row_label
			  AND (s.status = 'AVAILABLE') IS TRUE AND NOT s.id = ANY($3)) c
			ORDER BY c.d, c.row_label, c.number LIMIT $4)
		SELECT id FROM (
			SELECT id, false AS other, d, row_label, number FROM in_row
			UNION ALL
			SELECT c.id, true, c.d, c.row_label, c.number FROM ref CROSS JOIN LATERAL (
				SELECT s.id, abs(s.number - ref.number) AS d, s.row_label, s.number
				FROM seats s WHERE s.section_id = ref.section_id AND s.status = 'AVAILABLE'
				  AND s.number BETWEEN ref.number - $5 AND ref.number + $5
				  AND s.row_label <> ref.row_label AND NOT s.id = ANY($3)
				ORDER BY d, s.row_label, s.number LIMIT $4) c
			WHERE (SELECT count(*) FROM in_row) < $4) x
		ORDER BY other, d, row_label, number
		LIMIT $4`
)

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

// usePromotion locks the event's promotion row (the global cap), checks it
// is enabled and in its window, and inserts the use (the per-user cap),
// returning the discount. Codes are unique per event (0019): the lookup is by
// the cart's event and code, so another event's code of the same name, of
// this organisation or another, is never found, and is refused exactly as a
// code that does not exist.
func usePromotion(ctx context.Context, tx pgx.Tx, req HoldRequest, now time.Time) (discount, error) {
	var d discount
	var maxUses, used, perUser, mine int
	var startsAt, endsAt, disabledAt *time.Time
	// The row lock serialises every use of the code, so the account's count
	// read after it cannot race another hold of the same account.
	err := tx.QueryRow(ctx, `SELECT discount_bps, amount_off, max_uses, used, per_user, starts_at, ends_at, disabled_at
		FROM promotions WHERE event_id = $1 AND code = $2 FOR UPDATE`,
		req.EventID, req.PromoCode).Scan(&d.bps, &d.amount, &maxUses, &used, &perUser, &startsAt, &endsAt, &disabledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return discount{}, &InvalidError{Field: "promo_code", Message: "no such promotion for this event"}
	}
	if err != nil {
		return discount{}, err
	}
	switch {
	case disabledAt != nil:
		return discount{}, &InvalidError{Field: "promo_code", Message: "the promotion has been withdrawn"}
	case startsAt != nil && now.Before(*startsAt):
		return discount{}, &InvalidError{Field: "promo_code", Message: "the promotion starts at " + startsAt.UTC().Format(time.RFC3339)}
	case endsAt != nil && !now.Before(*endsAt):
		return discount{}, &InvalidError{Field: "promo_code", Message: "the promotion ended at " + endsAt.UTC().Format(time.RFC3339)}
	}
	if used >= maxUses {
		return discount{}, &PromotionError{Code: req.PromoCode, Reason: "all uses are taken"}
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM promotion_uses WHERE event_id = $1 AND code = $2 AND user_id = $3`,
		req.EventID, req.PromoCode, req.UserID).Scan(&mine); err != nil {
		return discount{}, err
	}
	if mine >= perUser {
		reason := "already used by this account"
		if perUser > 1 {
			reason = fmt.Sprintf("already used %d times by this account, the most allowed", mine)
		}
		return discount{}, &PromotionError{Code: req.PromoCode, Reason: reason}
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO promotion_uses (event_id, code, user_id, reservation_id) VALUES ($1, $2, $3, $4)`,
		req.EventID, req.PromoCode, req.UserID, req.ReservationID)
	b.Queue(`UPDATE promotions SET used = used + 1 WHERE event_id = $1 AND code = $2`, req.EventID, req.PromoCode)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return discount{}, err
	}
	return d, nil
}

// discount is a promotion's: basis points off, or an amount off each unit
// (never below zero).
type discount struct {
	bps    int
	amount int64
}

// surgeBySection reads the named sections' occupancy, for their surge: a
// seated section's taken seats are the sum of its section_taken shards,
// which the seats' triggers keep in every transaction that changes a seat's
// owner (migration 0046), a few rows however full the section is. A cart of
// seats reads it with its take (takeSeatsSQL).
const surgeBySection = `SELECT sec.id, sec.capacity,
		       CASE WHEN sec.kind = 'general' THEN sec.ga_taken
		            ELSE (SELECT coalesce(sum(t.taken), 0) FROM section_taken t WHERE t.section_id = sec.id) END
		FROM sections sec WHERE sec.id = ANY($1)`

// queueSurge queues the surge read of sectionIDs and sets *out to each
// section's multiplier. It reads the occupancy from its own statement's
// snapshot, which includes what this transaction took before it.
func queueSurge(b *pgx.Batch, ev *eventTerms, out *map[string]int, sectionIDs []string) {
	b.Queue(surgeBySection, sectionIDs).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = scanSurge(rows, *ev)
		return err
	})
}

// sectionSurge reads the surge of the given sections now.
func sectionSurge(ctx context.Context, tx pgx.Tx, sectionIDs []string, ev eventTerms) (map[string]int, error) {
	rows, err := tx.Query(ctx, surgeBySection, sectionIDs)
	if err != nil {
		return nil, err
	}
	return scanSurge(rows, ev)
}

func scanSurge(rows pgx.Rows, ev eventTerms) (map[string]int, error) {
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var capacity, taken int64
		if err := rows.Scan(&id, &capacity, &taken); err != nil {
			return nil, err
		}
		out[id] = pricing.Multiplier(taken, capacity, ev.startsAt, ev.now)
	}
	return out, rows.Err()
}

// Alternatives offers free seats near the given unavailable ones, outside any
// transaction (the hint path refuses before one starts): alternativesNear on
// its generic plan, in one snapshot, in one round trip (readInSnapshot).
func (s *Holds) Alternatives(ctx context.Context, eventID string, unavailable, exclude []string, n int) ([]string, error) {
	alt := newAltQuery(eventID, unavailable, exclude, n)
	if len(unavailable) == 0 {
		return nil, nil
	}
	var near []string
	b := &pgx.Batch{}
	alt.queueNear(b, &near)
	if err := readInSnapshot(ctx, s.pool, b); err != nil {
		return nil, err
	}
	return alt.finish(ctx, s.pool, near, nil)
}
