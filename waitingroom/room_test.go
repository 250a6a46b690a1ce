package waitingroom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const testSecret = "waiting-room-test-secret"

// fakeInventory stands in for the database in tests that only exercise
// Redis: events, free units and hold outcomes are set by the test.
type fakeInventory struct {
	mu       sync.Mutex
	gates    map[string]store.Gate
	free     map[string]int64
	freeErr  error
	outcomes map[string]store.HoldOutcome
}

func newFake() *fakeInventory {
	return &fakeInventory{gates: map[string]store.Gate{}, free: map[string]int64{}, outcomes: map[string]store.HoldOutcome{}}
}

func (f *fakeInventory) add(opensAt time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := "evt_" + testenv.RandomSuffix() + testenv.RandomSuffix()
	f.gates[id] = store.Gate{EventID: id, Metered: true, OnsaleAt: opensAt}
	f.free[id] = 1_000_000
	return id
}

func (f *fakeInventory) EventGate(_ context.Context, id string) (store.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.gates[id]
	if !ok {
		return store.Gate{}, store.ErrNotFound
	}
	return g, nil
}

func (f *fakeInventory) MeteredEvents(context.Context, time.Duration) ([]store.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Gate
	for _, g := range f.gates {
		out = append(out, g)
	}
	return out, nil
}

func (f *fakeInventory) FreeUnits(_ context.Context, id string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.free[id], f.freeErr
}

func (f *fakeInventory) setFree(id string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free[id] = n
}

func (f *fakeInventory) HoldOutcomes(_ context.Context, _ string, users []string) (map[string]store.HoldOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]store.HoldOutcome{}
	for _, u := range users {
		out[u] = f.outcomes[u]
	}
	return out, nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newRoom builds a room on the test Redis with fast ticks.
func newRoom(t testing.TB, inv waitingroom.Inventory, opts waitingroom.Options) *waitingroom.Room {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	// Each room has its own namespace under the package's prefix, so rate
	// limits and notifications of one test do not reach another.
	return newRoomOn(t, rdb, prefix+testenv.RandomSuffix()+":", inv, opts)
}

func newRoomOn(t testing.TB, rdb redis.UniversalClient, prefix string, inv waitingroom.Inventory, opts waitingroom.Options) *waitingroom.Room {
	t.Helper()
	opts.Prefix = prefix
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	if opts.JoinPerAccount == 0 {
		opts.JoinPerAccount = 100_000
	}
	if opts.JoinPerIP == 0 {
		opts.JoinPerIP = 1_000_000
	}
	if opts.LookupPerIP == 0 {
		opts.LookupPerIP = 1_000_000
	}
	if opts.StatusPerAccount == 0 {
		opts.StatusPerAccount = 100_000
	}
	r := waitingroom.New(rdb, inv, []byte(testSecret), opts)
	r.Register(prometheus.NewRegistry())
	t.Cleanup(r.Close)
	return r
}

func fan(i int) session.Identity {
	return session.Identity{UserID: fmt.Sprintf("fan%04d", i), DeviceID: fmt.Sprintf("dev%04d", i)}
}

// tick runs ticks until one runs (a tick slot runs once, so a call in a
// slot that already ran is skipped).
func tick(t testing.TB, r *waitingroom.Room, event, owner string) waitingroom.TickResult {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := r.Admitter().Tick(context.Background(), event, owner)
		require.NoError(t, err)
		if res.Ran {
			return res
		}
		require.True(t, time.Now().Before(deadline), "no tick ran: status %d", res.Status)
		time.Sleep(2 * time.Millisecond)
	}
}

