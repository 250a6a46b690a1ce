package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/seathint"
)

func TestTwelveBuyersRacingForTwoSeatsLeaveExactlyOneWinner(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	seats := []string{s.seat("a", 0, 1), s.seat("a", 0, 2)}
	const buyers = 16
	results := s.race(buyers, func(i int) (string, map[string]any, []string) {
		return s.fan(fmt.Sprintf("racer%d", i)), map[string]any{"seat_ids": seats}, nil
	})
	created, conflicts := 0, 0
	for _, r := range results {
		switch r.Status {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
			require.Equal(t, problemName("seat-unavailable"), problemType(r))
			require.NotEmpty(t, r.Body["unavailable_seat_ids"])
		default:
			t.Fatalf("unexpected %d: %s", r.Status, r.Raw)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, buyers-1, conflicts)
	require.Equal(t, 2, s.count(`SELECT count(*) FROM reservation_items WHERE event_id = $1 AND live`, s.eventID))
	s.requireAuditClean()
}

func TestDeletedHintDoesNotLetASecondBuyerInAndTheCartRollsBackWhole(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	taken, free := s.seat("a", 1, 1), s.seat("a", 1, 2)
	first := s.hold(s.fan("first"), map[string]any{"seat_ids": []string{taken}})
	require.Equal(t, http.StatusCreated, first.Status, string(first.Raw))

	n, err := s.rdb.Del(context.Background(), s.hints.Key(s.eventID, taken)).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the hint existed and was deleted by hand")

	second := s.hold(s.fan("second"), map[string]any{"seat_ids": []string{taken, free}})
	require.Equal(t, http.StatusConflict, second.Status, string(second.Raw))
	require.Equal(t, []any{taken}, second.Body["unavailable_seat_ids"])
	require.Equal(t, "AVAILABLE", s.seatStatus(free))
	require.Equal(t, "HELD", s.seatStatus(taken))
	// The loser's hint on the free seat was given back too.
	require.Zero(t, s.rdb.Exists(context.Background(), s.hints.Key(s.eventID, free)).Val())
	s.requireAuditClean()
}

func TestCartsInOppositeOrdersNeverDeadlock(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for round := range 25 {
		a, b := s.seat("b", round%10, 5+round/10), s.seat("b", round%10, 9+round/10)
		results := s.race(8, func(i int) (string, map[string]any, []string) {
			cart := []string{a, b}
			if i%2 == 1 {
				cart = []string{b, a}
			}
			return s.fan(fmt.Sprintf("r%d-%d", round, i)), map[string]any{"seat_ids": cart}, nil
		})
		created := 0
		for _, r := range results {
			require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, r.Status, string(r.Raw))
			if r.Status == http.StatusCreated {
				created++
			}
		}
		require.Equal(t, 1, created, "round %d", round)
	}
	s.requireAuditClean()
}

