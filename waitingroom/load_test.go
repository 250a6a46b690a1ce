package waitingroom_test

// Load measurements of the waiting room. The Go benchmarks run with
// `go test -run '^$' -bench . ./waitingroom/` against the test Redis. The two
// load tests only run when asked, since they take a minute and much of the
// machine:
//
//	ENCORE_WR_LOAD=1 go test -run TestLoadJoinsAndAdmissions -v ./waitingroom/
//	    starts a private redis-server, runs redis-benchmark against it (PING,
//	    SET, ZADD and the join script itself, 50 clients), then the room's own
//	    joins and admissions per second through Go against the same server.
//
//	ENCORE_WR_SOCKETS=19500 go test -run TestLoadIdleSockets -v ./waitingroom/
//	    holds that many queued WebSockets in this process, with the clients in
//	    child processes on loopback source addresses 127.0.0.2.., and reports
//	    memory per socket.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/waitingroom"
)

func BenchmarkJoin(b *testing.B) {
	inv := newFake()
	r := newRoom(b, inv, waitingroom.Options{})
	ev := inv.add(time.Now().Add(-time.Minute))
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := r.Line().Join(context.Background(), session.Identity{UserID: "u" + strconv.FormatInt(i, 10), DeviceID: "d"}, ev, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
}

func BenchmarkAdmit(b *testing.B) {
	inv := newFake()
	r := newRoom(b, inv, waitingroom.Options{Tick: time.Millisecond, Batch: 1000, Capacity: 1 << 30})
	ev := inv.add(time.Now().Add(-time.Minute))
	fill(b, r, ev, b.N)
	b.ResetTimer()
	admitted := 0
	for admitted < b.N {
		res, err := r.Admitter().Tick(context.Background(), ev, "bench")
		if err != nil {
			b.Fatal(err)
		}
		admitted += len(res.Admitted)
	}
	b.ReportMetric(float64(admitted)/b.Elapsed().Seconds(), "admissions/s")
}

// fill joins n fans with 50 concurrent callers.
func fill(tb testing.TB, r *waitingroom.Room, ev string, n int) time.Duration {
	return spread(tb, n, func(i int64) error {
		_, err := r.Line().Join(context.Background(), session.Identity{UserID: "u" + strconv.FormatInt(i, 10), DeviceID: "d"}, ev, 0)
		return err
	})
}

// spread makes calls 1 to n from 50 concurrent callers and returns how long
// they took. A caller whose call fails fails tb and stops.
func spread(tb testing.TB, n int, call func(i int64) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if err := call(i); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

var rbLine = regexp.MustCompile(`(?m)^"?([^":,]+)"?[:,]\s*"?([0-9.]+)`)

// redisBenchmark runs redis-benchmark -q and returns requests per second by test.
func redisBenchmark(t *testing.T, addr string, args ...string) map[string]float64 {
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("redis-benchmark", append([]string{"-h", host, "-p", port, "-c", "50", "-q", "--csv"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	res := map[string]float64{}
	for _, m := range rbLine.FindAllStringSubmatch(string(out), -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			res[strings.TrimSpace(m[1])] = v
		}
	}
	return res
}

var rpsLine = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmarkEval runs one custom command and returns its requests per second.
func redisBenchmarkEval(t *testing.T, addr string, args ...string) float64 {
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("redis-benchmark", append([]string{"-h", host, "-p", port, "-c", "50", "-q"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	m := rpsLine.FindAllStringSubmatch(string(out), -1)
	require.NotEmpty(t, m, string(out))
	v, err := strconv.ParseFloat(m[len(m)-1][1], 64)
	require.NoError(t, err)
	return v
}

// TestLoadJoinsAndAdmissions measures the room beside redis-benchmark on one
// private Redis, in one run.
func TestLoadJoinsAndAdmissions(t *testing.T) {
	if os.Getenv("ENCORE_WR_LOAD") == "" {
		t.Skip("set ENCORE_WR_LOAD=1 to run the load measurement")
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("redis-benchmark is not installed")
	}
	addr, _ := startRedis(t)
	require.NotEmpty(t, addr)
	const n = 100_000

	base := redisBenchmark(t, addr, "-n", strconv.Itoa(n), "-t", "ping,set,zadd")
	// The join script itself, as redis-benchmark's 50 clients run it: a new
	// member each call (__rand_int__ over 10^7), all keys in one {event}.
	script := waitingroomJoinScript(t)
	keys := []string{"q", "hb", "lease", "seq", "meta", "pre", "strikes", "soldout", "waitlist", "state"}
	rbArgs := []string{"-n", strconv.Itoa(n), "-r", "10000000", "EVAL", script, "10"}
	for _, k := range keys {
		rbArgs = append(rbArgs, "rb:wr:{evt_rb}:"+k)
	}
	rbArgs = append(rbArgs, "u:__rand_int__", "d", "0.5", "0", "120000", "1000", "0")
	joinRB := redisBenchmarkEval(t, addr, rbArgs...)

	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	inv := newFake()
	r := newRoomOn(t, rdb, "load:", inv, waitingroom.Options{Tick: time.Millisecond, Batch: 1000, Capacity: 1 << 30})
	ev := inv.add(time.Now().Add(-time.Minute))
	joinTook := fill(t, r, ev, n)

	start := time.Now()
	admitted, ticks := 0, 0
	for admitted < n {
		res, err := r.Admitter().Tick(context.Background(), ev, "load")
		require.NoError(t, err)
		if res.Ran {
			ticks++
		}
		admitted += len(res.Admitted)
	}
	admitTook := time.Since(start)

	// Joins through HTTP: authentication, two rate limits, the risk script
	// and the join script, JSON over loopback, 50 concurrent clients.
	const nHTTP = 20_000
	hr := newRoomOn(t, rdb, "loadhttp:", inv, waitingroom.Options{JoinPerIP: 1 << 30,
		Risk: waitingroom.Risk{IPAccounts: 1 << 30, IPAccountsHigh: 1 << 30}})
	e := newEdge(t, hr)
	hev := inv.add(time.Now().Add(-time.Minute))
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	hc := &http.Client{Transport: tr}
	httpTook := spread(t, nHTTP, func(i int64) error {
		req, _ := http.NewRequest("POST", e.url+"/v1/events/"+hev+"/queue", nil)
		req.Header.Set("Authorization", "Bearer "+e.token(session.Identity{UserID: "h" + strconv.FormatInt(i, 10), DeviceID: "d" + strconv.FormatInt(i, 10)}))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("join: %d", resp.StatusCode)
		}
		return nil
	})

	var b strings.Builder
	fmt.Fprintf(&b, "redis-benchmark, 50 clients, %d requests each:\n", n)
	for k, v := range base {
		fmt.Fprintf(&b, "  %-10s %10.0f requests/s\n", k, v)
	}
	fmt.Fprintf(&b, "  %-10s %10.0f calls/s (EVAL of the join script, a new fan each call)\n", "join", joinRB)
	fmt.Fprintf(&b, "room (Go, 50 goroutines, rate limits and risk are the edge's and not included):\n")
	fmt.Fprintf(&b, "  joins:      %d in %s = %.0f joins/s\n", n, joinTook.Round(time.Millisecond), float64(n)/joinTook.Seconds())
	fmt.Fprintf(&b, "  admissions: %d in %s = %.0f admissions/s (%d ticks of up to 1000, %.0f ticks/s)\n",
		admitted, admitTook.Round(time.Millisecond), float64(admitted)/admitTook.Seconds(), ticks, float64(ticks)/admitTook.Seconds())
	fmt.Fprintf(&b, "  HTTP joins: %d in %s = %.0f joins/s (POST /queue, 50 clients, edge checks included)\n",
		nHTTP, httpTook.Round(time.Millisecond), float64(nHTTP)/httpTook.Seconds())
	t.Log("\n" + b.String())
}

// waitingroomJoinScript fetches the join script's source through the room's
// Redis (the script cache holds it after one call).
func waitingroomJoinScript(t *testing.T) string {
	src, err := os.ReadFile("scripts.go")
	require.NoError(t, err)
	s := string(src)
	i := strings.Index(s, "var joinScript = redis.NewScript(`")
	require.GreaterOrEqual(t, i, 0)
	s = s[i+len("var joinScript = redis.NewScript(`"):]
	return s[:strings.Index(s, "`)")]
}

// TestLoadIdleSockets holds ENCORE_WR_SOCKETS queued WebSockets in this
// process and reports memory per socket.
func TestLoadIdleSockets(t *testing.T) {
	want, _ := strconv.Atoi(os.Getenv("ENCORE_WR_SOCKETS"))
	if want <= 0 {
		t.Skip("set ENCORE_WR_SOCKETS=<n> to run the idle-socket measurement")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	t.Logf("open files limit: %d (hard)", lim.Max)

	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{JoinPerIP: 1 << 30, Risk: waitingroom.Risk{IPAccounts: 1 << 30, IPAccountsHigh: 1 << 30}})
	ev := inv.add(time.Now().Add(-time.Minute))
	issuer := session.NewIssuer("load-secret")
	srv := &api.Server{Sessions: issuer, Log: quietLog(), Room: r}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	runtime.GC()
	before := memory()
	goroutinesBefore := runtime.NumGoroutine()

	const perChild = 10_000
	var children []*exec.Cmd
	url := "ws://" + ln.Addr().String() + "/v1/events/" + ev + "/queue/ws?access_token="
	start := time.Now()
	for c := 0; c*perChild < want; c++ {
		count := min(perChild, want-c*perChild)
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLoadSocketClients$", "-test.timeout", "30m")
		cmd.Env = append(os.Environ(), "ENCORE_WR_CLIENT_URL="+url, "ENCORE_WR_CLIENT_SECRET=load-secret",
			fmt.Sprintf("ENCORE_WR_CLIENT_COUNT=%d", count), fmt.Sprintf("ENCORE_WR_CLIENT_FIRST=%d", c*perChild),
			fmt.Sprintf("ENCORE_WR_CLIENT_SOURCE=127.0.0.%d", c+2))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		children = append(children, cmd)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "clients:") {
					t.Log(sc.Text())
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	deadline := time.Now().Add(10 * time.Minute)
	for r.SocketCount() < int64(want) {
		require.True(t, time.Now().Before(deadline), "only %d of %d sockets connected", r.SocketCount(), want)
		time.Sleep(500 * time.Millisecond)
	}
	connectTook := time.Since(start)
	// Idle for two heartbeat intervals: every socket gets pushed positions.
	time.Sleep(12 * time.Second)
	runtime.GC()
	after := memory()
	held := r.SocketCount()
	per := func(k string) float64 { return float64(after[k]-before[k]) / float64(held) / 1024 }
	t.Logf("\nidle queued sockets held: %d (connected in %s; goroutines %d -> %d)\n"+
		"per socket: %.1f KiB RSS, %.1f KiB Go heap in use, %.1f KiB goroutine stacks, %.1f KiB from the OS (Go)\n"+
		"totals: RSS %.0f MiB, heap %.0f MiB, stacks %.0f MiB",
		held, connectTook.Round(time.Second), goroutinesBefore, runtime.NumGoroutine(),
		per("rss"), per("heap"), per("stack"), per("sys"),
		float64(after["rss"])/(1<<20), float64(after["heap"])/(1<<20), float64(after["stack"])/(1<<20))
	require.EqualValues(t, want, held)
}

func memory() map[string]uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := map[string]uint64{"heap": ms.HeapInuse, "stack": ms.StackInuse, "sys": ms.Sys}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				out["rss"] = kb * 1024
			}
		}
	}
	return out
}

// TestLoadSocketClients is the client side of TestLoadIdleSockets, run in a
// child process: it opens ENCORE_WR_CLIENT_COUNT sockets from
// ENCORE_WR_CLIENT_SOURCE and heartbeats on each every 5 seconds.
func TestLoadSocketClients(t *testing.T) {
	url := os.Getenv("ENCORE_WR_CLIENT_URL")
	if url == "" {
		t.Skip("the client side of TestLoadIdleSockets")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	count, _ := strconv.Atoi(os.Getenv("ENCORE_WR_CLIENT_COUNT"))
	first, _ := strconv.Atoi(os.Getenv("ENCORE_WR_CLIENT_FIRST"))
	issuer := session.NewIssuer(os.Getenv("ENCORE_WR_CLIENT_SECRET"))
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(os.Getenv("ENCORE_WR_CLIENT_SOURCE"))}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: -1}}
	ctx := context.Background()
	var mu sync.Mutex
	var conns []*websocket.Conn
	var waiting, failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := first; i < first+count; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			tok := issuer.Issue(fmt.Sprintf("load%06d", i), fmt.Sprintf("dev%06d", i), time.Now())
			conn, _, err := websocket.Dial(ctx, url+tok, &websocket.DialOptions{HTTPClient: client})
			if err != nil {
				if failed.Add(1) < 5 {
					fmt.Fprintln(os.Stderr, "dial:", err)
				}
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			go func() {
				for {
					_, msg, err := conn.Read(ctx)
					if err != nil {
						return
					}
					var st waitingroom.State
					if json.Unmarshal(msg, &st) == nil && st.Status == waitingroom.StatusWaiting {
						waiting.Add(1)
					}
				}
			}()
		}()
	}
	wg.Wait()
	fmt.Printf("clients: %d connected from %s, %d failed\n", len(conns), os.Getenv("ENCORE_WR_CLIENT_SOURCE"), failed.Load())
	for round := 0; ; round++ {
		time.Sleep(5 * time.Second)
		mu.Lock()
		list := append([]*websocket.Conn(nil), conns...)
		mu.Unlock()
		for i, c := range list {
			if i%100 == round%100 {
				time.Sleep(time.Millisecond) // spread the beats a little
			}
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"heartbeat"}`))
		}
		fmt.Printf("clients: %d sockets, %d waiting states received\n", len(list), waiting.Load())
	}
}
