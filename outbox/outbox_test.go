package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// recorder is a real handler that records what it was given.
type recorder struct {
	mu   sync.Mutex
	rows []outbox.Row
	by   []string // which relay handled each row
}

func (r *recorder) handler(name string) outbox.Handler {
	return func(ctx context.Context, row outbox.Row) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rows = append(r.rows, row)
		r.by = append(r.by, name)
		return nil
	}
}

// topicOther is a second topic beside inventory.changed, so the tests show
// per-topic handlers and ordering across topics.
const topicOther = "test.other"

func insertRows(t *testing.T, pool *pgxpool.Pool, n int, topics ...string) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		var id int64
		topic := topics[i%len(topics)]
		require.NoError(t, pool.QueryRow(context.Background(), `INSERT INTO outbox (topic, key, payload)
			VALUES ($1, $2, $3) RETURNING id`, topic, fmt.Sprint(i),
			fmt.Sprintf(`{"reservation_id":"r%d","event_id":"e","section_id":"s%d"}`, i, i)).Scan(&id))
		ids = append(ids, id)
	}
	return ids
}

// outboxDB is a database of the test's own: a relay takes a database-wide
// lease and publishes every row of the outbox, so tests that run relays
// cannot share one database and run in parallel.
func outboxDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := testenv.FreshDB(t)
	return pool
}

// Three relays run at once over 500 rows of two topics: exactly one is
// active at any time, every row is handled once, in ID order, and marked.
func TestOneActiveRelayPublishesInIDOrder(t *testing.T) {
	t.Parallel()
	pool := outboxDB(t)
	ids := insertRows(t, pool, 500, store.TopicInventoryChanged, topicOther)
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	var relays []*outbox.Relay
	var wg sync.WaitGroup
	for i := range 3 {
		r := outbox.New(store.New(pool, store.Options{}), outbox.Options{Interval: 5 * time.Millisecond,
			StandbyInterval: 20 * time.Millisecond, Batch: 37})
		name := fmt.Sprintf("relay%d", i)
		r.Handle(store.TopicInventoryChanged, rec.handler(name))
		r.Handle(topicOther, rec.handler(name))
		relays = append(relays, r)
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx) }()
	}
	maxActive := 0
	require.Eventually(t, func() bool {
		active := 0
		for _, r := range relays {
			if r.Active() {
				active++
			}
		}
		maxActive = max(maxActive, active)
		rec.mu.Lock()
		handled := len(rec.rows)
		rec.mu.Unlock()
		if handled < len(ids) {
			return false
		}
		// A row is marked after its handler returns: stopping the relays
		// before the last batch is marked would leave it to go out again.
		var left int
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&left))
		return left == 0
	}, 20*time.Second, time.Millisecond)
	cancel()
	wg.Wait()
	require.Equal(t, 1, maxActive, "one active relay")

	rec.mu.Lock()
	rows, by := rec.rows, rec.by
	rec.mu.Unlock()
	require.Len(t, rows, len(ids))
	for i, row := range rows {
		require.Equal(t, ids[i], row.ID, "row %d in ID order", i)
		require.Equal(t, by[0], by[i], "one relay handled them all")
	}
	var left int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&left))
	require.Zero(t, left)
	// The standby takes over once the active relay stops.
	more := insertRows(t, pool, 3, topicOther)
	n, err := runOnce(t, relays[1])
	require.NoError(t, err)
	require.Equal(t, len(more), n)
}

// A failing handler stops the relay at that row, keeping the order: the row
// and everything after it wait, and go out in order once it succeeds.
func TestAFailingRowHoldsBackTheRest(t *testing.T) {
	t.Parallel()
	pool := outboxDB(t)
	ids := insertRows(t, pool, 5, topicOther)
	var seen []int64
	failures := 2
	r := outbox.New(store.New(pool, store.Options{}), outbox.Options{})
	r.Handle(topicOther, func(ctx context.Context, row outbox.Row) error {
		if row.ID == ids[2] && failures > 0 {
			failures--
			return fmt.Errorf("workflow service unavailable")
		}
		seen = append(seen, row.ID)
		return nil
	})
	for _, wantN := range []int{2, 0} { // the rows before the failure go out once
		n, err := runOnce(t, r)
		require.ErrorContains(t, err, "workflow service unavailable")
		require.Equal(t, wantN, n)
		require.Equal(t, ids[:2], seen)
	}
	n, err := runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, ids, seen)
}