// raceTicks runs one admitter for each owner, all at once, each ticking ev
// for d and passing every result to each, which may run in any of their
// goroutines at once. An admitter stops early on a failed tick or when each
// returns false.
func raceTicks(t *testing.T, r *waitingroom.Room, ev string, owners []string, d time.Duration, each func(owner string, res waitingroom.TickResult) bool) {
	t.Helper()
	var wg sync.WaitGroup
	for _, owner := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(d); time.Now().Before(deadline); {
				res, err := r.Admitter().Tick(context.Background(), ev, owner)
				if err != nil {
					t.Error(err)
					return
				}
				if !each(owner, res) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

func users(res waitingroom.TickResult) []string {
	var out []string
	for _, a := range res.Admitted {
		out = append(out, a.UserID)
	}
	return out
}

func join(t testing.TB, r *waitingroom.Room, who session.Identity, event string) waitingroom.State {
	t.Helper()
	st, err := r.Line().Join(context.Background(), who, event, 0)
	require.NoError(t, err)
	return st
}

// TestPreOpenShuffleIsUniform: fans who join before opening, always in the
// same order, end up in every place equally often (chi-square over many
// trials); the same test detects the order of fans who join after opening,
// which is FIFO by design.
func TestPreOpenShuffleIsUniform(t *testing.T) {
	const fans, trials = 8, 1200
	// Chi-square with (8-1)*(8-1) = 49 degrees of freedom: 85.35 is the 0.999
	// quantile, so a correct shuffle fails this test once in a thousand runs.
	const critical = 85.35
	for _, tc := range []struct {
		name    string
		opensIn time.Duration
		uniform bool
	}{
		{"joined before opening: uniform", time.Hour, true},
		{"joined after opening: ordered", -time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := newFake()
			r := newRoom(t, inv, waitingroom.Options{})
			var counts [fans][fans]int
			var mu sync.Mutex
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for trial := 0; trial < trials; trial++ {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					ev := inv.add(time.Now().Add(tc.opensIn))
					for i := 0; i < fans; i++ {
						join(t, r, fan(i), ev)
					}
					// Places at opening: the positions everyone sees then.
					for i := 0; i < fans; i++ {
						st := join(t, r, fan(i), ev)
						mu.Lock()
						counts[i][st.Position-1]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			expected := float64(trials) / fans
			chi := 0.0
			for i := range counts {
				for p := range counts[i] {
					d := float64(counts[i][p]) - expected
					chi += d * d / expected
				}
			}
			t.Logf("chi-square = %.1f (critical %.2f at 49 df, p = 0.001)", chi, critical)
			if tc.uniform {
				require.Less(t, chi, critical, "places are not uniform: %v", counts)
				// The first joiner is not favoured: place 1 about 1/8 of the time.
				sd := math.Sqrt(trials * (1.0 / fans) * (1 - 1.0/fans))
				require.InDelta(t, expected, counts[0][0], 5*sd)
			} else {
				require.Greater(t, chi, critical)
				for i := 0; i < fans; i++ {
					require.Equal(t, trials, counts[i][i], "after opening, fan %d is always in place %d", i, i+1)
				}
			}
		})
	}
}

func TestPreOpenJoinersAreAheadOfLaterOnes(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Batch: 100})
	ev := inv.add(time.Now().Add(400 * time.Millisecond))
	for i := 0; i < 20; i++ {
		st := join(t, r, fan(i), ev)
		require.Equal(t, waitingroom.StatusWaiting, st.Status)
		require.False(t, st.OpensAt.IsZero(), "before opening the state says when places are drawn")
	}
	res := tick(t, r, ev, "a")
	require.Empty(t, res.Admitted, "nobody is admitted before opening")
	time.Sleep(500 * time.Millisecond)
	for i := 20; i < 30; i++ {
		st := join(t, r, fan(i), ev)
		require.EqualValues(t, i+1, st.Position, "later arrivals join the back")
	}
	res = tick(t, r, ev, "a")
	got := users(res)
	require.Len(t, got, 30)
	early := append([]string(nil), got[:20]...)
	sort.Strings(early)
	for i := 0; i < 20; i++ {
		require.Equal(t, fan(i).UserID, early[i])
	}
	for i := 20; i < 30; i++ {
		require.Equal(t, fan(i).UserID, got[i], "strict FIFO after opening")
	}
}

func TestStrictFIFOAfterOpen(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Batch: 7, Capacity: 1000})
	ev := inv.add(time.Now().Add(-time.Minute))
	const n = 50
	for i := 0; i < n; i++ {
		st := join(t, r, fan(i), ev)
		require.EqualValues(t, i+1, st.Position)
		require.Positive(t, st.EstimatedWaitSeconds)
	}
	var order []string
	for len(order) < n {
		res := tick(t, r, ev, "a")
		require.LessOrEqual(t, len(res.Admitted), 7, "the batch cap holds")
		order = append(order, users(res)...)
	}
	for i := 0; i < n; i++ {
		require.Equal(t, fan(i).UserID, order[i])
	}
}

func TestRejoinKeepsPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opensIn time.Duration
	}{
		{"before opening", time.Hour},
		{"after opening", -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := newFake()
			r := newRoom(t, inv, waitingroom.Options{})
			ev := inv.add(time.Now().Add(tc.opensIn))
			places := map[string]int64{}
			for i := 0; i < 10; i++ {
				join(t, r, fan(i), ev)
			}
			for i := 0; i < 10; i++ {
				places[fan(i).UserID] = join(t, r, fan(i), ev).Position
			}
			for round := 0; round < 3; round++ {
				for i := 9; i >= 0; i-- {
					st := join(t, r, fan(i), ev)
					require.Equal(t, places[fan(i).UserID], st.Position, "rejoin %d of %s", round, fan(i).UserID)
					st, err := r.Line().Status(context.Background(), fan(i), ev)
					require.NoError(t, err)
					require.Equal(t, places[fan(i).UserID], st.Position)
				}
			}
		})
	}
}

// A fan dropped before opening who comes back before opening keeps the
// place drawn for them: leaving and rejoining is no way to redraw.
func TestNoRedrawBeforeOpening(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{HeartbeatTimeout: 100 * time.Millisecond, Batch: 100})
	ev := inv.add(time.Now().Add(time.Hour))
	for i := 0; i < 30; i++ {
		join(t, r, fan(i), ev)
	}
	before := join(t, r, fan(7), ev).Position
	time.Sleep(150 * time.Millisecond)
	res := tick(t, r, ev, "a") // drops all 30 as silent
	require.EqualValues(t, 30, res.StaleDropped)
	for i := 0; i < 30; i++ {
		join(t, r, fan(i), ev)
	}
	require.Equal(t, before, join(t, r, fan(7), ev).Position)
}

// TestStaleNeverAdmitted: silent fans are dropped, at most CleanupCap per
// tick; those left at the head of the line are skipped, never admitted.
func TestStaleNeverAdmitted(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		stale, live, cap, batch int
	}{
		{"fewer stale than the cap", 5, 5, 10, 10},
		{"three times the cap stale", 30, 5, 10, 10},
		{"stale beyond cap plus batch", 60, 5, 10, 3},
		{"only stale", 25, 0, 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := newFake()
			r := newRoom(t, inv, waitingroom.Options{HeartbeatTimeout: time.Second, CleanupCap: tc.cap,
				Batch: tc.batch, Capacity: 1000})
			ev := inv.add(time.Now().Add(-time.Minute))
			for i := 0; i < tc.stale; i++ {
				join(t, r, fan(i), ev)
			}
			time.Sleep(1100 * time.Millisecond) // their heartbeats lapse
			live := map[string]bool{}
			for i := 1000; i < 1000+tc.live; i++ {
				join(t, r, fan(i), ev)
				live[fan(i).UserID] = true
			}
			admitted := map[string]bool{}
			var dropped int64
			for n := 0; n < 100 && len(admitted) < tc.live; n++ {
				res := tick(t, r, ev, "a")
				dropped += res.StaleDropped + res.StaleSkipped
				require.LessOrEqual(t, res.StaleDropped, int64(tc.cap), "cleanup is bounded")
				for _, u := range users(res) {
					require.True(t, live[u], "%s was silent and must never be admitted", u)
					admitted[u] = true
				}
			}
			require.Len(t, admitted, tc.live)
			if tc.live == 0 {
				for n := 0; n < 10; n++ {
					res := tick(t, r, ev, "a")
					dropped += res.StaleDropped + res.StaleSkipped
				}
			}
			require.EqualValues(t, tc.stale, dropped, "every silent fan was dropped exactly once")
		})
	}
}

