package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/vocab"
)

// Resale is the repository of fan-to-fan resale listings (migration 0027).
type Resale struct{ base }

// Listing is one ticket offered for resale.
type Listing struct {
	ID          uuid.UUID
	EventID     string
	TicketID    string
	SectionID   string
	SeatID      string
	SellerUser  string
	SellerEmail string
	// FaceValue is what the seller paid for the ticket; Price what a buyer
	// pays; Fee what the platform keeps of it.
	FaceValue, Price, Fee money.Money
	Status                vocab.ListingStatus
	CreatedAt             time.Time
	ClosesAt              time.Time
	EndedAt               *time.Time
	// Held: a buyer's pending hold has the listing now.
	Held bool
	// OfferedTo is the waitlisted fan who has the listing first, until
	// OfferedUntil; OfferedEmail is where that fan is told.
	OfferedTo    string
	OfferedEmail string
	OfferedUntil *time.Time
	// ReservationID is the buyer's booking once SOLD.
	ReservationID *uuid.UUID
	NewTicketID   string
	Payout        ListingPayout
	// Place is the section, row and seat as the venue names them.
	Place Place
}

// ListingPayout is what the seller of a sold listing gets: Amount (price
// less fee), of which Refunded went back to their card and Owed is recorded
// as owed to them. Status is PENDING until the saga's payout step ran.
type ListingPayout struct {
	Amount   money.Money
	Refunded int64
	Owed     int64
	Status   vocab.PayoutStatus
	RefundID string
}

// Errors of resale.
var (
	// ErrTicketNotListable: the ticket is not valid (revoked, transferred,
	// already listed, its booking not paid), offered to someone, or used.
	ErrTicketNotListable = errors.New("store: the ticket cannot be listed now")
	// ErrListingNotActive: the listing was sold, withdrawn or has expired.
	ErrListingNotActive = errors.New("store: the listing is no longer active")
	// ErrListingHeld: a buyer holds or is paying for the listing.
	ErrListingHeld = errors.New("store: a buyer holds this listing")
	// ErrResaleLimit: the ticket or the fan has passed the listing limits.
	ErrResaleLimit = errors.New("store: resale limit reached")
)

// ResaleClosedError refuses a listing or a resale hold on an event whose
// organiser does not allow resale, or whose resale has closed.
type ResaleClosedError struct{ Reason string }

func (e *ResaleClosedError) Error() string { return "store: resale closed: " + e.Reason }

// PriceAboveCapError refuses a listing priced above the event's cap.
type PriceAboveCapError struct{ Cap money.Money }

func (e *PriceAboveCapError) Error() string {
	return fmt.Sprintf("store: price above the resale cap %d %s", e.Cap.Amount, e.Cap.Currency)
}

// ListingUnavailableError refuses a resale hold: the named listings are
// sold, withdrawn, closed, held by another buyer, offered first to a
// waitlisted fan, or the buyer's own.
type ListingUnavailableError struct {
	ListingIDs []string
	Detail     string
}

func (e *ListingUnavailableError) Error() string { return "store: listings unavailable: " + e.Detail }

// ResaleLimits bound listings against touting: how many times one ticket
// may be listed by its holder, and how many listings a fan may have open.
// Hands (TransferLimits.PerTicket) bounds how often a seat changes hands,
// by transfer or sale alike.
type ResaleLimits struct {
	PerTicket, ActivePerFan, Hands int
}

// NewListing is a fan's request to list a ticket.
type NewListing struct {
	ID                      uuid.UUID
	TicketID, Seller, Email string
	Price                   money.Money // Currency "" takes the event's
	Limits                  ResaleLimits
	// WaitlistFirst is how long a fan on the event's waitlist has the new
	// listing before anyone else (0: no first offer).
	WaitlistFirst time.Duration
}

// heldByLive is true when the listing l's reservation r is a live pending
// hold (l and r the query's aliases).
const heldByLive = `(r.status = 'PENDING_PAYMENT' AND r.expires_at > now())`

