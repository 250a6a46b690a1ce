package system_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/catalog"
	"github.com/encore-tickets/encore/controls"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// dialProcess is one process of a deployment as the operator's dials reach
// it: its own watcher, hold service, waiting room and browse plane over the
// shared database and Redis, behind its own fan API.
type dialProcess struct {
	url   string
	dials *controls.Watcher
	room  *waitingroom.Room
	holds *holds.Service
}

func newDialProcess(t *testing.T, e *e2e, roomPrefix, mapPrefix string) *dialProcess {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	rdb, _ := testenv.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := &dialProcess{dials: controls.NewWatcher(e.store.Catalogue, 500*time.Millisecond, log)}
	p.holds = &holds.Service{Store: e.store, Log: log, Dials: p.dials}
	p.holds.Register(prometheus.NewRegistry())
	p.room = waitingroom.New(rdb, e.store.Holds, []byte("controls-test-pass-seed"), waitingroom.Options{Prefix: roomPrefix,
		Capacity: 5, Batch: 100, Tick: 100 * time.Millisecond, JoinPerAccount: 1000, JoinPerIP: 100_000, LookupPerIP: 100_000,
		HoldPerIP: 100_000, Log: log})
	p.room.Capacity().SetControls(p.dials)
	p.holds.Admission = p.room.Passes()
	reader := store.NewReader(e.store.Pool())
	cache := seatmap.NewCache(rdb, mapPrefix, reader.SectionSeats, seatmap.CacheOptions{})
	cache.SetTTLFor(func(eventID string, def time.Duration) time.Duration { return p.dials.For(eventID).CacheTTL(def) })
	hub := seatmap.NewHub(rdb, mapPrefix, seatmap.HubOptions{Log: log})
	done := make(chan struct{}, 2)
	go func() { p.dials.Run(ctx); done <- struct{}{} }()
	go func() { hub.Run(ctx); done <- struct{}{} }()
	a := &api.Server{Holds: p.holds, Room: p.room, Sessions: e.issuer, Log: log,
		Browse:   &api.Browse{Catalog: catalog.New(reader), Cache: cache, Hub: hub, Dials: p.dials},
		Operator: &api.Operator{Store: e.store, Dials: p.dials}}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { srv.Close(); cancel(); <-done; <-done; p.room.Close() })
	p.url = srv.URL
	return p
}