// TestTwoAdmittersNeverAdmitTwiceInOneTick runs two admitters against one
// event, with an admitter lease so short that leadership flips, and checks
// that each tick slot admitted at most one batch and no fan twice.
func TestTwoAdmittersNeverAdmitTwiceInOneTick(t *testing.T) {
	inv := newFake()
	// The admitter lease lasts a millisecond, so leadership changes hands
	// all the time; the tick slot fencing must still hold.
	r := newRoom(t, inv, waitingroom.Options{Tick: 10 * time.Millisecond, AdmitterLease: time.Millisecond,
		Batch: 5, Capacity: 100_000})
	ev := inv.add(time.Now().Add(-time.Minute))
	const n = 400
	for i := 0; i < n; i++ {
		join(t, r, fan(i), ev)
	}
	type slotRun struct {
		owner string
		count int
	}
	var mu sync.Mutex
	slots := map[int64][]slotRun{}
	seen := map[string]int{}
	raceTicks(t, r, ev, []string{"admitter-a", "admitter-b"}, 3*time.Second, func(owner string, res waitingroom.TickResult) bool {
		if res.Ran {
			mu.Lock()
			slots[res.Slot] = append(slots[res.Slot], slotRun{owner, len(res.Admitted)})
			for _, u := range users(res) {
				seen[u]++
			}
			mu.Unlock()
		}
		return true
	})
	require.NotEmpty(t, slots)
	ran := map[string]int{}
	for slot, runs := range slots {
		ran[runs[0].owner]++
		require.Len(t, runs, 1, "slot %d ran more than once: %v", slot, runs)
		require.LessOrEqual(t, runs[0].count, 5)
	}
	for u, k := range seen {
		require.Equal(t, 1, k, "%s admitted twice", u)
	}
	require.Len(t, seen, n, "everyone was admitted once")
	require.Len(t, ran, 2, "leadership changed hands: %v", ran)
}

// TestCapacityNeverExceededUnderConcurrentTicks: eight admitters race over a
// long line; active leases never pass capacity.
func TestCapacityNeverExceededUnderConcurrentTicks(t *testing.T) {
	inv := newFake()
	const capacity = 37
	r := newRoom(t, inv, waitingroom.Options{Tick: 5 * time.Millisecond, Batch: 10, Capacity: capacity})
	ev := inv.add(time.Now().Add(-time.Minute))
	for i := 0; i < 300; i++ {
		join(t, r, fan(i), ev)
	}
	var mu sync.Mutex
	total := 0
	owners := make([]string, 8)
	for a := range owners {
		owners[a] = fmt.Sprintf("admitter-%d", a)
	}
	raceTicks(t, r, ev, owners, 1500*time.Millisecond, func(_ string, res waitingroom.TickResult) bool {
		if res.Ran {
			if res.Active > capacity {
				t.Errorf("active leases %d above capacity %d", res.Active, capacity)
			}
			mu.Lock()
			total += len(res.Admitted)
			mu.Unlock()
		}
		n, err := r.Passes().LeaseCount(context.Background(), ev)
		if err != nil {
			t.Error(err)
			return false
		}
		if n > capacity {
			t.Errorf("active leases %d above capacity %d", n, capacity)
		}
		return true
	})
	require.Equal(t, capacity, total, "exactly capacity fans were admitted")
	n, err := r.Passes().LeaseCount(context.Background(), ev)
	require.NoError(t, err)
	require.EqualValues(t, capacity, n)
}

// admitOne joins a fan, admits them and returns their pass.
func admitOne(t *testing.T, r *waitingroom.Room, ev string, who session.Identity) waitingroom.State {
	t.Helper()
	join(t, r, who, ev)
	for i := 0; i < 50; i++ {
		st, err := r.Line().Status(context.Background(), who, ev)
		require.NoError(t, err)
		if st.Status == waitingroom.StatusAdmitted {
			return st
		}
		tick(t, r, ev, "a")
	}
	t.Fatal("not admitted")
	return waitingroom.State{}
}

