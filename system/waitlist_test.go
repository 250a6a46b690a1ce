package system_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitlist"
)

func TestSeatsThatComeBackAreOfferedInOrderAndAnUnusedOfferPassesToTheNextFan(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	rdb, prefix := testenv.Redis(t)

	// A metered event of four seats, all held by two buyers.
	ev := "evt_" + testenv.RandomSuffix()
	section := "sec_" + ev[4:]
	require.NoError(t, demo.Create(ctx, e.store.Pool(), demo.Event{ID: ev, Title: "Sold out " + ev[4:], VenueID: "ven_wl",
		VenueName: "Tiny Club", City: "C", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0),
		OnsaleAt: time.Now().Add(-time.Hour), Metered: true,
		Sections: []demo.Section{{ID: section, Name: "Floor", Rows: 1, PerRow: 4, BasePrice: 5000}}}))
	seat := func(n int) string { return demo.SeatID(section, 0, n) }
	buy := func(user string, seats ...string) uuid.UUID {
		id := uuid.New()
		_, _, err := e.store.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: id, UserID: user, EventID: ev, SeatIDs: seats})
		require.NoError(t, err)
		return id
	}
	first := buy("buyer-1-"+ev, seat(1), seat(2))
	buy("buyer-2-"+ev, seat(3), seat(4))

	room := waitingroom.New(rdb, e.store.Holds, []byte("waitlist-test-pass-seed"), waitingroom.Options{
		Prefix: prefix + "wl" + testenv.RandomSuffix() + ":", Capacity: 10, Tick: 100 * time.Millisecond,
		JoinPerAccount: 1000, JoinPerIP: 100_000, LookupPerIP: 100_000, HoldPerIP: 100_000,
		Risk: waitingroom.Risk{Threshold: 2}, Log: log})
	room.Register(prometheus.NewRegistry())
	t.Cleanup(room.Close)
	offers := &waitlist.Offers{Store: e.store, Room: room, Mailer: notify.Mailbox{Dir: e.mailbox},
		PublicURL: "http://127.0.0.1:8080", TTL: 3 * time.Second, Log: log}
	offers.Register(prometheus.NewRegistry())
	hs := &holds.Service{Store: e.store, Log: log, Admission: room.Passes()}
	hs.Register(prometheus.NewRegistry())
	srv := httptest.NewServer((&api.Server{Holds: hs, Room: room, Waitlist: offers, Sessions: e.issuer, Log: log}).Handler())
	t.Cleanup(srv.Close)

	type fan struct {
		id    session.Identity
		token string
	}
	newFan := func(name string) fan {
		id := session.Identity{UserID: name + "-" + ev, DeviceID: name + "-phone", Email: name + "@fans.example"}
		tok, err := e.issuer.Mint(id, time.Now())
		require.NoError(t, err)
		return fan{id, tok}
	}
	ann, ben, cat := newFan("ann"), newFan("ben"), newFan("cat")
	wlPath := "/v1/events/" + ev + "/waitlist"

	t.Run("bad requests name their field and write nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			path  string
			body  map[string]any
			code  int
			field string
		}{
			{"no seats", wlPath, map[string]any{"quantity": 0}, 422, "quantity"},
			{"too many seats", wlPath, map[string]any{"quantity": 11}, 422, "quantity"},
			{"another event's section", wlPath, map[string]any{"section_id": "sec_nope", "quantity": 1}, 422, "section_id"},
			{"an unknown event", "/v1/events/evt_nope/waitlist", map[string]any{"quantity": 1}, 404, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				status, body := e.callAtJSON(srv.URL, "POST", tc.path, ann.token, tc.body)
				require.Equal(t, tc.code, status, "%v", body)
				if tc.field != "" {
					require.Equal(t, tc.field, body["errors"].([]any)[0].(map[string]any)["field"])
				}
			})
		}
		require.Zero(t, e.count(`SELECT count(*) FROM waitlist_entries WHERE event_id = $1`, ev))
	})

	// ann wants two seats, then ben and cat one each; joining twice keeps
	// the first place.
	for i, f := range []struct {
		fan fan
		qty int
	}{{ann, 2}, {ben, 1}, {cat, 1}} {
		status, body := e.callAtJSON(srv.URL, "POST", wlPath, f.fan.token, map[string]any{"section_id": section, "quantity": f.qty})
		require.Equal(t, 201, status, "%v", body)
		require.Equal(t, "WAITING", body["status"])
		require.EqualValues(t, i+1, body["position"])
	}
	status, body := e.callAtJSON(srv.URL, "POST", wlPath, ann.token, map[string]any{"quantity": 1})
	require.Equal(t, 200, status, "%v", body)
	require.EqualValues(t, 2, body["quantity"], "the first place is kept")

	round := func() store.WaitlistRound {
		t.Helper()
		r, err := offers.Round(ctx, ev)
		require.NoError(t, err)
		return r
	}
	offeredTo := func(r store.WaitlistRound) []string {
		var out []string
		for _, w := range r.Offered {
			out = append(out, strings.TrimSuffix(w.UserID, "-"+ev))
		}
		return out
	}
	require.Empty(t, round().Offered, "sold out: nothing to offer")

	// ann watches the queue socket of the event.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(wctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/events/"+ev+"/queue/ws?access_token="+ann.token, nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	_, msg, err := conn.Read(wctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"status":"waiting"`)

	// The first buyer's two seats come back: ann, first in line, is
	// offered both; ben and cat wait (nothing is left for them).
	_, err = e.store.Holds.Release(ctx, first, "buyer-1-"+ev)
	require.NoError(t, err)
	require.Equal(t, []string{"ann"}, offeredTo(round()))
	var offer struct {
		Status        string    `json:"status"`
		Pass          string    `json:"pass"`
		PassExpiresAt time.Time `json:"pass_expires_at"`
	}
	for offer.Status != "offered" {
		_, msg, err = conn.Read(wctx)
		require.NoError(t, err, "the offer arrives on the socket")
		require.NoError(t, json.Unmarshal(msg, &offer))
	}
	require.NotEmpty(t, offer.Pass)
	require.WithinDuration(t, time.Now().Add(3*time.Second), offer.PassExpiresAt, 2*time.Second)
	require.NoError(t, room.Passes().Check(ctx, ann.id, ev, offer.Pass), "the offer's pass admits ann")
	mail, err := os.ReadFile(filepath.Join(e.mailbox, "waitlist-offer-"+firstEntryID(t, e, ev, ann.id.UserID)+".eml"))
	require.NoError(t, err, "the offer is emailed")
	require.Contains(t, string(mail), "ann@fans.example")
	require.Empty(t, round().Offered, "the two seats are promised to ann")

	// ann lets the offer pass: at the next round her pass is refused and
	// the seats go to ben and cat, in order.
	time.Sleep(time.Until(offer.PassExpiresAt) + 100*time.Millisecond)
	r := round()
	require.Len(t, r.Ended, 1)
	require.Equal(t, []string{"ben", "cat"}, offeredTo(r))
	require.Error(t, room.Passes().Check(ctx, ann.id, ev, offer.Pass))

	// ben holds his seat with the offer's pass (over HTTP, as the app
	// does); the round after records the offer as used.
	benState, err := room.Line().Status(ctx, ben.id, ev)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusOffered, benState.Status)
	status, _, body = e.callAt(srv.URL, "POST", "/v1/holds", ben.token, map[string]any{"event_id": ev, "seat_ids": []string{seat(1)}},
		"X-Admission-Pass", benState.Pass)
	require.Equal(t, 201, status, "%v", body)
	require.Equal(t, 1, round().Used)

	status, body = e.callAtJSON(srv.URL, "GET", "/v1/me/waitlist", ann.token, nil)
	require.Equal(t, 200, status)
	require.Equal(t, "EXPIRED", body["entries"].([]any)[0].(map[string]any)["status"])
	status, body = e.callAtJSON(srv.URL, "GET", "/v1/me/waitlist", cat.token, nil)
	require.Equal(t, 200, status)
	require.Equal(t, "OFFERED", body["entries"].([]any)[0].(map[string]any)["status"])
	require.Equal(t, 0, e.count(`SELECT count(*) FROM waitlist_entries WHERE event_id = $1 AND status = 'OFFERED' AND notified_at IS NULL`, ev),
		"every offer was told")
}

// firstEntryID is the fan's waitlist entry for the event, as text.
func firstEntryID(t *testing.T, e *e2e, eventID, userID string) string {
	t.Helper()
	var id int64
	require.NoError(t, e.store.Pool().QueryRow(context.Background(),
		`SELECT id FROM waitlist_entries WHERE event_id = $1 AND user_id = $2 ORDER BY id LIMIT 1`, eventID, userID).Scan(&id))
	return strconv.FormatInt(id, 10)
}