const listingColumns = `l.id, l.event_id, l.ticket_id, l.section_id, coalesce(l.seat_id, ''), l.seller_user, l.seller_email, l.currency,
	l.face_value, l.price, l.fee,
	CASE WHEN l.status = 'ACTIVE' AND l.closes_at <= now() AND NOT coalesce(` + heldByLive + `, false) THEN 'EXPIRED' ELSE l.status END,
	l.created_at, l.closes_at, l.ended_at, l.status = 'ACTIVE' AND coalesce(` + heldByLive + `, false),
	coalesce(l.offered_to, ''), l.offered_until, CASE WHEN l.status = 'SOLD' THEN l.reservation_id END, coalesce(l.new_ticket_id, ''),
	coalesce(l.payout_status, 'PENDING'), l.payout_refunded, l.payout_owed, coalesce(l.payout_refund_id, ''),
	sec.name, coalesce(st.row_label, ''), coalesce(st.number, 0)`

// listingFrom joins what listingColumns read.
const listingFrom = ` FROM resale_listings l LEFT JOIN reservations r ON r.id = l.reservation_id
	JOIN sections sec ON sec.id = l.section_id LEFT JOIN seats st ON st.id = l.seat_id`

func scanListing(row pgx.CollectableRow) (Listing, error) {
	var l Listing
	var cur string
	err := row.Scan(&l.ID, &l.EventID, &l.TicketID, &l.SectionID, &l.SeatID, &l.SellerUser, &l.SellerEmail, &cur,
		&l.FaceValue.Amount, &l.Price.Amount, &l.Fee.Amount, &l.Status, &l.CreatedAt, &l.ClosesAt, &l.EndedAt, &l.Held,
		&l.OfferedTo, &l.OfferedUntil, &l.ReservationID, &l.NewTicketID,
		&l.Payout.Status, &l.Payout.Refunded, &l.Payout.Owed, &l.Payout.RefundID,
		&l.Place.Section, &l.Place.Row, &l.Place.Number)
	l.FaceValue.Currency, l.Price.Currency, l.Fee.Currency = cur, cur, cur
	l.Payout.Amount = money.Money{Amount: l.Price.Amount - l.Fee.Amount, Currency: cur}
	return l, err
}

func (s *Resale) one(ctx context.Context, q pgx.Tx, id uuid.UUID) (Listing, error) {
	return queryOne(ctx, q, ErrNotFound, scanListing, `SELECT `+listingColumns+listingFrom+` WHERE l.id = $1`, id)
}

// FeeOf is the platform's fee on a resale price at feeBp basis points,
// rounded to the nearest minor unit.
func FeeOf(price int64, feeBp int) int64 { return (price*int64(feeBp) + 5000) / 10000 }

// CapOf is the highest resale price of a ticket bought at face under a cap
// of maxBp basis points of face value (rounded down).
func CapOf(face int64, maxBp int) int64 { return face * int64(maxBp) / 10000 }

