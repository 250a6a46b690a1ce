// Package holds is the hold use case of the buy plane, in the order the
// checks cost: the stored idempotent answer, the event's limits (a lock-free
// read), the admission hook for metered events, then the account's rate
// limit and the all-or-nothing seat hint in one Redis round trip, and last
// the PostgreSQL transaction that decides. A rate-limited request is refused
// ahead of any other answer and hints nothing. Any failure after the hint
// gives the hint back.
package holds

import (
	"context"
	"errors"
	"log/slog"

	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/backpressure"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Cart is a validated hold request.
type Cart struct {
	EventID   string
	SeatIDs   []string // sorted, unique
	SectionID string
	Quantity  int
	Adjacent  bool
	PromoCode string
	// Stays are hotel stays: with EventID and seats a package, alone a
	// hotel-only hold (see stays.go). Omitted when empty, so a seat cart's
	// idempotency hash is what it always was.
	Stays []store.StayRequest `json:",omitempty"`
	// ListingIDs are resale listings to buy (sorted, unique), instead of
	// seats; omitted when empty, like Stays.
	ListingIDs []string `json:",omitempty"`
	// TicketTypes (seat -> type) and TicketType (general admission, or
	// every seat the map does not name) choose ticket types; omitted when
	// empty.
	TicketTypes map[string]string `json:",omitempty"`
	TicketType  string            `json:",omitempty"`
}

// Units is how many tickets the cart asks for.
func (c Cart) Units() int {
	if len(c.ListingIDs) > 0 {
		return len(c.ListingIDs)
	}
	if len(c.SeatIDs) > 0 {
		return len(c.SeatIDs)
	}
	return c.Quantity
}

// Admission decides whether a fan may hold on a metered event. The waiting
// room fills it in; until then metered events refuse every hold.
type Admission interface {
	// Check returns nil when pass admits who to eventID, or an error that the
	// API answers with 429 queue-required (or 503 when the room is down).
	Check(ctx context.Context, who session.Identity, eventID, pass string) error
	// Extend keeps the admission while the hold lives.
	Extend(ctx context.Context, who session.Identity, eventID string, until time.Time) error
}

// ErrQueueRequired is returned for a metered event without an admission.
var ErrQueueRequired = errors.New("holds: this sale is metered; join the waiting room")

// ErrSalesPaused refuses a hold or a checkout while the operator has paused
// the event's sales (its controls): retry later.
var ErrSalesPaused = errors.New("holds: sales of this event are paused by the operator; retry shortly")

// SalesOpen refuses with ErrSalesPaused while the event's sales are paused.
func (s *Service) SalesOpen(eventID string) error {
	if s.Dials.For(eventID).SalesPaused {
		return ErrSalesPaused
	}
	return nil
}

// RateLimitedError asks the caller to come back later.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string { return "holds: rate limited" }

// closedAdmission refuses every metered hold: fail closed until a waiting
// room is wired in.
type closedAdmission struct{}

func (closedAdmission) Check(context.Context, session.Identity, string, string) error {
	return ErrQueueRequired
}

func (closedAdmission) Extend(context.Context, session.Identity, string, time.Time) error {
	return nil
}

// Service places and ends holds.
type Service struct {
	Store     *store.Store
	Hints     *seathint.Hints // nil disables hints
	Limiter   *ratelimit.Limiter
	Admission Admission
	Log       *slog.Logger
	// Saga sheds holds on unmetered events while the booking saga is past
	// its bounds (metered events are paced by the waiting room instead): a
	// hold that could not be checked out would only keep seats from fans.
	// Nil never sheds.
	Saga *backpressure.Monitor
	// Dials are the operator's runtime dials; sales_paused refuses new
	// holds and checkouts of the event. Nil: never paused.
	Dials *controls.Watcher
	// MaxUnpaidRoomNights is the most room-nights one account may hold
	// unpaid over all its pending holds (ENCORE_MAX_UNPAID_ROOM_NIGHTS); the
	// hold's transaction enforces it. 0: store.DefaultMaxUnpaidRoomNights.
	MaxUnpaidRoomNights int
	metrics             *metrics
}

type metrics struct {
	holds    *prometheus.CounterVec
	duration prometheus.Histogram
	hintErr  prometheus.Counter
	released *prometheus.CounterVec
	sweepLag prometheus.Gauge
}

// Register creates the service's metrics on reg.
func (s *Service) Register(reg prometheus.Registerer) {
	m := &metrics{
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_holds_total",
			Help: "Hold attempts by result."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "encore_hold_duration_seconds",
			Help: "Time to place a hold, checks included.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		hintErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "encore_seat_hint_errors_total",
			Help: "Seat hint calls that failed; the database decided alone."}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_holds_ended_total",
			Help: "Holds ended, by how."}, []string{"status"}),
	}
	reg.MustRegister(m.holds, m.duration, m.hintErr, m.released)
	s.metrics = m
}

