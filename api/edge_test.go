package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
)

func liveURL(s *stack, eventID string) string {
	return "ws" + strings.TrimPrefix(s.url, "http") + "/v1/events/" + eventID + "/live"
}

// openLive dials the live stream and waits for the reset of one section, so
// the socket is surely counted by the server.
func openLive(t *testing.T, ctx context.Context, s *stack) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+s.eventID+`_a"}`)))
	_, msg, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"reset"`)
	return conn
}

func TestTheLiveSocketIsCappedPerClientAddressAndPerProcess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		perIP, perAll int
	}{
		{name: "per address", perIP: 3},
		{name: "per process", perIP: 100, perAll: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := api.NewSocketCap(tc.perIP, tc.perAll)
			s, _ := browseStackWith(t, func(srv *api.Server) { srv.Sockets = caps })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var conns []*websocket.Conn
			for range 3 {
				conns = append(conns, openLive(t, ctx, s))
			}
			defer func() {
				for _, c := range conns {
					c.CloseNow()
				}
			}()
			require.Equal(t, 3, caps.Open())

			_, resp, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
			require.Error(t, err, "the fourth socket")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("Retry-After"))
			body, _ := io.ReadAll(resp.Body)
			require.Contains(t, string(body), "/problems/rate-limited")

			require.NoError(t, conns[0].Close(websocket.StatusNormalClosure, ""))
			require.Eventually(t, func() bool { return caps.Open() == 2 }, 5*time.Second, 10*time.Millisecond,
				"the closed socket's place is given back")
			conns[0] = openLive(t, ctx, s)
		})
	}
}

func TestTheLiveSocketNeedsAnExistingEventAndRefusesUnknownSections(t *testing.T) {
	s, _ := browseStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, resp, err := websocket.Dial(ctx, liveURL(s, "evt_no_such_event"), nil)
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "refused before the upgrade")

	conn, _, err := websocket.Dial(ctx, liveURL(s, s.eventID), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"sec_of_another_event"}`)))
	_, msg, err := conn.Read(ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"error","section_id":"sec_of_another_event","detail":"no such section in this event"}`, string(msg))

	// The stream stays open for the event's own sections.
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"subscribe":"`+s.eventID+`_b"}`)))
	_, msg, err = conn.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"reset"`)
}

func TestMetricsAreNotServedOnTheFanPort(t *testing.T) {
	s := newStack(t)
	r := s.do(http.MethodGet, "/metrics", "", nil)
	require.Equal(t, http.StatusNotFound, r.Status)
}

func TestReadyzNamesTheFailingCheckWithoutItsErrorText(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:6379: connection refused (user encore)")
	srv := &api.Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: []api.Check{
		{Name: "postgres", Ping: func(context.Context) error { return nil }},
		{Name: "redis", Ping: func(context.Context) error { return secret }},
	}}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"status":"unavailable","failing":["redis"]}`, rec.Body.String())
	require.NotContains(t, rec.Body.String(), "10.1.2.3")
}