// CreateListing lists seller's valid ticket at in.Price in one
// transaction: the ticket becomes LISTED (no gate admits it), the listing
// ACTIVE until the event's resale closes. Another fan's ticket, like a
// missing one, is ErrNotFound. The first fan waiting on the event's
// waitlist (for the ticket's section or any) who has no other first offer
// open gets it first for in.WaitlistFirst.
func (s *Resale) CreateListing(ctx context.Context, in NewListing) (Listing, error) {
	var out Listing
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var (
			status, resStatus, eventID, sectionID string
			seatID                                *string
			seq                                   int
			resID                                 uuid.UUID
			offered, used                         bool
		)
		err := tx.QueryRow(ctx, `SELECT t.status, r.status, t.event_id, t.section_id, t.seat_id, t.holder_seq, t.reservation_id,
				EXISTS (SELECT 1 FROM ticket_transfers x WHERE x.ticket_id = t.id AND x.status = 'PENDING' AND x.expires_at > now()),
				EXISTS (SELECT 1 FROM door_scans d WHERE d.event_id = t.event_id AND d.ticket_id = t.id AND d.direction = 'in')
			FROM tickets t JOIN reservations r ON r.id = t.reservation_id
			WHERE t.id = $1 AND t.user_id = $2 FOR UPDATE OF t`, in.TicketID, in.Seller).
			Scan(&status, &resStatus, &eventID, &sectionID, &seatID, &seq, &resID, &offered, &used)
		if err = orNotFound(err); err != nil {
			return err
		}
		if status != string(vocab.TicketValid) || resStatus != string(vocab.ReservationPaid) || offered || used {
			return ErrTicketNotListable
		}
		var (
			enabled          bool
			maxBp, feeBp     int
			closesAt, now    time.Time
			evStatus, evCurr string
		)
		if err := tx.QueryRow(ctx, `SELECT resale_enabled, resale_max_price_bp, resale_fee_bp,
				starts_at - make_interval(mins => resale_closes_minutes), now(), status, currency
			FROM events WHERE id = $1 FOR KEY SHARE`, eventID).Scan(&enabled, &maxBp, &feeBp, &closesAt, &now, &evStatus, &evCurr); err != nil {
			return err
		}
		switch {
		case !enabled:
			return &ResaleClosedError{Reason: "the organiser does not allow resale for this event"}
		case evStatus == string(vocab.EventCancelled):
			return &ResaleClosedError{Reason: "the event is cancelled"}
		case !now.Before(closesAt):
			return &ResaleClosedError{Reason: "resale for this event closed at " + closesAt.UTC().Format(time.RFC3339)}
		}
		if in.Price.Currency != "" && in.Price.Currency != evCurr {
			return &InvalidError{Field: "price.currency", Message: "this event sells in " + evCurr}
		}
		// What the seller paid for this place: its line in the booking the
		// ticket belongs to (a resale booking's line is the resale price).
		var face int64
		if err := tx.QueryRow(ctx, `SELECT price_at_lock FROM reservation_items
			WHERE reservation_id = $1 AND section_id = $2 AND seat_id IS NOT DISTINCT FROM $3 ORDER BY id LIMIT 1`,
			resID, sectionID, seatID).Scan(&face); err != nil {
			return err
		}
		if limit := CapOf(face, maxBp); in.Price.Amount > limit {
			return &PriceAboveCapError{Cap: money.Money{Amount: limit, Currency: evCurr}}
		}
		if in.Limits.Hands > 0 && seq >= in.Limits.Hands {
			return ErrResaleLimit
		}
		var listedBefore, active int
		if err := tx.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM resale_listings WHERE ticket_id = $1),
				(SELECT count(*) FROM resale_listings WHERE seller_user = $2 AND status = 'ACTIVE')`,
			in.TicketID, in.Seller).Scan(&listedBefore, &active); err != nil {
			return err
		}
		if (in.Limits.PerTicket > 0 && listedBefore >= in.Limits.PerTicket) || (in.Limits.ActivePerFan > 0 && active >= in.Limits.ActivePerFan) {
			return ErrResaleLimit
		}
		var offeredTo, offeredEmail *string
		if in.WaitlistFirst > 0 {
			err := tx.QueryRow(ctx, `SELECT w.user_id, w.email FROM waitlist_entries w
				WHERE w.event_id = $1 AND w.status = 'WAITING' AND w.user_id <> $2 AND (w.section_id IS NULL OR w.section_id = $3)
				  AND NOT EXISTS (SELECT 1 FROM resale_listings o WHERE o.event_id = $1 AND o.offered_to = w.user_id
				                  AND o.status = 'ACTIVE' AND o.offered_until > now())
				ORDER BY w.id LIMIT 1`, eventID, in.Seller, sectionID).Scan(&offeredTo, &offeredEmail)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		var until *time.Time
		if offeredTo != nil {
			u := now.Add(in.WaitlistFirst)
			until = &u
		}
		if _, err := tx.Exec(ctx, `INSERT INTO resale_listings (id, event_id, ticket_id, section_id, seat_id, seller_user, seller_email,
				currency, face_value, price, fee, closes_at, offered_to, offered_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			in.ID, eventID, in.TicketID, sectionID, seatID, in.Seller, in.Email, evCurr, face, in.Price.Amount,
			FeeOf(in.Price.Amount, feeBp), closesAt, offeredTo, until); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE tickets SET status = 'LISTED', listed_at = statement_timestamp() WHERE id = $1`, in.TicketID); err != nil {
			return err
		}
		if out, err = s.one(ctx, tx, in.ID); err != nil {
			return err
		}
		if offeredEmail != nil {
			out.OfferedEmail = *offeredEmail
		}
		return nil
	})
	return out, err
}

// lockListing reads listing id under its row lock, with whether a live
// hold has it.
func lockListing(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Listing, error) {
	var l Listing
	if _, err := lockListings(ctx, tx, []uuid.UUID{id}); err != nil {
		return l, err
	}
	err := tx.QueryRow(ctx, `SELECT l.seller_user, l.status, l.ticket_id, coalesce(`+heldByLive+`, false)
		FROM resale_listings l LEFT JOIN reservations r ON r.id = l.reservation_id WHERE l.id = $1`, id).
		Scan(&l.SellerUser, &l.Status, &l.TicketID, &l.Held)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, ErrNotFound
	}
	l.ID = id
	return l, err
}

// lockListings locks the listings ids (those that exist) in ID order and
// returns them. The lock is taken alone, before the listings' holds are
// read: a statement that joined the reservation while it waited for the
// lock would re-check only the listing's new row against the reservation
// it joined before (READ COMMITTED's recheck), and miss the hold that the
// lock's previous owner just committed. The next statement sees it.
func lockListings(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) ([]uuid.UUID, error) {
	return queryIDs(ctx, tx, `SELECT id FROM resale_listings WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
}