func (s *Service) admission() Admission {
	if s.Admission == nil {
		return closedAdmission{}
	}
	return s.Admission
}

// Answer is what a hold request gets back.
type Answer struct {
	// Hold is the hold this request placed; zero when Replayed.
	Hold store.Hold
	// Body is the hold as the contract's JSON (see Encode). Every replay of
	// the same Idempotency-Key answers these same bytes.
	Body []byte
	// Replayed says an earlier identical request placed the hold and this
	// one executed nothing.
	Replayed bool
}

// Hold places a hold for who and renders its answer once. A request whose
// Idempotency-Key already answered gets that answer back (Replayed), nothing
// re-executed; otherwise it fails with a domain error.
func (s *Service) Hold(ctx context.Context, who session.Identity, cart Cart, idemKey string, reqHash []byte,
	pass string) (ans Answer, err error) {
	start := time.Now()
	defer func() {
		if s.metrics != nil {
			s.metrics.holds.WithLabelValues(resultLabel(err, ans.Replayed)).Inc()
			s.metrics.duration.Observe(time.Since(start).Seconds())
		}
	}()
	if cart.EventID == "" {
		return s.holdStays(ctx, who, cart, idemKey, reqHash)
	}
	if len(cart.ListingIDs) > 0 {
		return s.holdListings(ctx, who, cart, idemKey, reqHash)
	}
	id := reservationID(who.UserID, idemKey)
	ev, prev, err := s.check(ctx, who, cart, idemKey, reqHash, pass, id)
	hinting := s.Hints != nil && len(cart.SeatIDs) > 0
	if err != nil || prev != nil || !hinting {
		// Nothing to hint: the account's rate limit is checked alone, and
		// refuses ahead of any other answer.
		if lerr := s.allow(ctx, who); lerr != nil {
			return Answer{}, lerr
		}
		if err != nil {
			return Answer{}, err
		}
		if prev != nil {
			return s.replay(ctx, who, prev)
		}
	}
	hinted := false
	if hinting {
		if hinted, err = s.hint(ctx, who, cart, id, ev); err != nil {
			return Answer{}, err
		}
	}
	req := store.HoldRequest{
		ReservationID: id, UserID: who.UserID, EventID: cart.EventID, SeatIDs: cart.SeatIDs,
		SectionID: cart.SectionID, Quantity: cart.Quantity, Adjacent: cart.Adjacent, PromoCode: cart.PromoCode,
		TicketTypes: cart.TicketTypes, TicketType: cart.TicketType,
		Stays: cart.Stays, MaxUnpaidRoomNights: s.MaxUnpaidRoomNights, FanEmail: who.Email,
		IdempotencyKey: idemKey, RequestHash: reqHash,
	}
	var r renderer
	req.Render = r.render
	hold, stored, err := s.Store.Holds.CreateHold(ctx, req)
	if errors.Is(err, store.ErrReservationIDTaken) {
		// The key was forgotten after 24 hours and is used afresh: a new ID,
		// without hints (the database decides alone for this rare retry).
		if hinted {
			_ = s.Hints.Release(ctx, cart.EventID, cart.SeatIDs, id.String())
			hinted = false
		}
		req.ReservationID = uuid.New()
		hold, stored, err = s.Store.Holds.CreateHold(ctx, req)
	}
	if err != nil || stored != nil {
		// Duplicates share the reservation ID and so the hints: only a
		// request that failed on its own gives them back.
		if hinted && err != nil && !errors.Is(err, store.ErrRequestInProgress) && !errors.Is(err, store.ErrKeyReused) {
			// A fresh context: the give-back must happen even if ctx ended.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			if rerr := s.Hints.Release(rctx, cart.EventID, cart.SeatIDs, id.String()); rerr != nil {
				s.Log.Warn("release seat hints", "err", rerr)
			}
			cancel()
		}
		if err != nil {
			return Answer{}, err
		}
		return s.replay(ctx, who, stored)
	}
	body, err := r.answer(hold)
	if err != nil {
		return Answer{}, err
	}
	if ev.Metered {
		if err := s.admission().Extend(ctx, who, cart.EventID, hold.ExpiresAt); err != nil {
			s.Log.Warn("extend admission lease", "err", err)
		}
	}
	return Answer{Hold: hold, Body: body}, nil
}

