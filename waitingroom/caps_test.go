package waitingroom_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// countingInventory counts the event lookups that reach the "database".
type countingInventory struct {
	*fakeInventory
	lookups atomic.Int64
}

func (c *countingInventory) EventGate(ctx context.Context, id string) (store.Gate, error) {
	c.lookups.Add(1)
	return c.fakeInventory.EventGate(ctx, id)
}

func TestAScanOfUnknownEventIDsIsRefusedBeforeTheDatabase(t *testing.T) {
	inv := &countingInventory{fakeInventory: newFake()}
	r := newRoom(t, inv, waitingroom.Options{LookupPerIP: 6}) // a burst of one, then one each 10s
	e := newEdge(t, r)
	who := fan(1)
	codes := map[int]int{}
	for i := range 40 {
		codes[e.do("POST", fmt.Sprintf("/v1/events/evt_made_up_%d/queue", i), &who).Status]++
	}
	require.Equal(t, 40, codes[http.StatusNotFound]+codes[http.StatusTooManyRequests], codes)
	require.GreaterOrEqual(t, codes[http.StatusTooManyRequests], 35, codes)
	require.EqualValues(t, codes[http.StatusNotFound], inv.lookups.Load(),
		"every refusal answered without a lookup; only the 404s read the database")

	// Polls are charged to the same budget.
	before := inv.lookups.Load()
	rep := e.do("GET", "/v1/events/evt_made_up_poll/queue", &who)
	require.Equal(t, http.StatusTooManyRequests, rep.Status, string(rep.Raw))
	require.NotEmpty(t, rep.Header.Get("Retry-After"))
	require.Equal(t, before, inv.lookups.Load())
}

func TestAnUnknownEventIsLookedUpOnceWhileItsAbsenceIsCached(t *testing.T) {
	inv := &countingInventory{fakeInventory: newFake()}
	r := newRoom(t, inv, waitingroom.Options{})
	e := newEdge(t, r)
	who := fan(1)
	for range 20 {
		require.Equal(t, http.StatusNotFound, e.do("POST", "/v1/events/evt_nobody/queue", &who).Status)
	}
	require.EqualValues(t, 1, inv.lookups.Load())
}

func TestTheEventCacheNeverGrowsPastItsBound(t *testing.T) {
	inv := &countingInventory{fakeInventory: newFake()}
	r := newRoom(t, inv, waitingroom.Options{GateCacheSize: 16})
	e := newEdge(t, r)
	who := fan(1)
	for i := range 200 {
		require.Equal(t, http.StatusNotFound, e.do("POST", fmt.Sprintf("/v1/events/evt_scan_%d/queue", i), &who).Status)
		require.LessOrEqual(t, r.CachedGates(), 16)
	}
	require.EqualValues(t, 200, inv.lookups.Load())
	// A real event still joins, and is cached beside the unknown ones.
	ev := inv.add(time.Now().Add(-time.Minute))
	require.Equal(t, http.StatusOK, e.do("POST", "/v1/events/"+ev+"/queue", &who).Status)
	require.Equal(t, 16, r.CachedGates())
}

func TestTheQueueSocketIsCappedPerClientAddress(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Heartbeat: time.Minute})
	issuer := session.NewIssuer("caps-test-secret")
	srv := &api.Server{Sessions: issuer, Log: quietLog(), Room: r, Sockets: api.NewSocketCap(2, 0)}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	ev := inv.add(time.Now().Add(-time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := func(i int) string {
		who := fan(i)
		return "ws" + strings.TrimPrefix(ts.URL, "http") + "/v1/events/" + ev + "/queue/ws?access_token=" +
			issuer.Issue(who.UserID, who.DeviceID, time.Now())
	}
	open := func(i int) *websocket.Conn {
		conn, _, err := websocket.Dial(ctx, url(i), nil)
		require.NoError(t, err)
		_, _, err = conn.Read(ctx) // the first state
		require.NoError(t, err)
		return conn
	}
	first, second := open(1), open(2)
	defer second.CloseNow()

	_, resp, err := websocket.Dial(ctx, url(3), nil)
	require.Error(t, err, "a third socket from the same address")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))

	require.NoError(t, first.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		conn, _, err := websocket.Dial(ctx, url(3), nil)
		if err != nil {
			return false
		}
		conn.CloseNow()
		return true
	}, 5*time.Second, 20*time.Millisecond, "closing a socket gives its place back")
}
