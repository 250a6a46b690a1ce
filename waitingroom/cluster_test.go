package waitingroom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/internal/redisurl"
	"github.com/encore-tickets/encore/ratelimit"
	"github.com/encore-tickets/encore/ratelimit/slottest"
	"github.com/encore-tickets/encore/seathint"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
)

// startCluster starts three masters with a replica each on free loopback
// ports, stopped when the test ends.
func startCluster(tb testing.TB) *devstack.RedisCluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := devstack.StartRedisCluster(ctx, devstack.ClusterOptions{Dir: tb.TempDir(), Log: tb.Logf})
	if errors.Is(err, devstack.ErrNotInstalled) {
		tb.Skipf("no Redis programs to start a cluster with: %v", err)
	}
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// openCluster opens a client by the cluster's ENCORE_REDIS_URL form.
func openCluster(tb testing.TB, c *devstack.RedisCluster) redis.UniversalClient {
	tb.Helper()
	rdb, err := redisurl.Open(c.URL(), redisurl.Timeouts{Dial: 500 * time.Millisecond, Read: time.Second, Write: time.Second})
	require.NoError(tb, err)
	_, isCluster := rdb.(*redis.ClusterClient)
	require.True(tb, isCluster, "the URL names a cluster")
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// The keys of one event live in one slot, so one master serves the whole
// sale. Killing that master (SIGKILL) promotes its replica; replication is
// asynchronous, so what the replica had not received is lost. The test waits
// until the replica has every write before the kill, and then asserts that
// nothing was lost (the admitted fan's pass still checks, the hint still
// refuses) and that every operation works again on the new master.
func TestTheWaitingRoomHintsRateLimitsAndLiveInvalidationsRunOnARedisClusterAndSurviveAFailoverOfTheEventsMaster(t *testing.T) {
	cluster := startCluster(t)
	rdb, publisher := openCluster(t, cluster), openCluster(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	inv := newFake()
	event := inv.add(time.Now().Add(-time.Minute))
	const prefix = "clu:"
	room := newRoomOn(t, rdb, prefix, inv, waitingroom.Options{Capacity: 100, Batch: 100})
	hints := seathint.New(rdb, prefix)
	limiter := ratelimit.New(rdb, prefix+"rl:hold:", ratelimit.Limit{Count: 2, Per: time.Minute, Burst: 2})

	hub := seatmap.NewHub(rdb, prefix, seatmap.HubOptions{MinInterval: -1, ReadyTimeout: 5 * time.Second, Log: quietLog()})
	go hub.Run(ctx)
	viewer := hub.NewViewer()
	require.NoError(t, hub.Subscribe(ctx, viewer, event, "floor"))
	require.Equal(t, "reset", nextMessage(t, viewer).Type, "a new viewer fetches a snapshot first")
	invalidator := seatmap.NewCache(publisher, prefix, func(context.Context, string, string) (store.SectionSeats, error) {
		return store.SectionSeats{}, store.ErrNotFound
	}, seatmap.CacheOptions{})

	// round runs every operation for fans of one round and returns the
	// first fan's pass.
	round := func(t *testing.T, n int) (session.Identity, string) {
		first, second := fan(100*n+1), fan(100*n+2)
		_, err := room.Admit(ctx, first, event, "198.51.100.1", waitingroom.Proof{})
		require.NoError(t, err)
		_, err = room.Line().Join(ctx, second, event, 0)
		require.NoError(t, err)
		require.Subset(t, users(tick(t, room, event, "admitter")), []string{first.UserID, second.UserID})
		st, err := room.Line().Status(ctx, first, event)
		require.NoError(t, err)
		require.Equal(t, waitingroom.StatusAdmitted, st.Status)
		require.NoError(t, room.Passes().Check(ctx, first, event, st.Pass), "the pass names the lease on the cluster")

		seats := []string{fmt.Sprintf("r%d-1", n), fmt.Sprintf("r%d-2", n)}
		ok, _, err := hints.HoldWithin(ctx, limiter, first.UserID, event, seats, "res-"+first.UserID, time.Minute)
		require.NoError(t, err, "the limit and the hints ran on the cluster, not on the fallback")
		require.True(t, ok)
		ok, _, err = hints.HoldWithin(ctx, limiter, second.UserID, event, seats[1:], "res-"+second.UserID, time.Minute)
		require.True(t, ok)
		var contended *seathint.ContendedError
		require.ErrorAs(t, err, &contended, "the hint refuses a seat another fan holds")
		ok, _, err = hints.HoldWithin(ctx, limiter, first.UserID, event, []string{"x"}, "res-x", time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "the burst is two")
		ok, wait, err := hints.HoldWithin(ctx, limiter, first.UserID, event, []string{"y"}, "res-y", time.Minute)
		require.NoError(t, err, "the refusal is the cluster's")
		require.False(t, ok, "the third hold in a minute is over the account's limit")
		require.Positive(t, wait)

		// Another client publishes; the hub's subscription hears it. After
		// a failover the publisher learns the new master on its first error
		// (the relay retries, as here) and the hub may still be
		// resubscribing: publish until heard.
		heard := false
		for deadline := time.Now().Add(20 * time.Second); !heard && time.Now().Before(deadline); {
			if err := invalidator.Invalidate(ctx, event, "floor"); err != nil {
				t.Logf("invalidate: %v", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			select {
			case raw := <-viewer.C:
				var m seatmap.Message
				require.NoError(t, json.Unmarshal(raw, &m))
				heard = m.Type == "invalidate" && m.SectionID == "floor"
			case <-time.After(500 * time.Millisecond):
			}
		}
		require.True(t, heard, "the viewer heard the invalidation published through another client")
		return first, st.Pass
	}

	before, beforePass := round(t, 1)

	slotKey := "{" + event + "}"
	master, err := cluster.MasterOf(ctx, slotKey)
	require.NoError(t, err)
	waitReplicated(t, ctx, master)
	start := time.Now()
	require.NoError(t, cluster.Kill(master))
	require.NoError(t, cluster.WaitHealthy(ctx, 30*time.Second))
	promoted, err := cluster.MasterOf(ctx, slotKey)
	require.NoError(t, err)
	require.NotEqual(t, master, promoted, "the replica took over the event's slot")
	t.Logf("failover of %s to %s took %s", master, promoted, time.Since(start).Round(time.Millisecond))

	// The client learns the new master on its first errors: allow it that.
	var lastErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lastErr = room.Passes().Check(ctx, before, event, beforePass); lastErr == nil {
			break
		}
	}
	require.NoError(t, lastErr, "the admission replicated before the kill survives it")
	err = hints.Hold(ctx, event, []string{"r1-1"}, "res-late", time.Minute)
	var contended *seathint.ContendedError
	require.ErrorAs(t, err, &contended, "the hint replicated before the kill survives it")

	round(t, 2)
}

var replicaOffset = regexp.MustCompile(`slave\d+:.*offset=(\d+)`)

// waitReplicated waits until master's replica has every write so far (a
// failover then loses nothing the test made).
func waitReplicated(t *testing.T, ctx context.Context, master string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: master})
	defer c.Close()
	require.Eventually(t, func() bool {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return false
		}
		m := regexp.MustCompile(`master_repl_offset:(\d+)`).FindStringSubmatch(info)
		r := replicaOffset.FindStringSubmatch(info)
		if m == nil || r == nil {
			return false
		}
		mo, _ := strconv.ParseInt(m[1], 10, 64)
		ro, _ := strconv.ParseInt(r[1], 10, 64)
		return ro >= mo
	}, 10*time.Second, 20*time.Millisecond, "the replica caught up")
}