// within polls check until it holds, and returns how long that took; it
// fails the test past limit.
func within(t *testing.T, limit time.Duration, what string, check func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !check() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not in force within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func TestTheOperatorsDialsAreInForceInEveryProcessWithinTwoSecondsAndAudited(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	suffix := testenv.RandomSuffix()
	_, prefix := testenv.Redis(t)
	roomPrefix, mapPrefix := prefix+"dials"+suffix+":", prefix+"maps"+suffix+":"
	a, b := newDialProcess(t, e, roomPrefix, mapPrefix), newDialProcess(t, e, roomPrefix, mapPrefix)

	flash := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(ctx, e.store.Pool(), demo.Event{ID: flash, Title: "Dials " + flash[4:], VenueID: "ven_dials",
		VenueName: "Dials Club", City: "C", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0),
		OnsaleAt: time.Now().Add(-time.Hour), Metered: true,
		Sections: []demo.Section{{ID: "sec_" + flash[4:], Name: "Floor", Rows: 4, PerRow: 10, BasePrice: 5000}}}))
	otto, err := e.issuer.Mint(session.Identity{UserID: "otto", DeviceID: "otto-laptop", Roles: []session.Role{session.Operator}}, time.Now())
	require.NoError(t, err)
	fan := e.fan("dial-fan")
	controlsPath := "/v1/admin/events/" + e.eventID + "/controls"

	t.Run("a fan may neither read nor turn the dials", func(t *testing.T) {
		status, body := e.callAtJSON(a.url, "GET", controlsPath, fan, nil)
		require.Equal(t, 403, status)
		require.Equal(t, "/problems/forbidden", body["type"])
	})

	t.Run("an event nobody touched runs on the defaults", func(t *testing.T) {
		status, body := e.callAtJSON(b.url, "GET", controlsPath, otto, nil)
		require.Equal(t, 200, status, "%v", body)
		require.Equal(t, true, body["live_push"])
		require.Equal(t, false, body["sales_paused"])
		require.Nil(t, body["admission_capacity"])
		status, body = e.callAtJSON(b.url, "GET", "/v1/admin/events/evt_nope/controls", otto, nil)
		require.Equal(t, 404, status, "%v", body)
	})

	t.Run("a bad change names its fields and writes nothing", func(t *testing.T) {
		status, body := e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"admission_capacity": 0, "seatmap_cache_ttl_ms": 90000})
		require.Equal(t, 422, status)
		require.Equal(t, "/problems/invalid-request", body["type"])
		require.Len(t, body["errors"], 2)
		require.Equal(t, "admission_capacity", body["errors"].([]any)[0].(map[string]any)["field"])
		require.Equal(t, "seatmap_cache_ttl_ms", body["errors"].([]any)[1].(map[string]any)["field"])
		status, _ = e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"reason": "no dial"})
		require.Equal(t, 422, status)
		require.Zero(t, e.count(`SELECT count(*) FROM event_controls WHERE event_id = $1`, e.eventID))
		require.Zero(t, e.count(`SELECT count(*) FROM admin_audit WHERE target = $1`, e.eventID))
	})

	t.Run("pausing sales refuses holds in the other process within two seconds, and resuming lets them in", func(t *testing.T) {
		status, body := e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"sales_paused": true, "reason": "price error"})
		require.Equal(t, 200, status, "%v", body)
		require.Equal(t, true, body["sales_paused"])
		hold := func() (int, map[string]any) {
			return e.callAtJSON(b.url, "POST", "/v1/holds", fan, map[string]any{"event_id": e.eventID, "seat_ids": []string{e.seat(1, 1)}})
		}
		took := within(t, 2*time.Second, "sales paused", func() bool {
			status, body := hold()
			return status == 503 && body["type"] == "/problems/sales-paused"
		})
		t.Logf("sales paused in the other process after %v", took)
		held := e.count(`SELECT count(*) FROM seats WHERE event_id = $1 AND status <> 'AVAILABLE'`, e.eventID)
		for range 5 {
			status, _ := hold()
			require.Equal(t, 503, status)
		}
		require.Equal(t, held, e.count(`SELECT count(*) FROM seats WHERE event_id = $1 AND status <> 'AVAILABLE'`, e.eventID),
			"nothing held while paused")

		status, body = e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"sales_paused": false})
		require.Equal(t, 200, status, "%v", body)
		within(t, 2*time.Second, "sales resumed", func() bool {
			status, body := hold()
			// Placed, or refused because an attempt before the pause
			// reached this process placed it: either way, not paused.
			return status == 201 || body["type"] == "/problems/pending-checkout"
		})
	})

	t.Run("every change is in the admin audit log with who, why, before and after", func(t *testing.T) {
		acts, err := e.store.Orgs.ListAdminActions(ctx, store.AuditFilter{Action: "event.controls", Target: e.eventID})
		require.NoError(t, err)
		require.Len(t, acts, 2)
		pause := acts[1]
		require.Equal(t, "otto", pause.Actor)
		require.Equal(t, "price error", pause.Reason)
		var before, after controls.Dials
		require.NoError(t, json.Unmarshal(pause.Before, &before))
		require.NoError(t, json.Unmarshal(pause.After, &after))
		require.False(t, before.SalesPaused)
		require.True(t, after.SalesPaused)
		var resumed controls.Dials
		require.NoError(t, json.Unmarshal(acts[0].After, &resumed))
		require.False(t, resumed.SalesPaused)
		require.EqualValues(t, 2, resumed.Version, "each change counts a version")
	})

	flashPath := "/v1/admin/events/" + flash + "/controls"
	fans := make([]session.Identity, 8)
	for i := range fans {
		fans[i] = session.Identity{UserID: "dial-fan-" + string(rune('a'+i)) + suffix, DeviceID: "dev-" + string(rune('a'+i))}
		_, err := b.room.Line().Join(ctx, fans[i], flash, 0)
		require.NoError(t, err)
	}
	tickOnce := func(r *waitingroom.Room, owner string) waitingroom.TickResult {
		t.Helper()
		var res waitingroom.TickResult
		within(t, 5*time.Second, "a tick", func() bool {
			var err error
			res, err = r.Admitter().Tick(ctx, flash, owner)
			require.NoError(t, err)
			return res.Ran
		})
		return res
	}

	t.Run("paused admission admits nobody and a capacity takes effect at the admitter", func(t *testing.T) {
		status, body := e.callAtJSON(a.url, "PATCH", flashPath, otto, map[string]any{"admission_paused": true, "admission_capacity": 3})
		require.Equal(t, 200, status, "%v", body)
		within(t, 2*time.Second, "admission paused", func() bool { return b.dials.For(flash).AdmissionPaused })
		res := tickOnce(b.room, "b")
		require.Empty(t, res.Admitted, "paused")
		status, body = e.callAtJSON(b.url, "GET", flashPath, otto, nil)
		require.Equal(t, 200, status)
		require.EqualValues(t, 0, body["admission_capacity_in_force"])

		status, _ = e.callAtJSON(a.url, "PATCH", flashPath, otto, map[string]any{"admission_paused": false})
		require.Equal(t, 200, status)
		within(t, 2*time.Second, "admission resumed", func() bool { return !b.dials.For(flash).AdmissionPaused })
		res = tickOnce(b.room, "b")
		require.Len(t, res.Admitted, 3, "the operator's capacity, not the configured 5")
	})

	t.Run("the adaptive controller moves capacity only inside the operator's band", func(t *testing.T) {
		b.room.Capacity().SetAdaptive(&waitingroom.Controller{Period: 50 * time.Millisecond}, slowCheckout{})
		status, body := e.callAtJSON(a.url, "PATCH", flashPath, otto, map[string]any{"admission_capacity": 8, "admission_capacity_min": 7})
		require.Equal(t, 200, status, "%v", body)
		within(t, 2*time.Second, "the band", func() bool { return b.dials.For(flash).CapacityMin != nil })
		tickOnce(b.room, "b") // starts from the operator's 8
		// Kept: the controller moves once a period (50 ms), so one must pass.
		time.Sleep(60 * time.Millisecond)
		tickOnce(b.room, "b") // slow checkout: 8 x 0.75 = 6, floored at the operator's 7
		tickOnce(b.room, "b")
		n, err := b.room.CapacityInForce(ctx, flash)
		require.NoError(t, err)
		require.Equal(t, 7, n, "never below the operator's floor")
	})

	t.Run("a revoked admission is refused by every process at once", func(t *testing.T) {
		var admitted session.Identity
		var st waitingroom.State
		for _, f := range fans {
			s, err := b.room.Line().Status(ctx, f, flash)
			require.NoError(t, err)
			if s.Status == waitingroom.StatusAdmitted {
				admitted, st = f, s
				break
			}
		}
		require.NotEmpty(t, admitted.UserID, "three fans were admitted")
		require.NoError(t, a.room.Passes().Check(ctx, admitted, flash, st.Pass))
		status, body := e.callAtJSON(a.url, "POST", "/v1/admin/events/"+flash+"/admissions/revoke", otto,
			map[string]any{"user_id": admitted.UserID, "reason": "scalper"})
		require.Equal(t, 200, status, "%v", body)
		require.Equal(t, true, body["revoked"])
		require.ErrorIs(t, b.room.Passes().Check(ctx, admitted, flash, st.Pass), holds.ErrQueueRequired)
		acts, err := e.store.Orgs.ListAdminActions(ctx, store.AuditFilter{Action: "admission.revoke", Target: flash + "/" + admitted.UserID})
		require.NoError(t, err)
		require.Len(t, acts, 1)
		status, body = e.callAtJSON(a.url, "POST", "/v1/admin/events/"+flash+"/admissions/revoke", otto, map[string]any{})
		require.Equal(t, 422, status)
		require.Equal(t, "user_id", body["errors"].([]any)[0].(map[string]any)["field"])
	})

	t.Run("turning live push off tells an open map to poll within two seconds and refuses new streams", func(t *testing.T) {
		wsURL := "ws" + strings.TrimPrefix(b.url, "http") + "/v1/events/" + e.eventID + "/live"
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(wctx, wsURL, nil)
		require.NoError(t, err)
		defer conn.CloseNow()
		require.NoError(t, conn.Write(wctx, websocket.MessageText, []byte(`{"subscribe":"sec_`+e.eventID[4:]+`"}`)))
		_, msg, err := conn.Read(wctx)
		require.NoError(t, err)
		require.Contains(t, string(msg), `"type":"reset"`)

		status, _ := e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"live_push": false})
		require.Equal(t, 200, status)
		start := time.Now()
		_, msg, err = conn.Read(wctx)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"push_off","poll_ms":2000}`, string(msg))
		_, _, err = conn.Read(wctx)
		require.Equal(t, seatmap.StatusPushOff, websocket.CloseStatus(err))
		require.Less(t, time.Since(start), 2*time.Second)

		conn2, _, err := websocket.Dial(wctx, wsURL, nil)
		require.NoError(t, err)
		defer conn2.CloseNow()
		_, msg, err = conn2.Read(wctx)
		require.NoError(t, err)
		require.Contains(t, string(msg), "push_off")
	})

	t.Run("the seat map cache keeps an event's snapshots as long as the operator says", func(t *testing.T) {
		rdb, _ := testenv.Redis(t)
		key := mapPrefix + "seatmap:{" + e.eventID + "}:sec_" + e.eventID[4:] + ":json"
		read := func() time.Duration {
			require.NoError(t, rdb.Del(ctx, key).Err())
			status, _ := e.callAtJSON(b.url, "GET", "/v1/events/"+e.eventID+"/sections/sec_"+e.eventID[4:]+"/seats", "", nil)
			require.Equal(t, 200, status)
			ttl, err := rdb.PTTL(ctx, key).Result()
			require.NoError(t, err)
			return ttl
		}
		require.LessOrEqual(t, read(), 2*time.Second, "the configured default")
		status, _ := e.callAtJSON(a.url, "PATCH", controlsPath, otto, map[string]any{"seatmap_cache_ttl_ms": 30000})
		require.Equal(t, 200, status)
		within(t, 2*time.Second, "cache TTL", func() bool { return read() > 20*time.Second })
	})
}

// callAtJSON is callAt without the headers.
func (e *e2e) callAtJSON(base, method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	status, _, out := e.callAt(base, method, path, token, body)
	return status, out
}

// slowCheckout is a saga answering checkouts slowly: the adaptive
// controller lowers capacity on every period.
type slowCheckout struct{}

func (slowCheckout) Signals(context.Context) (waitingroom.Signals, error) {
	return waitingroom.Signals{CheckoutLatency: 5 * time.Second}, nil
}
