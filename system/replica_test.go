package system_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/freeport"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/dev/testenv/temporaltest"
	"github.com/encore-tickets/encore/seatmap"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/vocab"
)

// replicaStarts lets one replica of the test cluster start at a time. A
// replica keeps no replication slot, so nothing holds the WAL it has yet to
// stream: another replica's copy forces a checkpoint, which removed WAL a
// copy still needed ("requested WAL segment ... has already been removed").
// A replica is streaming and caught up before the next copy begins.
var replicaStarts sync.Mutex

// startReplica starts a streaming replica of the test cluster, stopped when
// the test ends, and returns it, caught up, with the URL of the database at
// dbURL on it.
func startReplica(t testing.TB, dbURL string) (*devstack.Replica, string) {
	t.Helper()
	replicaStarts.Lock()
	defer replicaStarts.Unlock()
	dir := t.TempDir()
	// The server runs as the postgres user when the tests run as root.
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := devstack.StartReplica(ctx, dbURL, filepath.Join(dir, "replica"), freeLoopbackPort(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rep.Stop()) })
	t.Logf("replica on port %d: cluster copied in %s, standby up %s later", rep.Port(),
		rep.CopyTime.Round(time.Millisecond), rep.StartTime.Round(time.Millisecond))
	_, err = rep.CatchUp(ctx)
	require.NoError(t, err)
	repURL, err := rep.URLFor(dbURL)
	require.NoError(t, err)
	return rep, repURL
}

// freeLoopbackPort is a port for a server another process starts: from
// below the ephemeral range, so no outgoing connection takes it first.
func freeLoopbackPort(t testing.TB) int {
	ports, err := freeport.Take("127.0.0.1", 1)
	require.NoError(t, err)
	return ports[0]
}

func redisURL(t *testing.T) string {
	if u := os.Getenv(testenv.EnvRedisURL); u != "" {
		return u
	}
	rdb, _ := testenv.Redis(t)
	return "redis://" + rdb.Options().Addr
}

// setReplay pauses or resumes the replica's replay (as superuser).
func setReplay(t *testing.T, repURL string, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, repURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	fn := "pg_wal_replay_pause()"
	if on {
		fn = "pg_wal_replay_resume()"
	}
	_, err = conn.Exec(ctx, "SELECT "+fn)
	require.NoError(t, err)
}