// WithdrawListing takes seller's listing off sale and gives the ticket back
// VALID (its key_changed_at moves, so the gate's next delta lists it again).
// A listing a buyer holds or pays for is ErrListingHeld; one no longer
// active ErrListingNotActive; another fan's ErrNotFound.
func (s *Resale) WithdrawListing(ctx context.Context, id uuid.UUID, seller string) (Listing, error) {
	var out Listing
	err := s.tx(ctx, func(tx pgx.Tx) error {
		l, err := lockListing(ctx, tx, id)
		if err != nil {
			return err
		}
		if l.SellerUser != seller {
			return ErrNotFound
		}
		if l.Status != vocab.ListingActive {
			return ErrListingNotActive
		}
		if l.Held {
			return ErrListingHeld
		}
		if err := endListing(ctx, tx, id, vocab.ListingWithdrawn); err != nil {
			return err
		}
		out, err = s.one(ctx, tx, id)
		return err
	})
	return out, err
}

// endListing ends a locked ACTIVE listing as to and makes its LISTED ticket
// VALID again.
func endListing(ctx context.Context, tx pgx.Tx, id uuid.UUID, to vocab.ListingStatus) error {
	var ticket string
	if err := tx.QueryRow(ctx, `UPDATE resale_listings SET status = $2, ended_at = now(), reservation_id = NULL
		WHERE id = $1 AND status = 'ACTIVE' RETURNING ticket_id`, id, string(to)).Scan(&ticket); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE tickets SET status = 'VALID', key_changed_at = statement_timestamp()
		WHERE id = $1 AND status = 'LISTED'`, ticket)
	return err
}

// ExpireListings ends, in batches of at most limit, the active listings
// whose resale has closed and that no live hold has, and gives their
// tickets back; it returns how many it ended.
func (s *Resale) ExpireListings(ctx context.Context, limit int) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx pgx.Tx) error {
		ids, err := queryIDs(ctx, tx, `SELECT id FROM resale_listings WHERE status = 'ACTIVE' AND closes_at <= now()
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		// Locked, the holds are read afresh (see lockListings): a held
		// listing stays until its hold ends.
		ids, err = queryIDs(ctx, tx, `SELECT l.id FROM resale_listings l LEFT JOIN reservations r ON r.id = l.reservation_id
			WHERE l.id = ANY($1) AND NOT coalesce(`+heldByLive+`, false) ORDER BY l.id`, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := endListing(ctx, tx, id, vocab.ListingExpired); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// EventListings lists an event's listings a buyer may hold now (active,
// open, not held), cheapest first, at most 200.
func (s *Resale) EventListings(ctx context.Context, eventID string) ([]Listing, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+listingColumns+listingFrom+`
		WHERE l.event_id = $1 AND l.status = 'ACTIVE' AND l.closes_at > now() AND NOT coalesce(`+heldByLive+`, false)
		ORDER BY l.price, l.id LIMIT 200`, eventID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanListing)
}

// ListingsOf lists seller's listings, newest first, at most 100.
func (s *Resale) ListingsOf(ctx context.Context, seller string) ([]Listing, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+listingColumns+listingFrom+`
		WHERE l.seller_user = $1 ORDER BY l.created_at DESC LIMIT 100`, seller)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanListing)
}