func TestPassesRefused(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{})
	ev := inv.add(time.Now().Add(-time.Minute))
	other := inv.add(time.Now().Add(-time.Minute))
	asha := fan(1)
	st := admitOne(t, r, ev, asha)
	require.NotEmpty(t, st.Pass)
	require.WithinDuration(t, time.Now().Add(5*time.Minute), st.PassExpiresAt, 5*time.Second)
	require.NoError(t, r.Passes().Check(context.Background(), asha, ev, st.Pass), "a valid pass with its lease admits")

	valid, err := r.Passes().Verifier().Verify(st.Pass, time.Now())
	require.NoError(t, err)
	key := pass.KeyFromSeed(testSecret)
	sign := func(key []byte, c pass.Claims) string {
		tok, _, err := pass.NewSigner(key, 5*time.Minute).Sign(c)
		require.NoError(t, err)
		return tok
	}
	forged := sign(pass.KeyFromSeed("not the room's key"), valid)
	old := valid
	old.IssuedAt = time.Now().Add(-10 * time.Minute)
	expired := sign(key, old)
	otherLease := valid
	otherLease.LeaseID = "999999"
	stale := sign(key, otherLease)

	for _, tc := range []struct {
		name   string
		who    session.Identity
		event  string
		pass   string
		expect error
	}{
		{"no pass", asha, ev, "", holds.ErrQueueRequired},
		{"garbage", asha, ev, "garbage", holds.ErrQueueRequired},
		{"forged with another key", asha, ev, forged, holds.ErrQueueRequired},
		{"expired", asha, ev, expired, holds.ErrQueueRequired},
		{"another user's pass", fan(2), ev, st.Pass, holds.ErrQueueRequired},
		{"same user, another device", session.Identity{UserID: asha.UserID, DeviceID: "stolen"}, ev, st.Pass, holds.ErrQueueRequired},
		{"another event", asha, other, st.Pass, holds.ErrQueueRequired},
		{"names an older lease", asha, ev, stale, holds.ErrQueueRequired},
		{"valid", asha, ev, st.Pass, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Passes().Check(context.Background(), tc.who, tc.event, tc.pass)
			if tc.expect == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.expect)
			}
		})
	}

	t.Run("revoked lease refuses a valid pass", func(t *testing.T) {
		revoked, err := r.Revoke(context.Background(), ev, asha.UserID)
		require.NoError(t, err)
		require.True(t, revoked)
		require.ErrorIs(t, r.Passes().Check(context.Background(), asha, ev, st.Pass), holds.ErrQueueRequired)
	})
}

func TestAdmittedOnAnotherDevice(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{})
	ev := inv.add(time.Now().Add(-time.Minute))
	admitOne(t, r, ev, fan(1))
	_, err := r.Line().Status(context.Background(), session.Identity{UserID: fan(1).UserID, DeviceID: "laptop"}, ev)
	require.ErrorIs(t, err, waitingroom.ErrAdmittedElsewhere)
}

func TestExtendKeepsLeaseForTheHoldAndSettleShortensIt(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{PassTTL: 5 * time.Minute, Rechoose: 20 * time.Second})
	ev := inv.add(time.Now().Add(-time.Minute))
	who := fan(1)
	st := admitOne(t, r, ev, who)
	rdb, _ := testenv.Redis(t)
	leaseKey := r.Options().Prefix + "wr:{" + ev + "}:lease"
	until := time.Now().Add(10 * time.Minute)
	require.NoError(t, r.Passes().Extend(context.Background(), who, ev, until))
	score, err := rdb.ZScore(context.Background(), leaseKey, who.UserID).Result()
	require.NoError(t, err)
	require.EqualValues(t, until.UnixMilli(), int64(score))
	require.NoError(t, r.Passes().Check(context.Background(), who, ev, st.Pass))

	// The hold is still pending: settling changes nothing.
	inv.outcomes[who.UserID] = store.HoldOutcome{Holding: true}
	require.NoError(t, r.Admitter().Settle(context.Background(), ev))
	score, _ = rdb.ZScore(context.Background(), leaseKey, who.UserID).Result()
	require.EqualValues(t, until.UnixMilli(), int64(score))

	// The hold was released: the fan keeps a moment (Rechoose) to choose
	// again, not the rest of the five-minute window: most such fans have
	// left, and their places go to the fans in line.
	inv.outcomes[who.UserID] = store.HoldOutcome{}
	require.NoError(t, r.Admitter().Settle(context.Background(), ev))
	score, _ = rdb.ZScore(context.Background(), leaseKey, who.UserID).Result()
	require.Less(t, int64(score), time.Now().Add(21*time.Second).UnixMilli())
	require.Greater(t, int64(score), time.Now().Add(15*time.Second).UnixMilli())
	require.NoError(t, r.Passes().Check(context.Background(), who, ev, st.Pass))

	// Another hold, paid: the fan's place in checkout goes to the next fan
	// at once.
	require.NoError(t, r.Passes().Extend(context.Background(), who, ev, until))
	inv.outcomes[who.UserID] = store.HoldOutcome{Paid: true}
	require.NoError(t, r.Admitter().Settle(context.Background(), ev))
	_, err = rdb.ZScore(context.Background(), leaseKey, who.UserID).Result()
	require.ErrorIs(t, err, redis.Nil, "a buyer's lease ends when they have paid")
	n, err := r.Passes().LeaseCount(context.Background(), ev)
	require.NoError(t, err)
	require.Zero(t, n)

	// Extend without a lease does nothing.
	require.NoError(t, r.Passes().Extend(context.Background(), who, ev, until))
	_, err = rdb.ZScore(context.Background(), leaseKey, who.UserID).Result()
	require.ErrorIs(t, err, redis.Nil)
}