func TestAnExpiredHoldsSeatsCanBeHeldAgainBeforeTheSweeperRuns(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	seat := s.seat("a", 2, 3)
	first := s.hold(s.fan("early"), map[string]any{"seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, first.Status)
	_, err := s.pool.Exec(context.Background(), `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, first.Body["hold_id"])
	require.NoError(t, err)
	// The first fan's hint still names the old reservation: remove it as its
	// TTL would, so the database path (lazy expiry) is what is tested.
	s.rdb.Del(context.Background(), s.hints.Key(s.eventID, seat))

	second := s.hold(s.fan("late"), map[string]any{"seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, second.Status, string(second.Raw))
	var status string
	require.NoError(t, s.pool.QueryRow(context.Background(), `SELECT status FROM reservations WHERE id = $1`, first.Body["hold_id"]).Scan(&status))
	require.Equal(t, "EXPIRED", status)
	got := s.do(http.MethodGet, "/v1/holds/"+first.Body["hold_id"].(string), s.fan("early"), nil)
	require.Equal(t, "EXPIRED", got.Body["status"])
	s.requireAuditClean()
}

func TestPromotionCappedAtTenUsesAdmitsExactlyTenOfFiftyBuyers(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	code := s.promotion("CAP10", 2000, 10)
	buyer := func(i int) (string, map[string]any, []string) {
		seat := s.seat("a", 3+i/20, 1+i%20)
		return s.fan(fmt.Sprintf("promo%d", i)), map[string]any{"seat_ids": []string{seat}, "promo_code": code}, nil
	}
	results := s.race(50, buyer)
	ok := 0
	for _, r := range results {
		if r.Status == http.StatusCreated {
			ok++
			item := r.Body["items"].([]any)[0].(map[string]any)
			require.Greater(t, item["discount"].(float64), 0.0)
		} else {
			require.Equal(t, problemName("promotion-unavailable"), problemType(r), string(r.Raw))
		}
	}
	require.Equal(t, 10, ok)
	require.Equal(t, 10, s.count(`SELECT used FROM promotions WHERE code = $1`, code))
	require.Equal(t, 10, s.count(`SELECT count(*) FROM promotion_uses WHERE code = $1`, code))
}

func TestPromotionIsOncePerAccountAndComesBackWhenTheHoldEnds(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	code := s.promotion("ONCE", 1000, 5)
	fan := s.fan("saver")
	first := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 5, 1)}, "promo_code": code})
	require.Equal(t, http.StatusCreated, first.Status, string(first.Raw))
	require.Equal(t, http.StatusNoContent, s.do(http.MethodDelete, "/v1/holds/"+first.Body["hold_id"].(string), fan, nil).Status)
	require.Equal(t, 0, s.count(`SELECT used FROM promotions WHERE code = $1`, code))
	again := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 5, 2)}, "promo_code": code})
	require.Equal(t, http.StatusCreated, again.Status, string(again.Raw))
	bad := s.hold(s.fan("other"), map[string]any{"seat_ids": []string{s.seat("a", 5, 3)}, "promo_code": "NOPE"})
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	require.Equal(t, "promo_code", bad.Body["errors"].([]any)[0].(map[string]any)["field"])
}

func TestIdempotencyKeyReplaysTheStoredResponseWithoutReexecuting(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fan, _, first := s.keyedCart(t, "idem", "key-1", s.seat("b", 0, 2), s.seat("b", 0, 1))
	// Same cart, seats in another order: the same request.
	again := s.requireReplayed(t, fan, "key-1", map[string]any{"seat_ids": []string{s.seat("b", 0, 1), s.seat("b", 0, 2)}})
	require.Equal(t, string(first.Raw), string(again.Raw))
	require.Equal(t, 1, s.count(`SELECT count(*) FROM reservations WHERE event_id = $1`, s.eventID))

	other := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("b", 0, 3)}}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusUnprocessableEntity, other.Status)
	require.Equal(t, problemName("idempotency-key-reused"), problemType(other))
	// Another fan's identical key is another key.
	stranger := s.hold(s.fan("stranger"), map[string]any{"seat_ids": []string{s.seat("b", 0, 4)}}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusCreated, stranger.Status)
}

func TestConcurrentDuplicatesCreateOneHoldAndAllAnswerAlike(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fan := s.fan("doubletap")
	body := map[string]any{"seat_ids": []string{s.seat("b", 1, 1)}}
	results := s.race(10, func(int) (string, map[string]any, []string) {
		return fan, map[string]any{"seat_ids": body["seat_ids"]}, []string{"Idempotency-Key", "tap"}
	})
	var bodies []string
	for _, r := range results {
		if r.Status == http.StatusConflict {
			require.Equal(t, problemName("request-in-progress"), problemType(r))
			continue
		}
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		bodies = append(bodies, string(r.Raw))
	}
	require.NotEmpty(t, bodies)
	for _, b := range bodies {
		require.Equal(t, bodies[0], b)
	}
	require.Equal(t, 1, s.count(`SELECT count(*) FROM reservations WHERE event_id = $1`, s.eventID))
}

func TestAReplayedHoldAnswerIsTheFirstAnswerByteForByte(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	code := s.promotion("REPLAY", 1500, 5)
	cases := []struct {
		name string
		body map[string]any
	}{
		{"named seats", map[string]any{"seat_ids": []string{s.seat("a", 9, 19), s.seat("a", 9, 20)}}},
		{"named seats with a promotion", map[string]any{"seat_ids": []string{s.seat("b", 9, 19)}, "promo_code": code}},
		{"adjacent best available", map[string]any{"section_id": s.eventID + "_b", "quantity": 2, "adjacent": true}},
		{"general admission", map[string]any{"section_id": s.eventID + "_ga", "quantity": 3}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fan := s.fan(fmt.Sprintf("bytes%d", i))
			first := s.holdKeyed(t, fan, "same", tc.body)
			require.Empty(t, first.Header.Get("Idempotent-Replayed"))
			again := s.requireReplayed(t, fan, "same", tc.body)
			require.Equal(t, first.Header.Get("Content-Type"), again.Header.Get("Content-Type"))
			require.Equal(t, string(first.Raw), string(again.Raw))
		})
	}
}

func TestAHoldRecordedWithoutItsAnswerIsReplayedFromItsReservation(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fan, body, first := s.keyedCart(t, "crashed", "lost", s.seat("b", 3, 3), s.seat("b", 3, 4))
	// As holds committed before their answers were kept in the same
	// transaction left their key's record: without the bytes.
	tag, err := s.pool.Exec(context.Background(), `UPDATE idempotency_keys SET response_bytes = NULL WHERE key = 'lost' AND reservation_id = $1`,
		first.Body["hold_id"])
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	again := s.requireReplayed(t, fan, "lost", body)
	require.Equal(t, string(first.Raw), string(again.Raw))
	third := s.hold(fan, body, "Idempotency-Key", "lost")
	require.Equal(t, string(first.Raw), string(third.Raw), "every replay renders the same bytes")
	require.Equal(t, 1, s.count(`SELECT count(*) FROM reservations WHERE event_id = $1`, s.eventID))
}

func TestAnAnswerStoredAsJSONBeforeTheUpgradeIsStillReplayed(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fan, body, first := s.keyedCart(t, "legacy", "old-format", s.seat("b", 4, 4))
	_, err := s.pool.Exec(context.Background(), `UPDATE idempotency_keys
		SET response_body = convert_from(response_bytes, 'UTF8')::jsonb, response_bytes = NULL, reservation_id = NULL
		WHERE key = 'old-format'`)
	require.NoError(t, err)
	again := s.requireReplayed(t, fan, "old-format", body)
	require.JSONEq(t, string(first.Raw), string(again.Raw))
}

func TestIdempotencyRecordsOlderThanADayAreIgnoredAndPurged(t *testing.T) {
	s := newStack(t)
	fan := s.fan("old")
	first := s.holdKeyed(t, fan, "old-key", map[string]any{"seat_ids": []string{s.seat("b", 2, 1)}})
	require.Equal(t, http.StatusNoContent, s.do(http.MethodDelete, "/v1/holds/"+first.Body["hold_id"].(string), fan, nil).Status)
	_, err := s.pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old-key'`)
	require.NoError(t, err)
	again := s.holdKeyed(t, fan, "old-key", map[string]any{"seat_ids": []string{s.seat("b", 2, 1)}})
	require.NotEqual(t, first.Body["hold_id"], again.Body["hold_id"])
	_, err = s.pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old-key'`)
	require.NoError(t, err)
	n, err := s.holds.Store.Holds.PurgeIdempotency(context.Background())
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(1))
}

func TestOneFanHasOnePendingCheckoutAndAPurchaseLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, func(e *demo.Event, _ *holds.Service) { e.PerCustomerLimit = 3 })
	fan := s.fan("greedy")
	first := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 6, 1), s.seat("a", 6, 2)}})
	require.Equal(t, http.StatusCreated, first.Status)
	second := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 6, 3)}})
	require.Equal(t, http.StatusConflict, second.Status)
	require.Equal(t, problemName("pending-checkout"), problemType(second))
	require.Equal(t, first.Body["hold_id"], second.Body["hold_id"])

	// Pretend the first was paid: the limit counts sold seats too.
	_, err := s.pool.Exec(context.Background(), `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1`, first.Body["hold_id"])
	require.NoError(t, err)
	_, err = s.pool.Exec(context.Background(), `UPDATE seats SET status = 'SOLD' WHERE reservation_id = $1`, first.Body["hold_id"])
	require.NoError(t, err)
	over := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 6, 3), s.seat("a", 6, 4)}})
	require.Equal(t, http.StatusForbidden, over.Status)
	require.Equal(t, problemName("purchase-limit"), problemType(over))
	within := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("a", 6, 3)}})
	require.Equal(t, http.StatusCreated, within.Status, string(within.Raw))
	s.requireAuditClean()
}