// Rows of a topic nobody handles wait (they show in the age), and do not
// block the topics that are handled.
func TestUnhandledTopicsWaitAndShowInTheAge(t *testing.T) {
	t.Parallel()
	pool := outboxDB(t)
	insertRows(t, pool, 2, "booking.paid")
	ids := insertRows(t, pool, 2, store.TopicInventoryChanged)
	rec := &recorder{}
	st := store.New(pool, store.Options{})
	r := outbox.New(st, outbox.Options{})
	r.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(func(ctx context.Context, ev, sec string) error {
		return rec.handler("r")(ctx, outbox.Row{Key: ev + "/" + sec})
	}))
	n, err := runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, len(ids), n)
	require.Equal(t, "e/s0", rec.rows[0].Key)
	// The waiting rows' age grows past 10ms (PostgreSQL's clock: poll it).
	require.Eventually(t, func() bool {
		age, err := st.Jobs.OldestUnpublishedAge(context.Background())
		require.NoError(t, err)
		return age > 10*time.Millisecond
	}, 10*time.Second, 5*time.Millisecond, "the unhandled rows show in the age")
}

// runOnce runs one pass of r as the active relay. A relay that just stopped
// may hold the lease a moment longer while PostgreSQL ends its session, so
// the pass is retried (bounded) until r holds the lease.
func runOnce(t *testing.T, r *outbox.Relay) (int, error) {
	t.Helper()
	var n int
	var err error
	require.Eventually(t, func() bool {
		var active bool
		n, active, err = r.RunOnce(context.Background())
		return active
	}, 10*time.Second, 20*time.Millisecond, "the relay never got the lease")
	return n, err
}