// check runs what may refuse the cart before Redis is written to: the stored
// answer of the same Idempotency-Key (returned, for a replay), the event's
// limits (a lock-free read), and the admission of a metered event or the
// saga's load for another.
func (s *Service) check(ctx context.Context, who session.Identity, cart Cart, idemKey string, reqHash []byte,
	pass string, id uuid.UUID) (store.EventLimits, *store.StoredResponse, error) {
	if idemKey != "" {
		prev, err := s.Store.Holds.LookupIdempotent(ctx, who.UserID, idemKey, reqHash)
		if err != nil || prev != nil {
			return store.EventLimits{}, prev, err
		}
	}
	// The operator's pause first: it is a lookup in memory, and it must
	// answer ahead of any other refusal (a fan with a hold still learns
	// that sales are paused, not that they hold seats already).
	if err := s.SalesOpen(cart.EventID); err != nil {
		return store.EventLimits{}, nil, err
	}
	ev, err := s.Store.Holds.PreCheck(ctx, who.UserID, cart.EventID, cart.Units())
	var pending *store.PendingCheckoutError
	if errors.As(err, &pending) && pending.HoldID == id.String() {
		// A duplicate of a request that committed after our lookup: the
		// transaction finds its stored response.
		err = nil
	}
	if err != nil {
		return ev, nil, err
	}
	if ev.Metered {
		return ev, nil, s.admission().Check(ctx, who, cart.EventID, pass)
	}
	return ev, nil, s.Saga.Check()
}

// allow checks the account's rate limit alone.
func (s *Service) allow(ctx context.Context, who session.Identity) error {
	if s.Limiter == nil {
		return nil
	}
	if ok, wait := s.Limiter.Allow(ctx, who.UserID); !ok {
		return &RateLimitedError{RetryAfter: wait}
	}
	return nil
}

// hint checks the account's rate limit and hints the cart's seats in one
// Redis round trip: a rate-limited cart is hinted nothing. It reports whether
// the hints were written; without Redis the database decides alone.
func (s *Service) hint(ctx context.Context, who session.Identity, cart Cart, id uuid.UUID, ev store.EventLimits) (bool, error) {
	var err error
	if s.Limiter != nil {
		var ok bool
		var wait time.Duration
		ok, wait, err = s.Hints.HoldWithin(ctx, s.Limiter, who.UserID, cart.EventID, cart.SeatIDs, id.String(), ev.HoldTTL)
		if !ok {
			return false, &RateLimitedError{RetryAfter: wait}
		}
	} else {
		err = s.Hints.Hold(ctx, cart.EventID, cart.SeatIDs, id.String(), ev.HoldTTL)
	}
	var contended *seathint.ContendedError
	switch {
	case errors.As(err, &contended):
		alts, aerr := s.Store.Holds.Alternatives(ctx, cart.EventID, contended.SeatIDs, cart.SeatIDs, len(cart.SeatIDs))
		if aerr != nil {
			s.Log.Warn("alternatives", "err", aerr)
		}
		return false, &store.SeatUnavailableError{SeatIDs: contended.SeatIDs, Alternatives: alts,
			Detail: "seats are being held by another fan"}
	case err != nil:
		// Redis is advice: without it the database alone decides.
		if s.metrics != nil {
			s.metrics.hintErr.Inc()
		}
		s.Log.Warn("seat hint unavailable, database decides", "err", err)
		return false, nil
	}
	return true, nil
}

// renderer renders a hold's answer inside the hold's transaction (as
// store.HoldRequest.Render), so the key's record commits with the bytes;
// answer gives the committed hold's bytes back without rendering twice.
type renderer struct {
	hold store.Hold
	body []byte
}

func (r *renderer) render(h store.Hold) ([]byte, error) {
	body, err := Encode(h)
	r.hold, r.body = h, body
	return body, err
}

// answer is the answer of the committed hold h: the bytes rendered in its
// transaction, or, without an Idempotency-Key (nothing rendered), h's.
func (r *renderer) answer(h store.Hold) ([]byte, error) {
	if r.body != nil && r.hold.ID == h.ID {
		return r.body, nil
	}
	return Encode(h)
}

// replay answers a request whose key already placed a hold: the bytes its
// transaction kept. A record without bytes (written before answers were
// kept in the hold's transaction) is rendered from the hold by the same
// encoder, which gives the same bytes every time.
func (s *Service) replay(ctx context.Context, who session.Identity, prev *store.StoredResponse) (Answer, error) {
	if prev.Body != nil {
		return Answer{Body: prev.Body, Replayed: true}, nil
	}
	h, err := s.Store.Holds.GetHold(ctx, prev.ReservationID, who.UserID)
	if err != nil {
		return Answer{}, err
	}
	// What is replayed is the answer to the creation, which showed a pending
	// hold whatever has happened to it since; GET /v1/holds/{id} tells now.
	h.Status = vocab.ReservationPending
	h.EndedAt = nil
	body, err := Encode(h)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Body: body, Replayed: true}, nil
}

// Get reads a hold of userID (any account's when userID is empty); another
// account's hold is store.ErrNotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID, userID string) (store.Hold, error) {
	return s.Store.Holds.GetHold(ctx, id, userID)
}

