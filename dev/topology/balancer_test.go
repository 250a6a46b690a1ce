package topology_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/topology"
)

// The balancer tells the APIs who the client is, and carries WebSockets
// past a backend that is down: without the first every fan behind it shares
// one address's limits, without the second every queue socket falls back to
// polling (and, sent to a killed API, half of them did).
func TestTheBalancerForwardsTheClientAddressAndCarriesWebSocketsPastADeadBackend(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			ctx := r.Context()
			typ, msg, err := c.Read(ctx)
			if err == nil {
				_ = c.Write(ctx, typ, append([]byte("echo "), msg...))
			}
			_ = c.Close(websocket.StatusNormalClosure, "")
			return
		}
		_, _ = io.WriteString(w, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(backend.Close)
	b, err := topology.NewBalancer("")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // a killed API: its port refuses connections
	b.Add(dead.URL)
	b.Add(backend.URL)

	req, err := http.NewRequest(http.MethodGet, b.URL()+"/who", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "203.0.113.9, 127.0.0.1", string(body), "the client's address appended to what came before")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 4 { // round robin starts on each backend in turn
		c, _, err := websocket.Dial(ctx, "ws"+b.URL()[len("http"):]+"/ws", nil)
		require.NoError(t, err, "upgrade %d passes through to the live backend", i)
		require.NoError(t, c.Write(ctx, websocket.MessageText, []byte("hello")))
		_, msg, err := c.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, "echo hello", string(msg))
		c.CloseNow()
	}
}
