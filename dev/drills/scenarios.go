package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// restore puts a part back even when the drill failed half-way, so a drill
// never leaves the stack broken.
func (t *Target) restore(ctx context.Context, path string) {
	_ = t.flip(context.WithoutCancel(ctx), path, map[string]bool{"running": true})
}

// answered is a hold's correct answer while a part is down: placed, or a
// retryable 503; never a 500, never a refusal that blames the fan.
// booked signs a new fan in, holds one seat of the unmetered event and
// checks it out with pm; it returns the fan's token and the checkout's
// answer.
func (t *Target) booked(ctx context.Context, pm string) (fan string, co map[string]any, err error) {
	if fan, err = t.fan(ctx); err != nil {
		return "", nil, err
	}
	st, hold, err := t.hold(ctx, fan)
	if err != nil || st != http.StatusCreated {
		return "", nil, fmt.Errorf("hold: status %d, %v", st, err)
	}
	holdID, _ := hold["hold_id"].(string)
	co, err = t.checkout(ctx, fan, holdID, pm)
	return fan, co, err
}

// paid waits until the fan's booking is PAID and returns how long it took.
func (t *Target) paid(ctx context.Context, fan, bookingID string) (time.Duration, error) {
	return until(ctx, t.Limit, "the booking being PAID", func() (bool, error) {
		s, err := t.bookingStatus(ctx, fan, bookingID)
		return s == "PAID", err
	})
}

// paidBooking is a fan's booking paid by card, once the stack says PAID.
func (t *Target) paidBooking(ctx context.Context) (fan, bookingID string, err error) {
	fan, co, err := t.booked(ctx, "pm_card_visa")
	if err != nil {
		return "", "", err
	}
	bookingID, _ = co["booking_id"].(string)
	if _, err := t.paid(ctx, fan, bookingID); err != nil {
		return "", "", err
	}
	return fan, bookingID, nil
}

func answered(st int) bool { return st == http.StatusCreated || st == http.StatusServiceUnavailable }

func redisDown(ctx context.Context, t *Target, r *Result) error {
	fan, err := t.fan(ctx)
	if err != nil {
		return err
	}
	join := func() (int, error) {
		st, _, err := t.call(ctx, "POST", t.API+"/v1/events/"+t.Metered+"/queue", fan, map[string]any{}, nil)
		return st, err
	}
	if err := t.flip(ctx, "/drill/redis", map[string]bool{"running": false}); err != nil {
		return err
	}
	defer t.restore(ctx, "/drill/redis")
	last := 0
	if _, err := until(ctx, 15*time.Second, "admission failing closed", func() (bool, error) {
		st, err := join()
		last = st
		return st == http.StatusServiceUnavailable, err
	}); err != nil {
		return fmt.Errorf("admission did not fail closed (last answer %d): %w", last, err)
	}
	r.note("Redis down: joining the metered sale answered 503, nobody admitted (fail closed)")
	st, hold, err := t.hold(ctx, fan)
	if err != nil || !answered(st) {
		return fmt.Errorf("a hold without Redis answered %d (%v): only a success or a retryable 503 is correct", st, err)
	}
	r.note("Redis down: a hold on the unmetered sale answered %d (the database decides alone)", st)
	if id, ok := hold["hold_id"].(string); ok {
		defer t.call(context.WithoutCancel(ctx), "DELETE", t.API+"/v1/holds/"+id, fan, nil, nil)
	}
	start := time.Now()
	if err := t.flip(ctx, "/drill/redis", map[string]bool{"running": true}); err != nil {
		return err
	}
	if _, err := until(ctx, t.Limit, "the waiting room answering again", func() (bool, error) {
		st, err := join()
		return st > 0 && st < 500, err
	}); err != nil {
		return err
	}
	r.recovered(start, "Redis back: the waiting room answered again %.1fs after Redis was started")
	return nil
}