// TestRepeatedExpiryLowersPriority: a fan whose holds expired twice without a
// purchase rejoins PenaltyPlaces behind where they would be.
func TestRepeatedExpiryLowersPriority(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{PenaltyPlaces: 5, Batch: 100})
	ev := inv.add(time.Now().Add(-time.Minute))
	bad, good := fan(1), fan(2)
	for _, who := range []session.Identity{bad, good} {
		admitOne(t, r, ev, who)
		require.NoError(t, r.Passes().Extend(context.Background(), who, ev, time.Now().Add(time.Minute)))
	}
	inv.outcomes[bad.UserID] = store.HoldOutcome{Expired: 2}
	inv.outcomes[good.UserID] = store.HoldOutcome{Expired: 1} // the first expiry is forgiven
	require.NoError(t, r.Admitter().Settle(context.Background(), ev))
	for _, who := range []session.Identity{bad, good} {
		_, revokeErr := r.Revoke(context.Background(), ev, who.UserID)
		require.NoError(t, revokeErr)
	}
	for i := 10; i < 20; i++ {
		join(t, r, fan(i), ev)
	}
	require.EqualValues(t, 11, join(t, r, bad, ev).Position, "placed 5 places back: behind all 10")
	require.EqualValues(t, 11, join(t, r, good, ev).Position, "no penalty for a single expiry")
	require.EqualValues(t, 12, join(t, r, bad, ev).Position)
	for i := 20; i < 30; i++ {
		join(t, r, fan(i), ev)
	}
	// bad's score is 13 + 5 = 18: behind good (14) and the new fans with 15..17.
	require.EqualValues(t, 15, join(t, r, bad, ev).Position)
}

func TestSoldOutTellsFansAndRecordsInterest(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{})
	ev := inv.add(time.Now().Add(-time.Minute))
	join(t, r, fan(1), ev)
	inv.setFree(ev, 0)
	res := tick(t, r, ev, "a")
	require.True(t, res.SoldOut)
	require.Empty(t, res.Admitted)
	st, err := r.Line().Status(context.Background(), fan(1), ev)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusSoldOut, st.Status)
	require.Equal(t, waitingroom.StatusSoldOut, join(t, r, fan(2), ev).Status)
	wl, err := r.Line().Waitlist(context.Background(), ev)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{fan(1).UserID, fan(2).UserID}, wl)

	// Seats came back (holds expired): the line moves again, in order.
	inv.setFree(ev, 10)
	res = tick(t, r, ev, "a")
	require.False(t, res.SoldOut)
	require.Equal(t, []string{fan(1).UserID, fan(2).UserID}, users(res))

	// Unknown inventory admits nobody.
	join(t, r, fan(3), ev)
	inv.mu.Lock()
	inv.freeErr = errors.New("database down")
	inv.mu.Unlock()
	res = tick(t, r, ev, "a")
	require.Empty(t, res.Admitted)
}

func TestAdmissionsNeverExceedFreeUnits(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Batch: 50})
	ev := inv.add(time.Now().Add(-time.Minute))
	for i := 0; i < 20; i++ {
		join(t, r, fan(i), ev)
	}
	inv.setFree(ev, 3)
	require.Len(t, tick(t, r, ev, "a").Admitted, 3)
}