// ResaleHoldRequest is a buyer's cart of listings.
type ResaleHoldRequest struct {
	ReservationID  uuid.UUID
	UserID         string
	FanEmail       string
	EventID        string
	ListingIDs     []uuid.UUID // sorted, unique
	IdempotencyKey string
	RequestHash    []byte
	Render         func(Hold) ([]byte, error)
}

// CreateResaleHold holds every listing of the cart for the buyer or none,
// in one transaction: the key's lock and lookup, the event (resale open),
// the buyer's pending checkout and purchase limit, the listings locked in
// ID order (one live hold per listing: a listing a live pending hold has is
// refused), the reservation and one line per listing at its price. The
// listing rows' locks are what make two buyers of one listing one hold.
func (s *Holds) CreateResaleHold(ctx context.Context, req ResaleHoldRequest) (Hold, *StoredResponse, error) {
	return retryLazyExpiry(func() (Hold, *StoredResponse, error) { return s.createResaleHold(ctx, req) })
}

func (s *Holds) createResaleHold(ctx context.Context, req ResaleHoldRequest) (Hold, *StoredResponse, error) {
	hr := HoldRequest{ReservationID: req.ReservationID, UserID: req.UserID, EventID: req.EventID, FanEmail: req.FanEmail,
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.RequestHash, Render: req.Render, Quantity: len(req.ListingIDs)}
	return s.runHold(ctx, hr, func(b *pgx.Batch, ev *eventTerms) { queueResaleTerms(b, req.EventID, ev) }, nil,
		func(tx pgx.Tx, c checks) (Hold, error) { return takeListings(ctx, tx, hr, req.ListingIDs, c) })
}

// queueResaleTerms reads the event's terms for a resale hold: a published,
// not cancelled event whose organiser allows resale. The primary sale's
// window does not apply (a sold-out event's tickets resell after it).
func queueResaleTerms(b *pgx.Batch, eventID string, ev *eventTerms) {
	b.Queue(`SELECT currency, per_customer_limit, hold_ttl_seconds, starts_at, now(), status, resale_enabled
		FROM events WHERE id = $1 FOR KEY SHARE`, eventID).QueryRow(func(row pgx.Row) error {
		var status vocab.EventStatus
		var enabled bool
		err := row.Scan(&ev.currency, &ev.limit, &ev.ttl, &ev.startsAt, &ev.now, &status, &enabled)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && status == vocab.EventDraft:
			return errNoSuchEvent()
		case err != nil:
			return err
		case status == vocab.EventCancelled:
			return &ResaleClosedError{Reason: "the event is cancelled"}
		case !enabled:
			return &ResaleClosedError{Reason: "the organiser does not allow resale for this event"}
		}
		return nil
	})
}