func relayStopped(ctx context.Context, t *Target, r *Result) error {
	fan, err := t.fan(ctx)
	if err != nil {
		return err
	}
	sec, err := t.section(ctx, t.Unmetered)
	if err != nil {
		return err
	}
	// A viewer of the section's live map, subscribed before anything moves.
	ws := "ws" + strings.TrimPrefix(t.API, "http") + "/v1/events/" + url.PathEscape(t.Unmetered) + "/live"
	conn, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		return stackError{fmt.Errorf("live map: %w", err)}
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+sec+`"}`)); err != nil {
		return err
	}
	if _, _, err := conn.Read(ctx); err != nil { // the reset
		return err
	}
	if err := t.flip(ctx, "/drill/relay", map[string]bool{"running": false}); err != nil {
		return err
	}
	defer t.restore(ctx, "/drill/relay")
	st, hold, err := t.hold(ctx, fan)
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("hold with the relay stopped: status %d, %v", st, err)
	}
	holdID, _ := hold["hold_id"].(string)
	defer t.call(context.WithoutCancel(ctx), "DELETE", t.API+"/v1/holds/"+holdID, fan, nil, nil)
	fired, err := until(ctx, t.OutboxAlertAfter+30*time.Second, "the outbox-age alert's expression", func() (bool, error) {
		age, err := t.metric(ctx, "encore_outbox_oldest_unpublished_age_seconds")
		return age > t.OutboxAlertAfter.Seconds(), err
	})
	if err != nil {
		return err
	}
	r.note("relay stopped: max(encore_outbox_oldest_unpublished_age_seconds) > %v turned true %.1fs after the hold",
		t.OutboxAlertAfter.Seconds(), fired.Seconds())
	start := time.Now()
	if err := t.flip(ctx, "/drill/relay", map[string]bool{"running": true}); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, t.Limit)
	defer cancel()
	for {
		_, msg, err := conn.Read(rctx)
		if err != nil {
			return fmt.Errorf("the live map heard nothing after the relay came back: %w", err)
		}
		var m struct {
			Type      string `json:"type"`
			SectionID string `json:"section_id"`
		}
		if json.Unmarshal(msg, &m) == nil && m.Type == "invalidate" && m.SectionID == sec {
			break
		}
	}
	r.note("relay back: the live map was told of the held seat %.1fs later", time.Since(start).Seconds())
	if _, err := until(ctx, t.Limit, "the outbox drained", func() (bool, error) {
		age, err := t.metric(ctx, "encore_outbox_oldest_unpublished_age_seconds")
		return age == 0, err
	}); err != nil {
		return err
	}
	r.recovered(start, "relay back: the outbox drained %.1fs after the relay was started")
	return nil
}

func workerKilled(ctx context.Context, t *Target, r *Result) error {
	// A 3-D Secure checkout: the booking then waits on the fan, and the
	// worker is stopped while it does.
	fan, co, err := t.booked(ctx, "pm_card_threeDSecure2Required")
	if err != nil {
		return err
	}
	bookingID, _ := co["booking_id"].(string)
	pay, _ := co["payment"].(map[string]any)
	challenge, _ := pay["next_action"].(string)
	secret, _ := pay["client_secret"].(string)
	if challenge == "" {
		return fmt.Errorf("the 3-D Secure checkout asked for no challenge: %v", co)
	}
	if err := t.flip(ctx, "/drill/worker", map[string]bool{"running": false}); err != nil {
		return err
	}
	defer t.restore(ctx, "/drill/worker")
	r.note("worker stopped with booking %s waiting on its 3-D Secure challenge", bookingID)
	// The fan completes the challenge while no worker runs: the provider's
	// event is stored and signalled, and waits in the booking's history.
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(challenge, url.Values{"action": {"complete"}, "client_secret": {secret}})
	if err != nil {
		return stackError{fmt.Errorf("3-D Secure challenge: %w", err)}
	}
	resp.Body.Close()
	time.Sleep(2 * time.Second)
	if s, err := t.bookingStatus(ctx, fan, bookingID); err == nil {
		r.note("worker stopped: the booking is %s two seconds after the challenge", s)
		if s == "PAID" {
			return fmt.Errorf("the booking was sold with no worker running: the drill stopped nothing")
		}
	}
	start := time.Now()
	if err := t.flip(ctx, "/drill/worker", map[string]bool{"running": true}); err != nil {
		return err
	}
	if _, err := t.paid(ctx, fan, bookingID); err != nil {
		return err
	}
	r.recovered(start, "worker back: the booking was PAID %.1fs after the worker started")
	return nil
}