func TestUnknownAndUnmeteredEventsHaveNoRoom(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{})
	_, err := r.Line().Join(context.Background(), fan(1), "evt_nope", 0)
	require.ErrorIs(t, err, waitingroom.ErrNoRoom)
	inv.gates["evt_open"] = store.Gate{EventID: "evt_open", Metered: false}
	_, err = r.Line().Join(context.Background(), fan(1), "evt_open", 0)
	require.ErrorIs(t, err, waitingroom.ErrNoRoom)
}

func TestAdaptiveController(t *testing.T) {
	c := waitingroom.Controller{Min: 10, Max: 400, Step: 10, Decrease: 0.75, Headroom: 0.5,
		LatencyTarget: time.Second, ErrorTarget: 0.2}
	for _, tc := range []struct {
		name string
		cap  int
		s    waitingroom.Signals
		full bool
		want int
	}{
		{"slow checkout backs off", 100, waitingroom.Signals{CheckoutLatency: 1500 * time.Millisecond}, true, 75},
		{"checkouts failing to reach the saga back off", 100, waitingroom.Signals{CheckoutErrorRate: 0.3}, false, 75},
		{"payment errors back off", 100, waitingroom.Signals{PaymentErrorRate: 0.5}, true, 75},
		{"never below the floor", 12, waitingroom.Signals{CheckoutLatency: 5 * time.Second}, true, 10},
		{"comfortable and full grows", 100, waitingroom.Signals{CheckoutLatency: 100 * time.Millisecond}, true, 110},
		{"comfortable but idle holds", 100, waitingroom.Signals{CheckoutLatency: 100 * time.Millisecond}, false, 100},
		{"nothing measured and full grows", 100, waitingroom.Signals{}, true, 110},
		{"between headroom and target holds", 100, waitingroom.Signals{CheckoutLatency: 800 * time.Millisecond}, true, 100},
		{"never above the ceiling", 395, waitingroom.Signals{}, true, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, c.Next(tc.cap, tc.s, tc.full))
		})
	}
}