// takeListings is the resale hold once the checks passed.
func takeListings(ctx context.Context, tx pgx.Tx, req HoldRequest, ids []uuid.UUID, c checks) (Hold, error) {
	if c.expiredPending != uuid.Nil {
		if _, err := endLocked(ctx, tx, c.expiredPending, vocab.ReservationExpired); err != nil {
			return Hold{}, err
		}
	}
	if _, err := lockListings(ctx, tx, ids); err != nil {
		return Hold{}, err
	}
	rows, err := tx.Query(ctx, `SELECT l.id, l.section_id, coalesce(l.seat_id, ''), l.seller_user, l.face_value, l.price,
			l.status = 'ACTIVE' AND l.closes_at > now(), coalesce(`+heldByLive+`, false),
			coalesce(l.offered_to, ''), coalesce(l.offered_until > now(), false), l.offered_until
		FROM resale_listings l LEFT JOIN reservations r ON r.id = l.reservation_id
		WHERE l.id = ANY($1) AND l.event_id = $2 ORDER BY l.id`, ids, req.EventID)
	if err != nil {
		return Hold{}, err
	}
	type line struct {
		id            uuid.UUID
		section, seat string
		seller        string
		face, price   int64
		open, held    bool
		offeredTo     string
		offerLive     bool
		offeredUntil  *time.Time
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (line, error) {
		var l line
		err := row.Scan(&l.id, &l.section, &l.seat, &l.seller, &l.face, &l.price, &l.open, &l.held, &l.offeredTo, &l.offerLive, &l.offeredUntil)
		return l, err
	})
	if err != nil {
		return Hold{}, err
	}
	found := map[uuid.UUID]line{}
	for _, l := range lines {
		found[l.id] = l
	}
	refuse := func(detail string, bad []string) error {
		return &ListingUnavailableError{ListingIDs: bad, Detail: detail}
	}
	var missing, closed, held, own, offered []string
	var until time.Time
	for _, id := range ids {
		l, ok := found[id]
		switch {
		case !ok:
			missing = append(missing, id.String())
		case !l.open:
			closed = append(closed, id.String())
		case l.held:
			held = append(held, id.String())
		case l.seller == req.UserID:
			own = append(own, id.String())
		case l.offerLive && l.offeredTo != req.UserID:
			offered = append(offered, id.String())
			until = *l.offeredUntil
		}
	}
	switch {
	case len(missing) > 0:
		return Hold{}, refuse("no such listing for this event", missing)
	case len(closed) > 0:
		return Hold{}, refuse("sold, withdrawn or closed", closed)
	case len(held) > 0:
		return Hold{}, refuse("another fan holds it", held)
	case len(own) > 0:
		return Hold{}, refuse("your own listing", own)
	case len(offered) > 0:
		return Hold{}, refuse("offered first to a fan on the waitlist until "+until.UTC().Format(time.RFC3339), offered)
	}
	b := &pgx.Batch{}
	hold := queueInsertReservation(b, req, c.terms)
	var total int64
	for _, id := range ids {
		l := found[id]
		var seat *string
		if l.seat != "" {
			seat = &l.seat
		}
		b.Queue(`INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity,
			base_price, surge_bps, discount, price_at_lock, live, listing_id) VALUES ($1, $2, $3, $4, 1, $5, 10000, 0, $6, false, $7)`,
			req.ReservationID, req.EventID, l.section, seat, l.face, l.price, l.id)
		hold.Items = append(hold.Items, Item{SeatID: l.seat, SectionID: l.section, Quantity: 1, ListingID: l.id.String(),
			Price: money.Money{Amount: l.price, Currency: c.terms.currency}, Base: l.face, SurgeBps: 10000})
		if total, err = money.AddInt(total, l.price); err != nil {
			return Hold{}, err
		}
	}
	b.Queue(`UPDATE resale_listings SET reservation_id = $1 WHERE id = ANY($2)`, req.ReservationID, ids)
	b.Queue(`UPDATE reservations SET total = $2 WHERE id = $1`, req.ReservationID, total)
	hold.Total = money.Money{Amount: total, Currency: c.terms.currency}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return Hold{}, err
	}
	if err := sendKeyRecord(ctx, tx, req, *hold); err != nil {
		return Hold{}, err
	}
	return *hold, nil
}

// sellListings, inside ConfirmSale's transaction with the reservation
// locked PAID, marks the hold's listings SOLD. Every listing line must
// still be this hold's and its ticket still LISTED, or the sale is
// ErrUnsellable (nothing changes: the transaction rolls back).
func sellListings(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	var lines, sold int
	err := tx.QueryRow(ctx, `WITH s AS (
			UPDATE resale_listings l SET status = 'SOLD', ended_at = now()
			FROM tickets t WHERE l.reservation_id = $1 AND l.status = 'ACTIVE' AND t.id = l.ticket_id AND t.status = 'LISTED'
			RETURNING l.id)
		SELECT (SELECT count(*) FROM reservation_items WHERE reservation_id = $1 AND listing_id IS NOT NULL), (SELECT count(*) FROM s)`, id).
		Scan(&lines, &sold)
	if err != nil {
		return err
	}
	if sold != lines {
		return ErrUnsellable
	}
	return nil
}

