package rehearsal

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// Test payment methods of the payment sandbox.
const (
	cardVisa     = "pm_card_visa"
	cardDeclined = "pm_card_chargeDeclined"
	cardThreeDS  = "pm_card_threeDSecure2Required"
)

// checkoutAnswer is the part of POST /v1/holds/{id}/checkout a fan acts on.
type checkoutAnswer struct {
	Payment struct {
		ClientSecret string `json:"client_secret"`
		Status       string `json:"status"`
		NextAction   string `json:"next_action"`
	} `json:"payment"`
}

func (c checkoutAnswer) needsChallenge() bool {
	return c.Payment.Status == "requires_action" && c.Payment.NextAction != ""
}

// pay checks out the hold as the fan planned: a declined card first (then
// the fan's own), the 3-D Secure card with its challenge completed or
// failed (then the fan's own card), or the fan's own card. It returns when
// the payment was handed over: the checkout answered, or the challenge was
// completed.
func (f *fan) pay(ctx context.Context, hold string) (time.Time, bool) {
	n := &f.run.rec.n
	attempt := 0
	switch f.payWith {
	case payDeclined:
		a, _ := f.checkout(ctx, hold, cardDeclined, &attempt)
		if a.name() != "payment-declined" {
			return time.Time{}, false // counted among the failures by problem type
		}
		n.declines.Add(1)
		if !f.think(ctx) {
			return time.Time{}, false
		}
	case payThreeDS:
		a, co := f.checkout(ctx, hold, cardThreeDS, &attempt)
		if !a.ok() || !co.needsChallenge() {
			return time.Time{}, false
		}
		if !f.think(ctx) {
			return time.Time{}, false
		}
		if !f.failThreeDS {
			if !f.challenge(ctx, co, "complete") {
				return time.Time{}, false
			}
			n.threeDSCompleted.Add(1)
			return time.Now(), true
		}
		if !f.challenge(ctx, co, "fail") {
			return time.Time{}, false
		}
		n.threeDSFailed.Add(1)
		if !f.think(ctx) {
			return time.Time{}, false
		}
	}
	a, co := f.checkout(ctx, hold, f.ownCard(ctx), &attempt)
	if !a.ok() {
		return time.Time{}, false
	}
	if co.needsChallenge() {
		// The fraud check stepped the payment up: the fan passes their
		// bank's check.
		n.steppedUp.Add(1)
		if !f.challenge(ctx, co, "complete") {
			return time.Time{}, false
		}
	}
	return time.Now(), true
}

// checkout is one payment attempt with pm, answered once: retried (same
// Idempotency-Key) when there was no answer, after a rate limit, or while
// the saga is busy; a new attempt gets a new key.
func (f *fan) checkout(ctx context.Context, hold, pm string, attempt *int) (answer, checkoutAnswer) {
	rn := f.run
	*attempt++
	key := f.key("checkout", *attempt)
	var a answer
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		t0 := time.Now()
		rn.rec.n.checkouts.Add(1)
		a = rn.edge.api(ctx, f.client, "checkout", http.MethodPost, "/v1/holds/"+hold+"/checkout", f.token,
			map[string]string{"payment_method": pm}, "Idempotency-Key", key)
		if a.status != 0 {
			rn.rec.checkout(timed{at: rn.rec.since(t0), took: a.took, outcome: outcomeOf(a)})
		}
		if !a.passing() {
			break
		}
		if !ctxsleep.Sleep(ctx, a.retryAfter(jitter(f.r, time.Second, 1, 2))) {
			break
		}
	}
	var co checkoutAnswer
	if a.ok() {
		_ = a.decode(&co)
	}
	return a, co
}

// challenge answers the sandbox's 3-D Secure page as the fan's browser
// would (the Complete or Fail button), if the page is on this machine.
func (f *fan) challenge(ctx context.Context, co checkoutAnswer, action string) bool {
	if !isLoopbackURL(co.Payment.NextAction) {
		f.run.rec.failure("challenge", "not-loopback")
		return false
	}
	form := url.Values{"action": {action}, "client_secret": {co.Payment.ClientSecret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, co.Payment.NextAction, strings.NewReader(form.Encode()))
	if err != nil {
		f.run.rec.failure("challenge", "bad-request")
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			f.run.rec.failure("challenge", "no-answer")
		}
		return false
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		f.run.rec.failure("challenge", "http-"+strconv.Itoa(resp.StatusCode))
		return false
	}
	return true
}

// ownCard is a card of the fan's own, created in the payment sandbox as the
// fan's browser would (the card number never reaches the stack), so the
// fraud rule counting accounts per card sees one account per card. Without
// a sandbox, or when it refuses, the shared test card.
func (f *fan) ownCard(ctx context.Context) string {
	rn := f.run
	if rn.cfg.PSP == "" {
		return cardVisa
	}
	number := VisaNumber(rn.cardBase*1000 + int64(f.i))
	form := url.Values{"type": {"card"}, "card[number]": {number}, "card[exp_month]": {"12"},
		"card[exp_year]": {strconv.Itoa(time.Now().Year() + 5)}, "card[cvc]": {"123"}}
	for try := 0; try < 3; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rn.cfg.PSP+"/v1/payment_methods", strings.NewReader(form.Encode()))
		if err != nil {
			break
		}
		req.Header.Set("Authorization", "Bearer "+rn.cfg.PSPKey)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Idempotency-Key", "card-"+number)
		a := rn.edge.do(ctx, f.client, "card", req)
		var pm struct {
			ID string `json:"id"`
		}
		if a.ok() && a.decode(&pm) == nil && strings.HasPrefix(pm.ID, "pm_") {
			return pm.ID
		}
		if !ctxsleep.Sleep(ctx, 200*time.Millisecond) {
			break
		}
	}
	rn.rec.n.ownCardsFailed.Add(1)
	return cardVisa
}

// VisaNumber is a Luhn-valid 16-digit Visa number for n, outside the
// numbers the sandbox gives test behaviours (those start 4000 or 4242):
// a card of a fan's own, for rehearsals and tests alike.
func VisaNumber(n int64) string {
	body := fmt.Sprintf("4917%011d", n%100_000_000_000)
	sum := 0
	for i := len(body) - 1; i >= 0; i-- {
		d := int(body[i] - '0')
		if (len(body)-1-i)%2 == 0 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return body + strconv.Itoa((10-sum%10)%10)
}