func nextMessage(t *testing.T, v *seatmap.Viewer) seatmap.Message {
	t.Helper()
	select {
	case raw := <-v.C:
		var m seatmap.Message
		require.NoError(t, json.Unmarshal(raw, &m))
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message for the viewer")
		return seatmap.Message{}
	}
}

// BenchmarkJoinsOnARedisCluster joins fans through Line.Join from 50
// goroutines on a three-master cluster, for one event (one slot, so one
// master does all the work) and for three events whose slots are on the
// three masters, then runs redis-benchmark --cluster (SET, 50 clients) on
// the same cluster as the ceiling of the same run.
func BenchmarkJoinsOnARedisCluster(b *testing.B) {
	cluster := startCluster(b)
	rdb := openCluster(b, cluster)
	ctx := context.Background()
	inv := newFake()
	room := newRoomOn(b, rdb, "bench:", inv, waitingroom.Options{})
	one := inv.add(time.Now().Add(-time.Minute))
	masters := map[string]string{}
	for len(masters) < 3 {
		ev := inv.add(time.Now().Add(-time.Minute))
		m, err := cluster.MasterOf(ctx, "{"+ev+"}")
		require.NoError(b, err)
		if _, ok := masters[m]; !ok {
			masters[m] = ev
		}
	}
	var spread []string
	for _, ev := range masters {
		spread = append(spread, ev)
	}
	var seq atomic.Int64
	for _, c := range []struct {
		name   string
		events []string
	}{{"one event", []string{one}}, {"an event on each master", spread}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					ev := c.events[int(i)%len(c.events)]
					if _, err := room.Line().Join(ctx, session.Identity{UserID: "u" + strconv.FormatInt(i, 10), DeviceID: "d"}, ev, 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
			b.StopTimer()
			if b.N >= 1000 {
				b.ReportMetric(redisBenchmarkSET(b, cluster), "redis-benchmark-SET/s")
			}
		})
	}
}