// idempotencyNamespace scopes reservation IDs derived from idempotency keys.
var idempotencyNamespace = uuid.MustParse("6f1d9a52-5c1e-4f0b-9a57-0c2b8e1f4d3a")

// reservationID is random, or, with an Idempotency-Key, derived from the
// account and key: duplicates of one request then carry the same reservation
// ID, pass each other's seat hints, and queue on the key's lock in the
// database, where the first one's stored response answers them all.
func reservationID(userID, idemKey string) uuid.UUID {
	if idemKey == "" {
		return uuid.New()
	}
	return uuid.NewSHA1(idempotencyNamespace, []byte(userID+"\x00"+idemKey))
}

func resultLabel(err error, replayed bool) string {
	var su *store.SeatUnavailableError
	var pl *store.PurchaseLimitError
	var sl *store.StayLimitError
	var sh *store.StayHeldError
	var rl *RateLimitedError
	var shed *backpressure.OverloadedError
	var ru *store.RoomUnavailableError
	var lu *store.ListingUnavailableError
	switch {
	case replayed:
		return "replayed"
	case err == nil:
		return "held"
	case errors.As(err, &su):
		return "seat_unavailable"
	case errors.As(err, &ru):
		return "room_unavailable"
	case errors.As(err, &lu):
		return "listing_unavailable"
	case errors.As(err, &pl):
		return "purchase_limit"
	case errors.As(err, &sl):
		return "stay_limit"
	case errors.As(err, &sh):
		return "stay_held"
	case errors.As(err, &rl):
		return "rate_limited"
	case errors.Is(err, ErrQueueRequired):
		return "queue_required"
	case errors.As(err, &shed):
		return "shed"
	case errors.Is(err, ErrSalesPaused):
		return "sales_paused"
	default:
		return "error"
	}
}

// Release ends who's pending hold now and gives its hints back; released
// says whether this call ended it. Releasing a hold that already ended is a
// harmless no-op, unless it was paid: a paid booking is cancelled under the
// event's policy, never released (store.ErrNotPending).
func (s *Service) Release(ctx context.Context, who session.Identity, id uuid.UUID) (released bool, err error) {
	ended, err := s.Store.Holds.Release(ctx, id, who.UserID)
	if errors.Is(err, store.ErrNotPending) {
		hold, gerr := s.Store.Holds.GetHold(ctx, id, who.UserID)
		if gerr == nil && hold.Status != vocab.ReservationPaid {
			return false, nil
		}
	}
	if err != nil {
		return false, err
	}
	s.afterEnd(ctx, ended)
	return true, nil
}

func (s *Service) afterEnd(ctx context.Context, e store.Ended) {
	if s.metrics != nil {
		s.metrics.released.WithLabelValues(string(e.Status)).Inc()
	}
	if s.Hints != nil {
		if err := s.Hints.Release(ctx, e.EventID, e.SeatIDs, e.ReservationID.String()); err != nil {
			s.Log.Warn("release seat hints", "reservation", e.ReservationID, "err", err)
		}
	}
}

// Sweep ends expired holds in batches until none are left or ctx ends, and
// returns how many it ended.
func (s *Service) Sweep(ctx context.Context, batch int) (int, error) {
	total := 0
	for {
		ended, err := s.Store.Holds.SweepExpired(ctx, batch)
		if err != nil {
			return total, err
		}
		for _, e := range ended {
			s.afterEnd(ctx, e)
		}
		total += len(ended)
		if len(ended) < batch {
			return total, nil
		}
	}
}

// RunSweeper sweeps every interval until ctx ends, and purges idempotency
// records older than 24 hours once a minute.
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration, batch int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	lastPurge := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Sweep(ctx, batch); err != nil && ctx.Err() == nil {
			s.Log.Warn("sweep expired holds", "err", err)
		}
		// Listings whose resale closed give their tickets back.
		if _, err := s.Store.Resale.ExpireListings(ctx, batch); err != nil && ctx.Err() == nil {
			s.Log.Warn("expire closed resale listings", "err", err)
		}
		if time.Since(lastPurge) > time.Minute {
			lastPurge = time.Now()
			if _, err := s.Store.Holds.PurgeIdempotency(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("purge idempotency records", "err", err)
			}
		}
	}
}

// Expire ends a hold whose time is up (the booking workflow's timer).
func (s *Service) Expire(ctx context.Context, id uuid.UUID) error {
	ended, err := s.Store.Holds.Expire(ctx, id)
	if err != nil {
		return err
	}
	s.afterEnd(ctx, ended)
	return nil
}

// Cancel ends a pending hold on the booking workflow's behalf (the owner was
// checked when the release was asked for).
func (s *Service) Cancel(ctx context.Context, id uuid.UUID) error {
	ended, err := s.Store.Holds.Release(ctx, id, "")
	if err != nil {
		return err
	}
	s.afterEnd(ctx, ended)
	return nil
}