// releaseListings, inside endLocked, lets go of the listings the ending
// reservation had: a hold's, or a sale undone before its tickets moved
// (back on sale; the sweeper expires one whose resale has closed).
func queueReleaseListings(b *pgx.Batch, id uuid.UUID) {
	b.Queue(`UPDATE resale_listings SET status = 'ACTIVE', ended_at = NULL, reservation_id = NULL
		WHERE reservation_id = $1 AND new_ticket_id IS NULL AND status IN ('ACTIVE', 'SOLD')`, id)
}

// ResoldTicket is the new ticket a resale issues the buyer: its ID and
// sealed secret (made by the caller, as the saga's issue step makes every
// ticket's).
type ResoldTicket struct {
	ID           string
	SecretSealed []byte
}

// IssueResold moves each sold listing of the paid booking id to its buyer
// in one transaction: the seller's ticket becomes TRANSFERRED (with
// revoked_at, which the gate's next delta looks for) and the buyer holds a
// new ticket in their own booking, with new key material from fresh (one
// per listing, in listing order; a listing already moved keeps its ticket,
// so a retried step adds nothing). It returns the booking's tickets. A
// booking no longer PAID is ErrNotPaid.
func (s *Resale) IssueResold(ctx context.Context, id uuid.UUID, fresh []ResoldTicket) ([]string, error) {
	var out []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var status, user string
		if err := tx.QueryRow(ctx, `SELECT status, user_id FROM reservations WHERE id = $1 FOR SHARE`, id).Scan(&status, &user); err != nil {
			return err
		}
		if status != string(vocab.ReservationPaid) {
			return ErrNotPaid
		}
		rows, err := tx.Query(ctx, `SELECT l.id, l.ticket_id, coalesce(l.new_ticket_id, '') FROM resale_listings l
			WHERE l.reservation_id = $1 AND l.status = 'SOLD' ORDER BY l.id FOR UPDATE`, id)
		if err != nil {
			return err
		}
		type sold struct {
			id         uuid.UUID
			old, moved string
		}
		listings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sold, error) {
			var x sold
			err := row.Scan(&x.id, &x.old, &x.moved)
			return x, err
		})
		if err != nil {
			return err
		}
		for i, x := range listings {
			if x.moved != "" {
				out = append(out, x.moved)
				continue
			}
			if i >= len(fresh) {
				return fmt.Errorf("store: %d new tickets for %d listings", len(fresh), len(listings))
			}
			nt := fresh[i]
			tag, err := tx.Exec(ctx, `UPDATE tickets SET status = 'TRANSFERRED', transferred_at = statement_timestamp(),
				revoked_at = statement_timestamp() WHERE id = $1 AND status = 'LISTED'`, x.old)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return ErrTicketNotListable
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tickets (id, reservation_id, event_id, section_id, seat_id, unit, user_id, secret_sealed, holder_seq)
				SELECT $2, $3, event_id, section_id, seat_id, $4, $5, $6, holder_seq + 1 FROM tickets WHERE id = $1`,
				x.old, nt.ID, id, i+1, user, nt.SecretSealed); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE resale_listings SET new_ticket_id = $2 WHERE id = $1`, x.id, nt.ID); err != nil {
				return err
			}
			out = append(out, nt.ID)
		}
		return nil
	})
	return out, err
}

// PayoutDue is one seller to pay for a sold listing: Amount (price less
// fee) at most Refundable of it back to the card of IntentID (the payment
// the seller bought the ticket with; empty when they hold it by transfer,
// or their payment was not captured), the rest owed.
type PayoutDue struct {
	ListingID   uuid.UUID
	SellerEmail string
	Amount      money.Money
	IntentID    string
	Refundable  int64
	// SellerBooking is the booking the seller's payment belongs to.
	SellerBooking uuid.UUID
}