func TestTheControllerRestoresCapacityAfterABlipButClimbsBackAfterALastingOverload(t *testing.T) {
	t.Parallel()
	c := waitingroom.Controller{Min: 10, Max: 400, Step: 10, Decrease: 0.75, Headroom: 0.5,
		LatencyTarget: time.Second, ErrorTarget: 0.2, Blip: 2}
	over := waitingroom.Signals{CheckoutErrorRate: 0.5}
	calm := waitingroom.Signals{CheckoutLatency: 100 * time.Millisecond}
	between := waitingroom.Signals{CheckoutLatency: 800 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		periods []waitingroom.Signals
		want    []int // capacity after each period, from 100, the room full throughout
	}{
		{"one overloaded period, then calm: restored", []waitingroom.Signals{over, calm}, []int{75, 100}},
		{"two overloaded periods, then calm: restored", []waitingroom.Signals{over, over, calm}, []int{75, 56, 100}},
		{"three overloaded periods: climbs back a step at a time", []waitingroom.Signals{over, over, over, calm, calm},
			[]int{75, 56, 42, 52, 62}},
		{"a restore met by overload at once is not repeated for that run, and the next blip is restored again",
			[]waitingroom.Signals{over, calm, over, calm, over, calm}, []int{75, 100, 75, 85, 63, 85}},
		{"an uneasy period after the overload ends the run unrestored", []waitingroom.Signals{over, between, calm},
			[]int{75, 75, 85}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity, rec := 100, waitingroom.Recovery{}
			var got []int
			for _, s := range tc.periods {
				capacity, rec = c.NextAfter(capacity, s, true, rec)
				got = append(got, capacity)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// The controller's memory of a blip lives beside its capacity in Redis:
// the admitter that takes over after a killed one restores the capacity the
// blip took away.
func TestAnotherAdmitterRestoresTheCapacityABlipTookAway(t *testing.T) {
	inv := newFake()
	rdb, prefix := testenv.Redis(t)
	prefix += testenv.RandomSuffix() + ":"
	a := newRoomOn(t, rdb, prefix, inv, waitingroom.Options{Capacity: 40, Batch: 100})
	ev := lowerCapacityBySlowCheckout(t, a, inv) // 40 -> 30 in one overloaded period

	b := newRoomOn(t, rdb, prefix, inv, waitingroom.Options{Capacity: 40, Batch: 100})
	b.Capacity().SetAdaptive(&waitingroom.Controller{Period: 50 * time.Millisecond},
		fixedSignals{waitingroom.Signals{CheckoutLatency: 10 * time.Millisecond}})
	tick(t, b, ev, "b") // takes the lease (a stopped ticking) and runs at 30
	n, err := b.CapacityInForce(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, 30, n)
	time.Sleep(60 * time.Millisecond)
	tick(t, b, ev, "b") // a calm period: the blip is over
	time.Sleep(60 * time.Millisecond)
	tick(t, b, ev, "b") // runs at the restored capacity
	n, err = b.CapacityInForce(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, 40, n, "restored to the capacity before the blip, not 30 plus a step")
}

type fixedSignals struct{ s waitingroom.Signals }

func (f fixedSignals) Signals(context.Context) (waitingroom.Signals, error) { return f.s, nil }

// slowCheckout is a checkout slow enough for the controller to lower the
// capacity at each period.
var slowCheckout = fixedSignals{waitingroom.Signals{CheckoutLatency: 5 * time.Second}}

// lowerCapacityBySlowCheckout puts 100 fans in line for a new event of r, a
// room of capacity 40, and ticks twice a controller period apart under a
// slow checkout: the first tick fills the room, the second lowers its
// capacity to 30. It returns the event.
func lowerCapacityBySlowCheckout(t *testing.T, r *waitingroom.Room, inv *fakeInventory) string {
	t.Helper()
	r.Capacity().SetAdaptive(&waitingroom.Controller{Period: 50 * time.Millisecond}, slowCheckout)
	ev := inv.add(time.Now().Add(-time.Minute))
	for i := 0; i < 100; i++ {
		join(t, r, fan(i), ev)
	}
	tick(t, r, ev, "a")
	time.Sleep(60 * time.Millisecond)
	tick(t, r, ev, "a") // adjusts: 40 -> 30
	return ev
}

func TestAdaptiveModeLowersCapacityUnderSlowCheckout(t *testing.T) {
	inv := newFake()
	r := newRoom(t, inv, waitingroom.Options{Capacity: 40, Batch: 100})
	ev := lowerCapacityBySlowCheckout(t, r, inv)
	n, err := r.Passes().LeaseCount(context.Background(), ev)
	require.NoError(t, err)
	require.EqualValues(t, 40, n, "the first tick filled the room")
	_, revokeErr := r.Revoke(context.Background(), ev, fan(0).UserID)
	require.NoError(t, revokeErr)
	res := tick(t, r, ev, "a")
	require.Empty(t, res.Admitted, "a freed slot is not refilled above the lowered capacity")
}

func TestTheAdaptiveCapacitySurvivesAChangeOfAdmitter(t *testing.T) {
	inv := newFake()
	rdb, prefix := testenv.Redis(t)
	prefix += testenv.RandomSuffix() + ":"
	a := newRoomOn(t, rdb, prefix, inv, waitingroom.Options{Capacity: 40, Batch: 100})
	ev := lowerCapacityBySlowCheckout(t, a, inv)
	// Frozen at 30: a next tick more than a period later (a loaded machine)
	// would lower it again.
	a.Capacity().SetAdaptive(&waitingroom.Controller{Period: time.Hour}, slowCheckout)
	tick(t, a, ev, "a") // runs at 30
	n, err := a.CapacityInForce(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, 30, n)

	// Another process's room takes the admitter lease once a stops ticking;
	// its controller goes on from 30 instead of starting again at 40.
	b := newRoomOn(t, rdb, prefix, inv, waitingroom.Options{Capacity: 40, Batch: 100})
	b.Capacity().SetAdaptive(&waitingroom.Controller{Period: time.Hour}, slowCheckout)
	res := tick(t, b, ev, "b")
	require.Empty(t, res.Admitted)
	n, err = b.CapacityInForce(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, 30, n, "the new admitter carries on from the controller's last capacity")
}