func pspTimeout(ctx context.Context, t *Target, r *Result) error {
	setLoss := func(rate float64) error {
		st, _, err := t.call(context.WithoutCancel(ctx), "POST", t.PSP+"/_sandbox/faults", "", map[string]float64{"timeout_after_success_rate": rate}, nil)
		if err != nil || st != http.StatusOK {
			return stackError{fmt.Errorf("the payment sandbox at %s refused its fault switch (status %d, %v)", t.PSP, st, err)}
		}
		return nil
	}
	if err := setLoss(1); err != nil {
		return err
	}
	defer setLoss(0)
	r.note("payment sandbox: every confirm and capture acts, then loses its answer")
	start := time.Now()
	_, bookingID, err := t.paidBooking(ctx)
	if err != nil {
		return err
	}
	r.recovered(start, "the booking was PAID %.1fs after the fan held, through lost answers")
	// The provider holds exactly one payment for the booking, captured once.
	// PAID is the sale; the capture follows it, through its own lost
	// answers, so the provider is read until the capture shows or the
	// drill's limit passes.
	var found struct {
		Data []struct {
			ID             string `json:"id"`
			Amount         int64  `json:"amount"`
			AmountReceived int64  `json:"amount_received"`
		} `json:"data"`
	}
	q := url.Values{"query": {"metadata['booking_id']:'" + bookingID + "'"}}
	var searchErr error
	captured := func() (bool, error) {
		st, _, err := t.call(ctx, "GET", t.PSP+"/v1/payment_intents/search?"+q.Encode(), sandboxKey, nil, &found)
		if err != nil || st != http.StatusOK {
			searchErr = stackError{fmt.Errorf("search the sandbox: status %d, %v", st, err)}
			return false, searchErr
		}
		searchErr = nil
		return len(found.Data) == 1 && found.Data[0].AmountReceived == found.Data[0].Amount, nil
	}
	if _, err := until(ctx, t.Limit, "the capture at the provider", captured); err != nil {
		if searchErr != nil {
			return searchErr
		}
		return fmt.Errorf("the provider holds %d payments for the booking (want one, captured once): %+v", len(found.Data), found.Data)
	}
	r.note("the provider holds one payment for the booking, %d captured once", found.Data[0].AmountReceived)
	return nil
}

// sandboxKey is the payment sandbox's public test key.
const sandboxKey = "sk_test_encore_sandbox"

func postgresRestart(ctx context.Context, t *Target, r *Result) error {
	// A paid booking before the restart.
	fan, bookingID, err := t.paidBooking(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := t.flip(ctx, "/drill/postgres/restart", nil); err != nil {
		return err
	}
	r.note("PostgreSQL restarted in %.1fs", time.Since(start).Seconds())
	if _, err := until(ctx, t.Limit, "the API ready again", func() (bool, error) {
		st, _, err := t.call(ctx, "GET", t.API+"/readyz", "", nil, nil)
		return st == http.StatusOK, err
	}); err != nil {
		return err
	}
	other, err := t.fan(ctx)
	if err != nil {
		return err
	}
	if _, err := until(ctx, t.Limit, "a hold succeeding", func() (bool, error) {
		st, hold, err := t.hold(ctx, other)
		if id, ok := hold["hold_id"].(string); ok && st == http.StatusCreated {
			t.call(ctx, "DELETE", t.API+"/v1/holds/"+id, other, nil, nil)
		}
		return st == http.StatusCreated, err
	}); err != nil {
		return err
	}
	r.recovered(start, "holds succeed again %.1fs after the restart began")
	s, err := t.bookingStatus(ctx, fan, bookingID)
	if err != nil || s != "PAID" {
		return fmt.Errorf("the booking paid before the restart is %q after it (%v)", s, err)
	}
	r.note("the booking paid before the restart is still PAID")
	return nil
}