func TestOnAReplicaHoldsAndBookingsWriteThePrimaryWhileBrowseReadsComeFromTheReplica(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	e.stopWorker() // the process below runs every workflow and activity
	_, repURL := startReplica(t, e.dbURL)
	srv := temporaltest.Temporal(t)
	ctx, cancel := context.WithCancel(context.Background())

	cfg := e.cfg // the test's database, sandbox and Temporal namespace
	cfg.Env, cfg.DemoLogin = "development", true
	cfg.ReaderDatabaseURL = config.Secret(repURL)
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	p, err := system.New(ctx, cfg, log, e.dbURL, redisURL(t), srv.FrontendAddress())
	require.NoError(t, err)
	stopWorker := func() {}
	defer func() {
		stopWorker()
		cancel() // the loops give their connections back
		p.Close()
	}()
	stopWorker, err = p.RunWorker(ctx)
	require.NoError(t, err)
	addr, _, err := p.ServeAPI(ctx)
	require.NoError(t, err)
	base := "http://" + addr

	// The browse pool is on the replica and cannot write; the buy plane's
	// pool is the primary.
	var inRecovery bool
	require.NoError(t, p.Browse.Reader.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
	require.True(t, inRecovery, "browse reads come from the replica")
	require.NoError(t, p.Pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
	require.False(t, inRecovery, "the hold path uses the primary")
	_, err = p.Browse.Reader.Exec(ctx, "SET default_transaction_read_only = off; UPDATE seats SET version = version WHERE false")
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "a write on the browse pool fails: %v", err)
	require.Equal(t, "25006", pgErr.Code, "read_only_sql_transaction: the standby refuses it")
	require.NotNil(t, p.Browse.Fresh, "seat-map fills wait for the replica")

	// A fan signs in, holds, pays and is PAID, all through this process.
	status, _, s := e.callAt(base, http.MethodPost, "/v1/sessions", "", map[string]any{"user_id": "rina_" + e.eventID,
		"device_id": "phone-" + e.eventID, "email": "rina@example.com"})
	require.Equal(t, http.StatusCreated, status, "%v", s)
	fan := s["token"].(string)
	seats := []string{e.seat(4, 1), e.seat(4, 2)}
	status, _, h := e.callAt(base, http.MethodPost, "/v1/holds", fan, map[string]any{"event_id": e.eventID, "seat_ids": seats})
	require.Equal(t, http.StatusCreated, status, "%v", h)
	id := h["hold_id"].(string)
	status, _, co := e.callAt(base, http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": e.pay.card()})
	require.Equal(t, http.StatusOK, status, "%v", co)
	// The fan's page waits on the booking (Prefer: wait), woken through this
	// process's listener, until it is paid.
	status, hdr, last := e.callAt(base, http.MethodGet, "/v1/bookings/"+id, fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", last)
	for until := time.Now().Add(60 * time.Second); last["status"] != string(vocab.BookingPaid) && time.Now().Before(until); {
		status, h, b := e.callAt(base, http.MethodGet, "/v1/bookings/"+id, fan, nil, "If-None-Match", hdr.Get("ETag"), "Prefer", "wait=20")
		require.Contains(t, []int{http.StatusOK, http.StatusNotModified}, status)
		if status == http.StatusOK {
			hdr, last = h, b
		}
	}
	require.Equal(t, string(vocab.BookingPaid), last["status"], "the booking is paid: %v", last)
	require.Equal(t, 2, e.count(`SELECT count(*) FROM seats WHERE reservation_id = $1 AND status = 'SOLD'`, id))
	admin, err := p.ServeAdmin(ctx)
	require.NoError(t, err)
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), "\nencore_booking_changes_listening 1\n", "the API process listens for booking changes")

	// The seat map, read from the replica, shows the seats sold once the
	// relay's invalidation is out.
	section := "sec_" + e.eventID[4:]
	require.Eventually(t, func() bool {
		status, _, m := e.callAt(base, http.MethodGet, "/v1/events/"+e.eventID+"/sections/"+section+"/seats", "", nil)
		if status != http.StatusOK {
			return false
		}
		sold := 0
		for _, seat := range m["seats"].([]any) {
			seat := seat.(map[string]any)
			if slices.Contains(seats, seat["id"].(string)) && seat["status"] == string(vocab.SeatSold) {
				sold++
			}
		}
		return sold == 2
	}, 20*time.Second, 50*time.Millisecond, "the map shows the sold seats")
	// And the event itself is read from the replica.
	status, _, ev := e.callAt(base, http.MethodGet, "/v1/events/"+e.eventID, "", nil)
	require.Equal(t, http.StatusOK, status, "%v", ev)
}

// browseOnReplica is a browse plane whose reader is the replica.
func browseOnReplica(t *testing.T, repURL string) *system.BrowsePlane {
	t.Helper()
	cfg := config.Default()
	cfg.ReaderDatabaseURL = config.Secret(repURL)
	rdb, _ := testenv.Redis(t)
	b, err := system.NewBrowsePlane(context.Background(), cfg, testenv.DatabaseURL(t), rdb, prometheus.NewRegistry(),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return b
}

// replicaEvent creates a published event of one small section on the
// primary and waits until the replica has it.
func replicaEvent(t *testing.T, rep *devstack.Replica) (eventID, sectionID string) {
	t.Helper()
	eventID = "evt_" + testenv.RandomSuffix()
	sectionID = "sec_" + eventID[4:]
	require.NoError(t, demo.Create(context.Background(), testenv.DB(t), demo.Event{ID: eventID, Title: "Replica", VenueID: "ven_" + eventID[4:],
		VenueName: "Replica", City: "C", Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{{ID: sectionID, Name: "A", Rows: 5, PerRow: 10, BasePrice: 4000}}}))
	// Bounded: a replica that stopped replaying fails the test, not the run.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := rep.CatchUp(ctx)
	require.NoError(t, err, "the replica replays the new event")
	return eventID, sectionID
}

// seatStatus is a seat's status in a JSON snapshot.
func seatStatus(t *testing.T, e seatmap.Entry, seatID string) string {
	t.Helper()
	var snap seatmap.SnapshotJSON
	require.NoError(t, json.Unmarshal(e.Body, &snap))
	for _, s := range snap.Seats {
		if s.ID == seatID {
			return s.Status
		}
	}
	t.Fatalf("seat %s not in the snapshot", seatID)
	return ""
}

// setSeat changes a seat's status on the primary and then, as the relay
// does after the commit, invalidates its section.
func setSeat(t *testing.T, b *system.BrowsePlane, eventID, sectionID, seatID string, status vocab.SeatStatus) {
	t.Helper()
	ctx := context.Background()
	_, err := testenv.DB(t).Exec(ctx, `UPDATE seats SET status = $2, version = version + 1 WHERE id = $1`, seatID, status)
	require.NoError(t, err)
	require.NoError(t, b.Cache.Invalidate(ctx, eventID, sectionID))
}

func replicaSeatStatus(t *testing.T, repURL, seatID string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, repURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var s string
	require.NoError(t, conn.QueryRow(ctx, `SELECT status FROM seats WHERE id = $1`, seatID).Scan(&s))
	return s
}

func TestAViewerAfterAnInvalidationNeverSeesASnapshotOlderThanTheChangeWhileTheReplicaLags(t *testing.T) {
	t.Parallel()
	rep, repURL := startReplica(t, testenv.DatabaseURL(t))
	b := browseOnReplica(t, repURL)
	// The first fill waits for the replica to replay the primary's position,
	// other tests' writes to the cluster included: room for that on a loaded
	// machine.
	b.Fresh.MaxWait = 10 * time.Second
	eventID, sectionID := replicaEvent(t, rep)
	seat := demo.SeatID(sectionID, 0, 1)
	ctx := context.Background()

	e, err := b.Cache.Get(ctx, eventID, sectionID, seatmap.FormatJSON)
	require.NoError(t, err)
	require.Equal(t, string(vocab.SeatAvailable), seatStatus(t, e, seat))

	// The replica stops replaying: a change on the primary does not reach it.
	b.Fresh.MaxWait = 300 * time.Millisecond
	setReplay(t, repURL, false)
	t.Cleanup(func() { setReplay(t, repURL, true) })
	setSeat(t, b, eventID, sectionID, seat, vocab.SeatBlocked)
	require.Equal(t, string(vocab.SeatAvailable), replicaSeatStatus(t, repURL, seat), "the replica still has the old seat")

	start := time.Now()
	e, err = b.Cache.Get(ctx, eventID, sectionID, seatmap.FormatJSON)
	took := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, string(vocab.SeatBlocked), seatStatus(t, e, seat), "the viewer's refetch shows the change")
	require.EqualValues(t, 1, b.Fresh.Fallbacks(), "read from the primary once the wait ran out")
	require.GreaterOrEqual(t, took, 300*time.Millisecond, "it waited for the replica first")
	// Bounded by the wait (500 ms), not by the replica: paused, it would
	// never catch up. The margin is for a loaded machine.
	require.Less(t, took, 5*time.Second, "within the bound")

	// The replica resumes shortly after the next change: the fill waits for
	// it and reads the replica.
	setSeat(t, b, eventID, sectionID, seat, vocab.SeatAvailable)
	b.Fresh.MaxWait = 10 * time.Second // room for the replica to resume on a loaded machine
	resumed := make(chan error, 1)
	go func() { resumed <- resumeWhenAFillWaits(repURL, time.Now()) }()
	e, err = b.Cache.Get(ctx, eventID, sectionID, seatmap.FormatJSON)
	require.NoError(t, err)
	require.NoError(t, <-resumed)
	require.Equal(t, string(vocab.SeatAvailable), seatStatus(t, e, seat))
	require.EqualValues(t, 1, b.Fresh.Fallbacks(), "this time the replica caught up in time")
}

// resumeWhenAFillWaits resumes the replica's replay once a seat-map fill
// that began after since is waiting on it (asking the replica how far it
// has replayed).
func resumeWhenAFillWaits(repURL string, since time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, repURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		var waiting bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid()
			AND query LIKE '%pg_last_wal_replay_lsn() >=%' AND query_start > $1)`, since).Scan(&waiting)
		if err != nil || waiting {
			_, rerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_wal_replay_resume()")
			return errors.Join(err, rerr)
		}
		select {
		case <-ctx.Done():
			return errors.New("no seat-map fill waited on the replica")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestEveryRefetchAfterAnInvalidationShowsTheChangeOnAStreamingReplica(t *testing.T) {
	t.Parallel()
	rep, repURL := startReplica(t, testenv.DatabaseURL(t))
	b := browseOnReplica(t, repURL)
	eventID, sectionID := replicaEvent(t, rep)
	ctx := context.Background()
	var waits []time.Duration
	for i := range 40 {
		seat := demo.SeatID(sectionID, i%5, i/5+1)
		want := vocab.SeatBlocked
		setSeat(t, b, eventID, sectionID, seat, want)
		start := time.Now()
		e, err := b.Cache.Get(ctx, eventID, sectionID, seatmap.FormatJSON)
		waits = append(waits, time.Since(start))
		require.NoError(t, err)
		require.Equal(t, string(want), seatStatus(t, e, seat), "refetch %d shows the change", i)
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	t.Logf("refetch after invalidation on a replica: p50 %s, max %s, %d of %d read the primary",
		waits[len(waits)/2], waits[len(waits)-1], b.Fresh.Fallbacks(), len(waits))
}

// BenchmarkReplicaReplayLagUnderHoldLoad measures, on the replica of the
// test cluster, the time from a commit on the primary until the replica
// shows it, idle and while fans make and release holds (BENCHMARKS.md). A
// measurement, not a test: it runs with -bench, alone, and reports in its
// log; b.N is not used.
func BenchmarkReplicaReplayLagUnderHoldLoad(b *testing.B) {
	t := b
	e := newE2E(t)
	rep, repURL := startReplica(t, e.dbURL)
	ctx := context.Background()
	primary := e.store.Pool()
	_, err := primary.Exec(ctx, `CREATE TABLE IF NOT EXISTS replica_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	_, err = rep.CatchUp(ctx)
	require.NoError(t, err)
	replica, err := pgxpool.New(ctx, repURL)
	require.NoError(t, err)
	defer replica.Close()

	// probe commits a row n times and waits for each on the replica.
	probe := func(n int, syncCommit bool) []time.Duration {
		conn, err := primary.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		mode := "off"
		if syncCommit {
			mode = "on"
		}
		_, err = conn.Exec(ctx, "SET synchronous_commit = "+mode)
		require.NoError(t, err)
		defer conn.Exec(ctx, "RESET synchronous_commit") //nolint:errcheck
		var out []time.Duration
		for range n {
			var id int64
			require.NoError(t, conn.QueryRow(ctx, `INSERT INTO replica_probe DEFAULT VALUES RETURNING id`).Scan(&id))
			start := time.Now()
			for {
				var seen bool
				require.NoError(t, replica.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replica_probe WHERE id = $1)`, id).Scan(&seen))
				if seen {
					break
				}
				require.Less(t, time.Since(start), 30*time.Second, "the replica shows the commit")
			}
			out = append(out, time.Since(start))
			time.Sleep(5 * time.Millisecond) // kept: the probe's commits are spaced, as the measurement says
		}
		return out
	}
	report := func(what string, d []time.Duration) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		q := func(p float64) string {
			return fmt.Sprintf("%.1f", float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds())/1000)
		}
		t.Logf("replica lag %-58s n=%d p50 %s ms, p99 %s ms, max %s ms", what+":", len(d), q(.5), q(.99), q(1))
	}
	report("idle, commit with synchronous_commit on", probe(200, true))
	report("idle, commit with synchronous_commit off (test cluster)", probe(200, false))

	// Fans hold two seats and release them, four at a time.
	var holds atomic.Int64
	lctx, stop := context.WithCancel(ctx)
	var wg, loaded sync.WaitGroup
	for f := range 4 {
		wg.Add(1)
		loaded.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			defer once.Do(loaded.Done)
			fan := e.fan(fmt.Sprintf("lag%d", f))
			for n := 0; lctx.Err() == nil; n++ {
				if n == 1 {
					once.Do(loaded.Done) // this fan's load is under way
				}
				seats := []string{e.seat(10+f, 1+n%10*2), e.seat(10+f, 2+n%10*2)}
				status, h := e.call(http.MethodPost, "/v1/holds", fan, map[string]any{"event_id": e.eventID, "seat_ids": seats})
				if status != http.StatusCreated {
					t.Errorf("hold: %d %v", status, h)
					return
				}
				holds.Add(1)
				if status, _ := e.call(http.MethodDelete, "/v1/holds/"+h["hold_id"].(string), fan, nil); status >= 300 {
					t.Errorf("release: %d", status)
					return
				}
			}
		}()
	}
	loaded.Wait()
	start, before := time.Now(), holds.Load()
	syncOn := probe(300, true)
	syncOff := probe(300, false)
	rate := float64(holds.Load()-before) / time.Since(start).Seconds()
	stop()
	wg.Wait()
	report("under hold load, commit with synchronous_commit on", syncOn)
	report("under hold load, commit with synchronous_commit off (test cluster)", syncOff)
	t.Logf("hold load: %.0f holds/s (each one hold and one release), 4 fans", rate)
	lag, err := rep.Lag(ctx)
	require.NoError(t, err)
	t.Logf("replica %d bytes behind after the load", lag)
}
