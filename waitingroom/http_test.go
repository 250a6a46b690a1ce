package waitingroom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

// edge serves the room's routes behind api.Server's real authentication.
type edge struct {
	t      testing.TB
	url    string
	issuer *session.Issuer
	room   *waitingroom.Room
}

func newEdge(t testing.TB, r *waitingroom.Room) *edge {
	issuer := session.NewIssuer("edge-test-secret")
	srv := &api.Server{Sessions: issuer, Log: quietLog(), Room: r}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &edge{t: t, url: ts.URL, issuer: issuer, room: r}
}

func (e *edge) token(who session.Identity) string {
	return e.issuer.Issue(who.UserID, who.DeviceID, time.Now())
}

func (e *edge) do(method, path string, who *session.Identity, headers ...string) apitest.Response {
	e.t.Helper()
	token := ""
	if who != nil {
		token = e.token(*who)
	}
	return apitest.Do(e.t, method, e.url+path, token, nil, headers...)
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHTTPJoinPollAndPass(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	asha, bo := fan(1), fan(2)
	path := "/v1/events/" + ev + "/queue"

	require.Equal(t, http.StatusUnauthorized, e.do("POST", path, nil).Status)
	rep := e.do("GET", path, &asha)
	require.Equal(t, http.StatusNotFound, rep.Status, "not in line yet")
	require.Equal(t, "application/problem+json", rep.Header.Get("Content-Type"))

	rep = e.do("POST", path, &asha)
	require.Equal(t, http.StatusOK, rep.Status, string(rep.Raw))
	require.ElementsMatch(t, []string{"status", "position", "estimated_wait_seconds", "heartbeat_seconds"}, keysOf(rep.Body))
	require.Equal(t, "waiting", rep.Body["status"])
	require.EqualValues(t, 1, rep.Body["position"])
	rep = e.do("POST", path, &bo)
	require.EqualValues(t, 2, rep.Body["position"])
	rep = e.do("GET", path, &bo)
	require.Equal(t, http.StatusOK, rep.Status)
	require.EqualValues(t, 2, rep.Body["position"])

	tick(t, r, ev, "a")
	rep = e.do("GET", path, &asha)
	require.Equal(t, http.StatusOK, rep.Status)
	require.ElementsMatch(t, []string{"status", "pass", "pass_expires_at"}, keysOf(rep.Body))
	require.Equal(t, "admitted", rep.Body["status"])
	exp, err := time.Parse(time.RFC3339, rep.Body["pass_expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(5*time.Minute), exp, 5*time.Second)
	// The pass verifies with the public key alone.
	c, err := pass.NewVerifier(r.Passes().PublicKey()).Verify(rep.Body["pass"].(string), time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Bound(asha.UserID, asha.DeviceID, ev))
	require.NoError(t, r.Passes().Check(context.Background(), asha, ev, rep.Body["pass"].(string)))

	// A join while admitted answers the pass again.
	rep = e.do("POST", path, &asha)
	require.Equal(t, "admitted", rep.Body["status"])
	laptop := session.Identity{UserID: asha.UserID, DeviceID: "laptop"}
	rep = e.do("GET", path, &laptop)
	require.Equal(t, http.StatusConflict, rep.Status)
	require.Equal(t, "/problems/admitted-elsewhere", rep.Body["type"])

	require.Equal(t, http.StatusNotFound, e.do("POST", "/v1/events/evt_unknown/queue", &asha).Status)
	require.Equal(t, http.StatusUnprocessableEntity, e.do("POST", "/v1/events/%7Bbad%7D/queue", &asha).Status)
}

func TestHTTPRateLimits(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{JoinPerAccount: 6, HoldPerIP: 6, CheckoutPerAccount: 6})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	asha := fan(1)
	first := e.do("POST", "/v1/events/"+ev+"/queue", &asha)
	require.NotEqual(t, http.StatusTooManyRequests, first.Status, string(first.Raw))
	rep := e.do("POST", "/v1/events/"+ev+"/queue", &asha)
	require.Equal(t, http.StatusTooManyRequests, rep.Status, string(rep.Raw))
	require.Equal(t, "/problems/rate-limited", rep.Body["type"])
	require.NotEmpty(t, rep.Header.Get("Retry-After"))

	// The buy plane's hot paths are limited by the room's services, which
	// the edge calls ahead of the hold and checkout handlers.
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		limit func() error
	}{
		{"hold per IP", func() error { return r.LimitHold(ctx, "192.0.2.7") }},
		{"checkout per account", func() error { return r.LimitCheckout(ctx, "192.0.2.8", asha.UserID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.limit())
			var rl *waitingroom.RateLimitedError
			require.ErrorAs(t, tc.limit(), &rl)
			require.Positive(t, rl.Wait)
		})
	}
}

func TestHTTPProofOfWorkWhenRisky(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Risk: waitingroom.Risk{DeviceAccounts: 2, Difficulty: 10}})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	path := "/v1/events/" + ev + "/queue"
	one := session.Identity{UserID: "acct1", DeviceID: "farm-phone"}
	two := session.Identity{UserID: "acct2", DeviceID: "farm-phone"}
	require.Equal(t, http.StatusOK, e.do("POST", path, &one).Status, "one account per device is fine")

	rep := e.do("POST", path, &two)
	require.Equal(t, http.StatusPreconditionRequired, rep.Status, string(rep.Raw))
	require.Equal(t, "/problems/challenge-required", rep.Body["type"])
	raw, _ := json.Marshal(rep.Body["challenge"])
	var ch waitingroom.Challenge
	require.NoError(t, json.Unmarshal(raw, &ch))
	require.Equal(t, 10, ch.Difficulty)

	require.Equal(t, http.StatusPreconditionRequired,
		e.do("POST", path, &two, "X-Queue-Challenge", ch.Token, "X-Queue-Solution", "wrong").Status)
	sol, err := waitingroom.Solve(context.Background(), ch)
	require.NoError(t, err)
	rep = e.do("POST", path, &two, "X-Queue-Challenge", ch.Token, "X-Queue-Solution", sol)
	require.Equal(t, http.StatusOK, rep.Status, string(rep.Raw))
	require.Equal(t, "waiting", rep.Body["status"])
	// A solution is spent once.
	require.Equal(t, http.StatusPreconditionRequired,
		e.do("POST", path, &two, "X-Queue-Challenge", ch.Token, "X-Queue-Solution", sol).Status)
	// A flagged account (machine-regular polling, or an operator) is
	// challenged even alone on its device.
	solo := session.Identity{UserID: "acct9", DeviceID: "own-phone"}
	require.NoError(t, r.MarkSuspicious(context.Background(), ev, solo.UserID))
	require.Equal(t, http.StatusPreconditionRequired, e.do("POST", path, &solo).Status)
	// A challenge is bound to its account.
	three := session.Identity{UserID: "acct3", DeviceID: "farm-phone"}
	require.Equal(t, http.StatusPreconditionRequired,
		e.do("POST", path, &three, "X-Queue-Challenge", ch.Token, "X-Queue-Solution", sol).Status)
}

