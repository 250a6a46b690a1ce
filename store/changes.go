package store

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bookingChannel is the channel the booking tables' triggers notify
// (migration 0044) with the ID of the booking whose page changed.
const bookingChannel = "booking_changed"

// BookingChanges wakes readers waiting for a booking to change: one
// connection of its own LISTENs on the triggers' channel and passes each
// notification to the watchers of that booking. It is advice, never the
// truth: a waiter reads the booking again when woken, and a notification
// lost while the connection was down is made good by the waiter's own
// periodic read (see Listening).
type BookingChanges struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu       sync.Mutex
	watchers map[uuid.UUID][]*watch

	listening atomic.Bool
}

type watch struct{ ch chan struct{} }

// poke leaves one wake-up pending, never waiting on the reader.
func (w *watch) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// NewBookingChanges listens on pool's database once Run runs.
func NewBookingChanges(pool *pgxpool.Pool, log *slog.Logger) *BookingChanges {
	return &BookingChanges{pool: pool, log: log, watchers: map[uuid.UUID][]*watch{}}
}

// Watch reports changes to booking id on the returned channel (one pending
// wake-up at most: several changes before the reader looks read as one)
// until stop is called. Watch before reading the booking, so a change
// committed between the read and the wait still wakes the reader.
func (b *BookingChanges) Watch(id uuid.UUID) (changed <-chan struct{}, stop func()) {
	w := &watch{ch: make(chan struct{}, 1)}
	b.mu.Lock()
	b.watchers[id] = append(b.watchers[id], w)
	b.mu.Unlock()
	return w.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		ws := slices.DeleteFunc(b.watchers[id], func(x *watch) bool { return x == w })
		if len(ws) == 0 {
			delete(b.watchers, id)
		} else {
			b.watchers[id] = ws
		}
	}
}

// Listening says whether notifications arrive now. While they do not (before
// Run connects, or while it reconnects), a waiter reads again every second
// or so instead of trusting a wake-up.
func (b *BookingChanges) Listening() bool { return b.listening.Load() }

// Watchers counts the bookings watched now (for tests and the metrics).
func (b *BookingChanges) Watchers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers)
}

// wake tells every watcher of id, without waiting on any.
func (b *BookingChanges) wake(id uuid.UUID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.watchers[id] {
		w.poke()
	}
}

// wakeAll tells every watcher: notifications may have been lost.
func (b *BookingChanges) wakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ws := range b.watchers {
		for _, w := range ws {
			w.poke()
		}
	}
}

// Run listens until ctx ends, connecting again (after 0.5 s, doubling up to
// 10 s) whenever the connection fails. Every (re)connection wakes every
// watcher, who reads again: what changed while nobody listened is not lost.
func (b *BookingChanges) Run(ctx context.Context) {
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		err := b.listen(ctx)
		b.listening.Store(false)
		b.wakeAll()
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("booking changes: listening connection lost, connecting again", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// listen is one connection's life: LISTEN, then each notification to its
// watchers. It returns the error that ended it.
func (b *BookingChanges) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+bookingChannel); err != nil {
		return err
	}
	// Woken first, then listening: whoever sees Listening true watches
	// from a clean slate, and a waiter woken here reads after the LISTEN.
	b.wakeAll()
	b.listening.Store(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := uuid.Parse(n.Payload); err == nil {
			b.wake(id)
		}
	}
}