// A hold writes one inventory.changed row naming every section it took
// from; the relay invalidates each of them, and still reads the per-section
// rows that releases, expiries and older holds write. A section two rows of
// one drain name is invalidated once.
func TestOneRowPerHoldInvalidatesEverySectionItNames(t *testing.T) {
	t.Parallel()
	pool := outboxDB(t)
	ctx := context.Background()
	eventID := "evt_" + testenv.RandomSuffix()
	ev := demo.Event{ID: eventID, Title: "Outbox", VenueID: "ven_outbox", VenueName: "Outbox Hall", City: "O",
		Currency: "EUR", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour), PerCustomerLimit: 6,
		Sections: []demo.Section{
			{ID: eventID + "_a", Name: "A", Rows: 2, PerRow: 5, BasePrice: 1000},
			{ID: eventID + "_b", Name: "B", Rows: 2, PerRow: 5, BasePrice: 2000},
		}}
	require.NoError(t, demo.Create(ctx, pool, ev))
	st := store.New(pool, store.Options{})
	_, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "fan_" + eventID, EventID: eventID,
		SeatIDs: []string{demo.SeatID(eventID+"_a", 0, 1), demo.SeatID(eventID+"_b", 0, 1), demo.SeatID(eventID+"_b", 0, 2)}})
	require.NoError(t, err)
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic = $1 AND payload->>'event_id' = $2`,
		store.TopicInventoryChanged, eventID).Scan(&rows))
	require.Equal(t, 1, rows, "one row for the hold, whatever its sections")
	_, err = pool.Exec(ctx, `INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)`, store.TopicInventoryChanged,
		eventID+"_a", fmt.Sprintf(`{"event_id":%q,"section_id":%q}`, eventID, eventID+"_a"))
	require.NoError(t, err)

	var invalidated []string
	r := outbox.New(st, outbox.Options{})
	r.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(func(ctx context.Context, ev, sec string) error {
		invalidated = append(invalidated, ev+"/"+sec)
		return nil
	}))
	n, err := runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{eventID + "/" + eventID + "_a", eventID + "/" + eventID + "_b"}, invalidated)
}

// A drain invalidates each section once however many of its rows name it
// (a sale's holds name the same few sections again and again), in the order
// of first mention; the next drain invalidates again; and a section whose
// invalidation fails leaves its row, and every later one, to be repeated.
func TestADrainInvalidatesEachSectionOnceAndTheNextDrainAgain(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.FreshDB(t)
	ctx := context.Background()
	insert := func(sections ...string) {
		t.Helper()
		raw, err := json.Marshal(map[string]any{"event_id": "e", "section_ids": sections})
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO outbox (topic, key, payload) VALUES ($1, 'e', $2)`, store.TopicInventoryChanged, raw)
		require.NoError(t, err)
	}
	for range 20 {
		insert("a", "b")
		insert("b")
		insert("c", "a")
	}
	var invalidated []string
	failOn := ""
	r := outbox.New(store.New(pool, store.Options{}), outbox.Options{Batch: 100})
	r.HandleEffects(store.TopicInventoryChanged, outbox.InventoryChanged(func(ctx context.Context, ev, sec string) error {
		if sec == failOn {
			return errors.New("redis is away")
		}
		invalidated = append(invalidated, ev+"/"+sec)
		return nil
	}))
	n, err := runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, 60, n)
	require.Equal(t, []string{"e/a", "e/b", "e/c"}, invalidated, "60 rows, three sections, each once")

	invalidated = nil
	insert("b")
	n, err = runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"e/b"}, invalidated, "a later drain invalidates again")

	invalidated, failOn = nil, "c"
	insert("a")
	insert("c", "b")
	insert("a")
	n, err = runOnce(t, r)
	require.Error(t, err)
	require.Equal(t, 1, n, "the row before the failure is published")
	require.Equal(t, []string{"e/a"}, invalidated)
	invalidated, failOn = nil, ""
	n, err = runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the failed row and the one after it are repeated")
	require.Equal(t, []string{"e/c", "e/b", "e/a"}, invalidated)
}

func TestAnInventoryChangedRowWithoutSectionsIsRefused(t *testing.T) {
	t.Parallel()
	h := outbox.InventoryChanged(func(context.Context, string, string) error { return nil })
	for _, payload := range []string{`{"event_id":"e"}`, `{"event_id":"e","section_ids":[]}`, `{"section_ids":["s"]}`,
		`{"event_id":"e","section_ids":["s",""]}`, `not json`} {
		_, err := h(outbox.Row{Payload: []byte(payload)})
		require.ErrorContains(t, err, "malformed", payload)
	}
}

// With fsync on, each commit waits for the disk: a relay that marked its rows
// one statement at a time spent as many commits as there were holds. A
// drained batch is marked in one statement, and every row of it is marked.
func TestADrainedBatchIsMarkedPublishedInOneStatement(t *testing.T) {
	t.Parallel()
	pool, url := testenv.FreshDB(t)
	ids := insertRows(t, pool, 120, topicOther)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	// The relay's writes to the outbox: its marks.
	counter := &testenv.QueryCounter{Match: func(sql string) bool { return strings.HasPrefix(strings.TrimSpace(sql), "UPDATE outbox") }}
	cfg.ConnConfig.Tracer = counter
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(traced.Close)

	rec := &recorder{}
	r := outbox.New(store.New(traced, store.Options{}), outbox.Options{Batch: 50})
	r.Handle(topicOther, rec.handler("relay"))
	n, err := runOnce(t, r)
	require.NoError(t, err)
	require.Equal(t, len(ids), n)
	require.EqualValues(t, 3, counter.Count(), "one marking statement for each of the batches of 50, 50 and 20")
	var left int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&left))
	require.Zero(t, left)
}