// startRedis starts a private redis-server on a free loopback port and
// returns its address and a function that kills it.
func startRedis(t *testing.T) (string, func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not start")
		time.Sleep(20 * time.Millisecond)
	}
	return addr, kill
}

// TestRedisDownFailsClosed admits a fan, then kills Redis: joining, polling,
// ticking and even a valid pass all fail closed, with retryable 503s.
func TestRedisDownFailsClosed(t *testing.T) {
	addr, kill := startRedis(t)
	if addr == "" {
		addr, kill = "127.0.0.1:1", func() {} // no redis-server: a closed port
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	inv := newFake()
	r := newRoomOn(t, rdb, "down:", inv, waitingroom.Options{})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	asha, bo := fan(1), fan(2)
	var valid string
	if addr != "127.0.0.1:1" {
		valid = admitOne(t, r, ev, asha).Pass
		require.NoError(t, r.Passes().Check(context.Background(), asha, ev, valid))
	}
	kill()

	ctx := context.Background()
	_, err := r.Line().Join(ctx, bo, ev, 0)
	require.ErrorIs(t, err, waitingroom.ErrUnavailable)
	_, err = r.Line().Status(ctx, asha, ev)
	require.ErrorIs(t, err, waitingroom.ErrUnavailable)
	_, err = r.Admitter().Tick(ctx, ev, "a")
	require.ErrorIs(t, err, waitingroom.ErrUnavailable)
	if valid != "" {
		err = r.Passes().Check(ctx, asha, ev, valid)
		require.ErrorIs(t, err, waitingroom.ErrUnavailable, "a valid pass does not get in without its lease check")
		require.NotErrorIs(t, err, holds.ErrQueueRequired)
	}
	require.Error(t, r.Passes().Extend(ctx, asha, ev, time.Now().Add(time.Minute)))

	path := "/v1/events/" + ev + "/queue"
	for _, tc := range []struct{ name, method, path string }{
		{"join", "POST", path},
		{"poll", "GET", path},
		{"socket", "GET", path + "/ws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := e.do(tc.method, tc.path, &bo, "Connection", "Upgrade", "Upgrade", "websocket",
				"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			require.Equal(t, http.StatusServiceUnavailable, rep.Status, string(rep.Raw))
			require.Equal(t, "/problems/unavailable", rep.Body["type"])
			require.NotEmpty(t, rep.Header.Get("Retry-After"))
		})
	}
}

// wsClient is one queued fan on a socket.
type wsClient struct {
	positions atomic.Int64 // waiting states received
	firstPos  atomic.Int64
	pass      atomic.Value // string
}