// PayoutsDue lists the sold listings of booking id whose seller has not
// been paid yet.
func (s *Resale) PayoutsDue(ctx context.Context, id uuid.UUID) ([]PayoutDue, error) {
	rows, err := s.pool.Query(ctx, `SELECT l.id, l.seller_email, l.price - l.fee, l.currency,
			CASE WHEN sr.user_id = l.seller_user AND p.status IN ('CAPTURED', 'REFUNDED') THEN coalesce(p.intent_id, '') ELSE '' END,
			least(l.price - l.fee, l.face_value), t.reservation_id
		FROM resale_listings l JOIN tickets t ON t.id = l.ticket_id JOIN reservations sr ON sr.id = t.reservation_id
		LEFT JOIN payments p ON p.reservation_id = sr.id
		WHERE l.reservation_id = $1 AND l.status = 'SOLD' AND l.payout_status IS NULL ORDER BY l.id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (PayoutDue, error) {
		var d PayoutDue
		err := row.Scan(&d.ListingID, &d.SellerEmail, &d.Amount.Amount, &d.Amount.Currency, &d.IntentID, &d.Refundable, &d.SellerBooking)
		if d.IntentID == "" {
			d.Refundable = 0
		}
		return d, err
	})
}

// RecordPayout records how a sold listing's seller was paid: refunded to
// their card (refundID) and owed; the two make the payout (a CHECK). A
// payout already recorded is left as it is (a retried step).
func (s *Resale) RecordPayout(ctx context.Context, listingID uuid.UUID, refunded, owed int64, refundID string) error {
	status := vocab.PayoutPaid
	if owed > 0 {
		status = vocab.PayoutOwed
	}
	var rid *string
	if refundID != "" {
		rid = &refundID
	}
	_, err := s.pool.Exec(ctx, `UPDATE resale_listings SET payout_status = $2, payout_refunded = $3, payout_owed = $4,
			payout_refund_id = $5, paid_out_at = now()
		WHERE id = $1 AND payout_status IS NULL`, listingID, string(status), refunded, owed, rid)
	return err
}

// auditResale fills r's resale counts.
func (s *Holds) auditResale(ctx context.Context, eventID string, r *AuditReport) error {
	return s.pool.QueryRow(ctx, `SELECT
		  (SELECT count(*) FROM (SELECT i.listing_id FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
		     WHERE i.listing_id IS NOT NULL AND ($1 = '' OR i.event_id = $1)
		       AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now()))
		     GROUP BY i.listing_id HAVING count(*) > 1) x),
		  (SELECT count(*) FROM resale_listings l WHERE l.status = 'SOLD' AND ($1 = '' OR l.event_id = $1) AND (
		     NOT EXISTS (SELECT 1 FROM reservation_items i WHERE i.reservation_id = l.reservation_id AND i.listing_id = l.id
		                 AND i.price_at_lock = l.price)
		     OR (l.payout_status IS NOT NULL AND l.payout_refunded + l.payout_owed + l.fee <> l.price))),
		  (SELECT count(*) FROM resale_listings l JOIN tickets o ON o.id = l.ticket_id
		     WHERE l.new_ticket_id IS NOT NULL AND o.status IN ('VALID', 'LISTED') AND ($1 = '' OR l.event_id = $1))
		  + (SELECT count(*) FROM (SELECT t.seat_id FROM tickets t WHERE t.seat_id IS NOT NULL AND t.status IN ('VALID', 'LISTED')
		       AND ($1 = '' OR t.event_id = $1) GROUP BY t.seat_id HAVING count(*) > 1) y)`, eventID).
		Scan(&r.ListingsSoldTwice, &r.ResaleMoneyUnbalanced, &r.PlacesWithTwoHolders)
}

// SoldListings counts the sold listings of booking id: how many tickets
// its issue step moves.
func (s *Resale) SoldListings(ctx context.Context, id uuid.UUID) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM resale_listings WHERE reservation_id = $1 AND status = 'SOLD'`, id).Scan(&n)
	return n, err
}
