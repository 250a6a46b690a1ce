// Package bulkhead bounds how many callers of one class use a shared
// resource at once (the browse plane's read pool), how many may wait for a
// turn, and for how long. A flood of one class then holds at most that
// class's slots and the rest of the resource stays free for the others; a
// caller that cannot get a slot soon is refused (the edge answers 503 with
// Retry-After) rather than queueing on the pool behind the flood, where it
// would hold a request, a goroutine and a client's patience until its
// deadline.
package bulkhead

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Options size one class's bulkhead.
type Options struct {
	// Slots is how many callers of the class run at once (at least 1).
	Slots int
	// Queue is how many more may wait for a slot; a caller past it is
	// refused at once, so a flood cannot pile up waiters (0: none wait).
	Queue int
	// Wait is how long one caller waits for a slot before it is refused.
	Wait time.Duration
	// RetryAfter is what a refusal tells the client to wait (1s when 0).
	RetryAfter time.Duration
}

// Bulkhead is one class's slots and queue. A nil Bulkhead bounds nothing:
// Do runs its function at once.
type Bulkhead struct {
	class      string
	slots      chan struct{}
	queue      int64
	waiting    atomic.Int64
	wait       time.Duration
	retryAfter time.Duration
	refused    atomic.Int64
}

// New returns the bulkhead of class, sized by o.
func New(class string, o Options) *Bulkhead {
	b := &Bulkhead{class: class, slots: make(chan struct{}, max(o.Slots, 1)), queue: int64(max(o.Queue, 0)),
		wait: o.Wait, retryAfter: o.RetryAfter}
	if b.retryAfter <= 0 {
		b.retryAfter = time.Second
	}
	return b
}

// FullError refuses a caller that found no slot: the queue was full, or
// its wait ran out.
type FullError struct {
	Class string
	// Waited is true when the caller queued and its wait ran out, false
	// when the queue was already full.
	Waited     bool
	RetryAfter time.Duration
}

func (e *FullError) Error() string {
	if e.Waited {
		return fmt.Sprintf("bulkhead: no %s slot became free in time", e.Class)
	}
	return fmt.Sprintf("bulkhead: too many %s callers waiting", e.Class)
}

// Do runs fn in a slot of the class, or returns *FullError without running
// it, or ctx's error when ctx ends while waiting.
func (b *Bulkhead) Do(ctx context.Context, fn func() error) error {
	if b == nil {
		return fn()
	}
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-b.slots }()
	return fn()
}

func (b *Bulkhead) acquire(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	// Counted before waiting, so the bound holds however many arrive at
	// once.
	if b.waiting.Add(1) > b.queue {
		b.waiting.Add(-1)
		b.refused.Add(1)
		return &FullError{Class: b.class, RetryAfter: b.retryAfter}
	}
	defer b.waiting.Add(-1)
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-timer.C:
		b.refused.Add(1)
		return &FullError{Class: b.class, Waited: true, RetryAfter: b.retryAfter}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Refused is how many callers the bulkhead has refused, for metrics and
// tests.
func (b *Bulkhead) Refused() int64 {
	if b == nil {
		return 0
	}
	return b.refused.Load()
}
