package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/tickets"
)

// bookingHandlers serve a fan's booking and its tickets: read, cancel, the
// rotating QR code.
type bookingHandlers struct {
	bookings *booking.Service
	tickets  *tickets.Wallet
	problems problems
}

// maxBookingWait bounds Prefer: wait on a booking: under the server's 30 s
// read deadline (past it net/http ends the request's context), with room
// for the read that follows the wait.
const maxBookingWait = 20 * time.Second

// bookingWaitDeadline is the booking read's route deadline: the longest wait
// and a read after it.
const bookingWaitDeadline = maxBookingWait + 5*time.Second

// getBooking answers the fan's booking with its ETag. A page that already
// shows it sends the ETag back in If-None-Match: unchanged, the answer is
// 304; with Prefer: wait=N (RFC 7240; at most 20 s) the request is held
// until the booking changes (200 with the new booking) or the N seconds
// pass (304). A page waiting for its payment to be taken and its tickets
// issued thus asks about once a change instead of every few hundred
// milliseconds, and hears of the change at once.
func (h *bookingHandlers) getBooking(c *gin.Context) {
	id, ok := pathUUID(c, "id", "booking")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	inm := c.GetHeader("If-None-Match")
	wait := preferredWait(c.GetHeader("Prefer"), maxBookingWait)
	var changed <-chan struct{}
	var recheck time.Duration // set whenever the loop below can wait
	if inm != "" && wait > 0 {
		// Watched before the first read: a change committed between that
		// read and the wait still wakes it.
		var stop func()
		changed, recheck, stop = h.bookings.Watch(id)
		defer stop()
	}
	until := time.Now().Add(wait)
	for {
		v, err := h.bookings.Get(ctx, identity(c), id)
		if err != nil {
			h.problems.fail(c, err)
			return
		}
		body, err := json.Marshal(v)
		if err != nil {
			h.problems.fail(c, err)
			return
		}
		tag := bodyETag(body)
		c.Header("ETag", tag)
		c.Header("Cache-Control", "private, no-cache")
		if inm == "" || !etagMatches(inm, tag) {
			c.Data(http.StatusOK, "application/json; charset=utf-8", body)
			return
		}
		left := time.Until(until)
		if left <= 0 {
			c.Status(http.StatusNotModified)
			return
		}
		t := time.NewTimer(min(left, recheck))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// The fan left, or the route's deadline came first: what the
			// page has is still the booking as it stands.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				c.Status(http.StatusNotModified)
			}
			return
		}
		t.Stop()
	}
}

// bodyETag is a strong validator of an answer's bytes.
func bodyETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// preferredWait reads RFC 7240's wait preference ("Prefer: wait=10", among
// others, in one header or several), capped at max; 0 when absent or not a
// number of seconds.
func preferredWait(header string, max time.Duration) time.Duration {
	for _, pref := range strings.Split(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(strings.SplitN(pref, ";", 2)[0]), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "wait") {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
		if err != nil || n <= 0 {
			return 0
		}
		if n >= int(max/time.Second) {
			return max // before multiplying: a huge n would overflow to a negative wait
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

func (h *bookingHandlers) cancelBooking(c *gin.Context) {
	id, ok := pathUUID(c, "id", "booking")
	if !ok {
		return
	}
	key, fe := idempotencyKey(c)
	if fe != nil {
		writeProblem(c, Invalid(*fe))
		return
	}
	v, err := h.bookings.Cancel(c.Request.Context(), identity(c), id, key)
	h.problems.answer(c, v, err)
}