func TestGeneralAdmissionNeverSellsPastCapacity(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	results := s.race(30, func(i int) (string, map[string]any, []string) {
		return s.fan(fmt.Sprintf("ga%d", i)), map[string]any{"section_id": s.eventID + "_ga", "quantity": 2}, nil
	})
	ok := 0
	for _, r := range results {
		if r.Status == http.StatusCreated {
			ok++
			require.EqualValues(t, 2, r.Body["quantity"])
		} else {
			require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
		}
	}
	require.Equal(t, 25, ok, "50 places, 2 each")
	require.Equal(t, 50, s.count(`SELECT ga_taken FROM sections WHERE id = $1`, s.eventID+"_ga"))
	s.requireAuditClean()
}

func TestReleasingAHoldFreesItsSeatsAtOnceAndOnlyForItsOwner(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fan := s.fan("owner")
	seat := s.seat("a", 7, 7)
	h := s.hold(fan, map[string]any{"seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, h.Status)
	id := h.Body["hold_id"].(string)
	require.Equal(t, http.StatusNotFound, s.do(http.MethodGet, "/v1/holds/"+id, s.fan("thief"), nil).Status)
	require.Equal(t, http.StatusNotFound, s.do(http.MethodDelete, "/v1/holds/"+id, s.fan("thief"), nil).Status)
	require.Equal(t, "HELD", s.seatStatus(seat))
	require.Equal(t, http.StatusNoContent, s.do(http.MethodDelete, "/v1/holds/"+id, fan, nil).Status)
	require.Equal(t, "AVAILABLE", s.seatStatus(seat))
	require.Zero(t, s.rdb.Exists(context.Background(), s.hints.Key(s.eventID, seat)).Val())
	got := s.do(http.MethodGet, "/v1/holds/"+id, fan, nil)
	require.Equal(t, "CANCELLED", got.Body["status"])
	require.Equal(t, http.StatusNoContent, s.do(http.MethodDelete, "/v1/holds/"+id, fan, nil).Status, "releasing twice is harmless")
	other := s.hold(s.fan("next"), map[string]any{"seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, other.Status)
}

func TestSweeperEndsExpiredHoldsAndGivesEverythingBack(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	code := s.promotion("SWEEP", 1000, 5)
	seats := []string{s.seat("b", 8, 1), s.seat("b", 8, 2)}
	h := s.hold(s.fan("sleepy"), map[string]any{"seat_ids": seats, "promo_code": code})
	require.Equal(t, http.StatusCreated, h.Status)
	ga := s.hold(s.fan("sleepy2"), map[string]any{"section_id": s.eventID + "_ga", "quantity": 3})
	require.Equal(t, http.StatusCreated, ga.Status)
	_, err := s.pool.Exec(context.Background(), `UPDATE reservations SET expires_at = now() - interval '1 minute' WHERE event_id = $1`, s.eventID)
	require.NoError(t, err)
	rep, err := s.holds.Store.Holds.Audit(context.Background(), s.eventID, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, rep.HeldPastExpiry, "the audit sees seats held past expiry before the sweep")

	n, err := s.holds.Sweep(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, seat := range seats {
		require.Equal(t, "AVAILABLE", s.seatStatus(seat))
		require.Zero(t, s.rdb.Exists(context.Background(), s.hints.Key(s.eventID, seat)).Val())
	}
	require.Equal(t, 0, s.count(`SELECT used FROM promotions WHERE code = $1`, code))
	require.Equal(t, 0, s.count(`SELECT ga_taken FROM sections WHERE id = $1`, s.eventID+"_ga"))
	require.Equal(t, 2, s.count(`SELECT count(*) FROM outbox WHERE topic = 'inventory.changed' AND payload->>'event_id' = $1 AND created_at > now() - interval '1 minute' AND key = $2`,
		s.eventID, s.eventID+"_b"), "one row at hold, one at expiry")
	s.requireAuditClean()
}

func TestHoldsStayCorrectWithRedisDown(t *testing.T) {
	s := newStack(t, func(_ *demo.Event, svc *holds.Service) {
		dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
		svc.Hints = seathint.New(dead, "")
		svc.Limiter = nil
	})
	seats := []string{s.seat("a", 9, 1), s.seat("a", 9, 2)}
	results := s.race(12, func(i int) (string, map[string]any, []string) {
		return s.fan(fmt.Sprintf("noredis%d", i)), map[string]any{"seat_ids": seats}, nil
	})
	created := 0
	for _, r := range results {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, r.Status, string(r.Raw))
		if r.Status == http.StatusCreated {
			created++
		}
	}
	require.Equal(t, 1, created)
	s.requireAuditClean()
}

func TestThePriceIsFrozenAtHoldTimeWithScarcitySurge(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	// Fill section B to 80% (160 of 200) as sold, then hold one more seat.
	_, err := s.pool.Exec(context.Background(), `
		WITH r AS (INSERT INTO users (id) VALUES ('filler') ON CONFLICT DO NOTHING RETURNING id),
		     res AS (INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
		             VALUES (gen_random_uuid(), 'filler', $1, 'PAID', now(), now(), 0, 'EUR') RETURNING id)
		UPDATE seats SET status = 'SOLD', reservation_id = (SELECT id FROM res)
		WHERE id IN (SELECT id FROM seats WHERE section_id = $2 ORDER BY row_label, number LIMIT 160)`, s.eventID, s.eventID+"_b")
	require.NoError(t, err)
	_, err = s.pool.Exec(context.Background(), `INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price, surge_bps, discount, price_at_lock)
		SELECT reservation_id, event_id, section_id, id, base_price, 10000, 0, base_price FROM seats WHERE section_id = $1 AND status = 'SOLD'`, s.eventID+"_b")
	require.NoError(t, err)
	seat := s.seat("b", 9, 20) // row J: base 3000 * 0.91 = 2730
	h := s.hold(s.fan("late-buyer"), map[string]any{"seat_ids": []string{seat}})
	require.Equal(t, http.StatusCreated, h.Status, string(h.Raw))
	item := h.Body["items"].([]any)[0].(map[string]any)
	require.EqualValues(t, 2730, item["base_price"])
	require.EqualValues(t, 15000, item["surge_bps"])
	require.EqualValues(t, 4095, item["price"].(map[string]any)["amount"])
	require.EqualValues(t, 4095, h.Body["total"].(map[string]any)["amount"])
	require.Equal(t, "EUR", h.Body["total"].(map[string]any)["currency"])
	s.requireAuditClean()
}

func TestTheAuditCatchesASeatSoldWithoutPayment(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	h := s.hold(s.fan("cheat"), map[string]any{"seat_ids": []string{s.seat("a", 8, 8)}})
	require.Equal(t, http.StatusCreated, h.Status)
	_, err := s.pool.Exec(context.Background(), `UPDATE seats SET status = 'SOLD' WHERE reservation_id = $1`, h.Body["hold_id"])
	require.NoError(t, err)
	rep, err := s.holds.Store.Holds.Audit(context.Background(), s.eventID, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.SoldWithoutPaid)
}

func TestHoldsPastTheAccountsRateAreRefusedWithRetryAfter(t *testing.T) {
	t.Parallel()
	s := newStack(t, func(_ *demo.Event, svc *holds.Service) {
		rdb, prefix := testenv.Redis(t)
		svc.Limiter = ratelimit.New(rdb, prefix+"rl-tight:", ratelimit.Limit{Count: 2, Per: time.Minute, Burst: 2})
	})
	fan := s.fan("hasty")
	got := []int{}
	for i := range 3 {
		r := s.hold(fan, map[string]any{"seat_ids": []string{s.seat("b", 9, 10+i)}})
		got = append(got, r.Status)
		if r.Status == http.StatusCreated {
			require.Equal(t, http.StatusNoContent, s.do(http.MethodDelete, "/v1/holds/"+r.Body["hold_id"].(string), fan, nil).Status)
		}
		if i == 2 {
			require.Equal(t, problemName("rate-limited"), problemType(r))
			require.NotEmpty(t, r.Header.Get("Retry-After"))
		}
	}
	require.Equal(t, []int{http.StatusCreated, http.StatusCreated, http.StatusTooManyRequests}, got)
}

func TestAHoldOutsideTheSaleIsRefusedWithTheSalesTimesAndADraftIsNoEvent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	onsale := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	cases := []struct {
		name, update string
		status       int
		problem      string
		offsale      bool
	}{
		{"before the on-sale time", `UPDATE events SET onsale_at = now() + interval '1 hour' WHERE id = $1`,
			http.StatusForbidden, "not-on-sale", false},
		{"after the off-sale time", `UPDATE events SET onsale_at = $2::timestamptz, offsale_at = $2::timestamptz + interval '1 hour' WHERE id = $1`,
			http.StatusForbidden, "not-on-sale", true},
		{"a draft", `UPDATE events SET onsale_at = $2::timestamptz, offsale_at = NULL, status = 'DRAFT' WHERE id = $1`,
			http.StatusUnprocessableEntity, "invalid-request", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []any{s.eventID}
			if tc.update != cases[0].update {
				args = append(args, onsale)
			}
			_, err := s.pool.Exec(ctx, tc.update, args...)
			require.NoError(t, err)
			r := s.do(http.MethodPost, "/v1/holds", s.fan("early"),
				map[string]any{"event_id": s.eventID, "seat_ids": []string{s.seat("a", 2, 1)}})
			require.Equal(t, tc.status, r.Status, "%s", r.Raw)
			require.Equal(t, problemName(tc.problem), problemType(r))
			if tc.problem == "not-on-sale" {
				require.NotEmpty(t, r.Body["onsale_at"])
				require.Equal(t, tc.offsale, r.Body["offsale_at"] != nil)
			}
		})
	}
	require.Equal(t, 0, s.count(`SELECT count(*) FROM reservations WHERE event_id = $1`, s.eventID))
}