var requestsPerSecond = regexp.MustCompile(`SET: ([\d.]+) requests per second`)

// redisBenchmarkSET is redis-benchmark --cluster's SET throughput with 50
// clients on the cluster.
func redisBenchmarkSET(b *testing.B, c *devstack.RedisCluster) float64 {
	b.Helper()
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Logf("no redis-benchmark: %v", err)
		return 0
	}
	host, port, _ := net.SplitHostPort(c.Addrs()[0])
	out, err := exec.Command(bin, "--cluster", "-h", host, "-p", port, "-t", "set", "-n", "200000", "-c", "50", "-q").CombinedOutput()
	require.NoError(b, err, "%s", out)
	m := requestsPerSecond.FindSubmatch(out)
	require.NotNil(b, m, "%s", out)
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(b, err)
	return v
}

// A Redis Cluster runs a script only when its keys share one slot; one
// server runs any. So this drives every script of the room through its real
// callers on one server and checks the keys each call names.
func TestEveryRoomScriptTouchesOneClusterSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix, rec := slottest.Record(t)
	inv := newFake()
	event := inv.add(time.Now().Add(-time.Minute))
	r := newRoomOn(t, rdb, prefix+testenv.RandomSuffix()+":", inv, waitingroom.Options{Capacity: 10})
	ctx := context.Background()
	asha, badu := fan(1), fan(2)

	_, err := r.Admit(ctx, asha, event, "203.0.113.7", waitingroom.Proof{}) // limits, risk, join
	require.NoError(t, err)
	_, err = r.Line().Join(ctx, badu, event, 0)
	require.NoError(t, err)
	require.Equal(t, []string{asha.UserID, badu.UserID}, users(tick(t, r, event, "owner-1")))
	st, err := r.Line().Status(ctx, asha, event)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusAdmitted, st.Status)
	require.NoError(t, r.Passes().Check(ctx, asha, event, st.Pass))
	require.NoError(t, r.Passes().Extend(ctx, asha, event, time.Now().Add(time.Minute)))
	inv.mu.Lock()
	inv.outcomes[asha.UserID] = store.HoldOutcome{Paid: true}
	inv.mu.Unlock()
	require.NoError(t, r.Admitter().Settle(ctx, event))
	_, err = r.Passes().Offer(ctx, asha, event, 7, time.Now().Add(time.Minute))
	require.NoError(t, err)
	revoked, err := r.Revoke(ctx, event, badu.UserID)
	require.NoError(t, err)
	require.True(t, revoked)
	require.NoError(t, r.MarkSuspicious(ctx, event, badu.UserID))

	slottest.RequireEachRanInOneSlot(t, rec, waitingroom.ScriptHashes())
}
