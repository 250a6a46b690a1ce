package rehearsal

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// progress draws the bar on cfg.Progress until ctx ends: redrawn in place
// twice a second on a terminal, else one line every five seconds.
func (rn *run) progress(ctx context.Context) {
	w := rn.cfg.Progress
	if w == nil {
		return
	}
	every := 5 * time.Second
	if rn.cfg.ProgressTTY {
		every = 500 * time.Millisecond
	}
	for {
		line := rn.progressLine(time.Now(), 30)
		if rn.cfg.ProgressTTY {
			fmt.Fprintf(w, "\r%s\033[K", line)
		} else {
			fmt.Fprintln(w, line)
		}
		if !ctxsleep.Sleep(ctx, every) {
			if rn.cfg.ProgressTTY {
				fmt.Fprintf(w, "\r%s\033[K\n", rn.progressLine(time.Now(), 30))
			}
			return
		}
	}
}

// progressLine is [####      ] fans arrived of all, then admitted, queued,
// held and paid, and the time against the hard deadline.
func (rn *run) progressLine(now time.Time, width int) string {
	n := &rn.rec.n
	arrived := n.arrived.Load()
	filled := min(width, int(arrived*int64(width)/int64(max(rn.cfg.Fans, 1))))
	return fmt.Sprintf("[%s%s] %d/%d arrived, %d queued, %d admitted, %d held, %d paid, %s of at most %s",
		strings.Repeat("#", filled), strings.Repeat(" ", width-filled), arrived, rn.cfg.Fans, n.waiting.Load(),
		n.admitted.Load(), n.holds.Load(), n.paid.Load(), now.Sub(rn.rec.start).Round(time.Second),
		rn.cfg.Duration+rn.cfg.Drain)
}
