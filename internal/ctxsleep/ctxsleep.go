// Package ctxsleep is the one pause of Encore's loops (the outbox relay, the
// rehearsal's fans, the dev servers' start-up waits): a sleep that ends early
// when its context does.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and says whether the wait was whole: false
// when ctx ended first (or had already ended, whatever d).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