// runClient connects, heartbeats with jitter and reads states until the
// pass arrives or ctx ends.
func runClient(ctx context.Context, url string, c *wsClient, heartbeat time.Duration, connected *sync.WaitGroup) error {
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		connected.Done()
		return err
	}
	defer conn.CloseNow()
	go func() {
		for i := 0; ; i++ {
			jitter := time.Duration(i*7919%97) * time.Millisecond / 10
			select {
			case <-ctx.Done():
				return
			case <-time.After(heartbeat + jitter):
			}
			if conn.Write(ctx, websocket.MessageText, []byte(`{"type":"heartbeat"}`)) != nil {
				return
			}
		}
	}()
	first := true
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			if first {
				connected.Done()
			}
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure && c.pass.Load() != nil {
				return nil
			}
			return err
		}
		var st waitingroom.State
		if err := json.Unmarshal(msg, &st); err != nil {
			return err
		}
		switch st.Status {
		case waitingroom.StatusWaiting:
			if c.positions.Add(1) == 1 {
				c.firstPos.Store(st.Position)
			}
		case waitingroom.StatusAdmitted:
			c.pass.Store(st.Pass)
		}
		if first {
			first = false
			connected.Done()
		}
	}
}

// TestThousandSocketsGetPositionsAndPasses: 1,000 fans wait on WebSockets;
// each receives its position, then, as the admitter lets them in, its pass.
func TestThousandSocketsGetPositionsAndPasses(t *testing.T) {
	const n = 1000
	inv := newFake()
	// All fans come from 127.0.0.1: the many-accounts-per-IP signal is off.
	// A one-second heartbeat: a socket is closed as silent after twelve, a
	// margin that holds for 1,000 clients on a loaded two-core machine under
	// the race detector (half a second once did not, at load average 8).
	const heartbeat = time.Second
	r := newRoom(t, inv, waitingroom.Options{Tick: 100 * time.Millisecond, Heartbeat: heartbeat,
		Capacity: n, Batch: 100, Risk: waitingroom.Risk{IPAccounts: 1 << 30, IPAccountsHigh: 1 << 30}})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	wsURL := "ws" + strings.TrimPrefix(e.url, "http") + "/v1/events/" + ev + "/queue/ws?access_token="

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := make([]*wsClient, n)
	errs := make(chan error, n)
	var connected sync.WaitGroup
	connected.Add(n)
	var done sync.WaitGroup
	sem := make(chan struct{}, 100) // dial 100 at a time
	for i := range clients {
		clients[i] = &wsClient{}
		done.Add(1)
		go func() {
			defer done.Done()
			sem <- struct{}{}
			go func() { time.Sleep(50 * time.Millisecond); <-sem }()
			if err := runClient(ctx, wsURL+e.token(fan(i)), clients[i], heartbeat, &connected); err != nil {
				errs <- fmt.Errorf("fan %d: %w", i, err)
			}
		}()
	}
	connected.Wait()
	select {
	case err := <-errs:
		require.NoError(t, err)
	default:
	}
	require.Eventually(t, func() bool { return r.SocketCount() == n }, 10*time.Second, 20*time.Millisecond,
		"every fan is connected and queued")
	seen := map[int64]bool{}
	for i, c := range clients {
		require.GreaterOrEqual(t, c.positions.Load(), int64(1), "fan %d got no position", i)
		p := c.firstPos.Load()
		require.False(t, seen[p], "two fans were told position %d", p)
		seen[p] = true
	}

	start := time.Now()
	actx, stop := context.WithCancel(ctx)
	defer stop()
	go r.Admitter().Run(actx, "test-admitter")
	done.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("1,000 sockets admitted in %s", time.Since(start).Round(time.Millisecond))
	v := r.Passes().Verifier()
	for i, c := range clients {
		tok, _ := c.pass.Load().(string)
		require.NotEmpty(t, tok, "fan %d got no pass", i)
		cl, err := v.Verify(tok, time.Now())
		require.NoError(t, err)
		require.NoError(t, cl.Bound(fan(i).UserID, fan(i).DeviceID, ev))
	}
	require.Eventually(t, func() bool { return r.SocketCount() == 0 }, 10*time.Second, 50*time.Millisecond)
}

func TestSocketToldSoldOutAtOnce(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Tick: 50 * time.Millisecond, Heartbeat: time.Minute})
	e := newEdge(t, r)
	ev := inv.add(time.Now().Add(-time.Minute))
	inv.setFree(ev, 1)
	asha, bo := fan(1), fan(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := "ws" + strings.TrimPrefix(e.url, "http") + "/v1/events/" + ev + "/queue/ws?access_token="
	conns := map[string]*websocket.Conn{}
	for _, who := range []session.Identity{asha, bo} {
		conn, _, err := websocket.Dial(ctx, base+e.token(who), nil)
		require.NoError(t, err)
		defer conn.CloseNow()
		_, msg, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Contains(t, string(msg), `"status":"waiting"`)
		conns[who.UserID] = conn
	}
	tick(t, r, ev, "a") // asha in; the one free unit is spoken for
	_, msg, err := conns[asha.UserID].Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"status":"admitted"`)

	inv.setFree(ev, 0)
	start := time.Now()
	tick(t, r, ev, "a")
	_, msg, err = conns[bo.UserID].Read(ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"sold_out","waitlisted":true}`, string(msg))
	require.Less(t, time.Since(start), 5*time.Second, "told at once, not at the next minute-long refresh")
	wl, err := r.Line().Waitlist(ctx, ev)
	require.NoError(t, err)
	require.Contains(t, wl, bo.UserID)
}
