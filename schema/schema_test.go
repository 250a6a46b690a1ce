package schema_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/schema"
)

func TestMigrationsAreOrderedAndUnique(t *testing.T) {
	t.Parallel()
	ms, err := schema.Migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i := 1; i < len(ms); i++ {
		require.Less(t, ms[i-1].Version, ms[i].Version)
	}
	require.Equal(t, ms[len(ms)-1].Version, schema.Latest())
}

func TestConcurrentMigratorsApplyEachMigrationOnce(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t) // already migrated once by testenv
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = schema.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	v, err := schema.Version(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, schema.Latest(), v)
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows))
	ms, _ := schema.Migrations()
	require.Equal(t, len(ms), rows)
}

func TestConstraintsRefuseASecondLiveOwnerAndAHeldSeatWithoutReservation(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	// Fresh IDs per run, so the test owns its rows under -count and t.Parallel.
	sfx := testenv.RandomSuffix()
	q := strings.NewReplacer("'v'", "'v"+sfx+"'", "'e'", "'e"+sfx+"'", "'s'", "'s"+sfx+"'", "'s-A-1'", "'s-A-1"+sfx+"'",
		"'u1'", "'u1"+sfx+"'", "'u2'", "'u2"+sfx+"'", "'g'", "'g"+sfx+"'",
		"00000000-0000-0000-0000-000000000001", uuid.NewString(), "00000000-0000-0000-0000-000000000002", uuid.NewString(),
		"00000000-0000-0000-0000-000000000003", uuid.NewString()).Replace
	_, err := pool.Exec(ctx, q(`INSERT INTO venues VALUES ('v','V','C');
		INSERT INTO events (id, venue_id, title, starts_at, onsale_at, currency) VALUES ('e','v','E', now(), now(), 'EUR');
		INSERT INTO sections (id, event_id, name, kind, capacity, base_price) VALUES ('s','e','S','seated',10,100);
		INSERT INTO seats (id, event_id, section_id, row_label, number, base_price) VALUES ('s-A-1','e','s','A',1,100);
		INSERT INTO users VALUES ('u1'), ('u2');
		INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency) VALUES
		  ('00000000-0000-0000-0000-000000000001','u1','e','PENDING_PAYMENT', now(), 0, 'EUR'),
		  ('00000000-0000-0000-0000-000000000002','u2','e','PENDING_PAYMENT', now(), 0, 'EUR');
		INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price, surge_bps, discount, price_at_lock)
		  VALUES ('00000000-0000-0000-0000-000000000001','e','s','s-A-1',100,10000,0,100)`))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, q(`INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price, surge_bps, discount, price_at_lock)
		  VALUES ('00000000-0000-0000-0000-000000000002','e','s','s-A-1',100,10000,0,100)`))
	require.ErrorContains(t, err, "reservation_items_one_live_owner")
	_, err = pool.Exec(ctx, q(`UPDATE seats SET status = 'HELD' WHERE id = 's-A-1'`))
	require.ErrorContains(t, err, "seats_check")
	_, err = pool.Exec(ctx, q(`INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency) VALUES
		  ('00000000-0000-0000-0000-000000000003','u1','e','PENDING_PAYMENT', now(), 0, 'EUR')`))
	require.ErrorContains(t, err, "reservations_one_pending")
	_, err = pool.Exec(ctx, q(`INSERT INTO sections (id, event_id, name, kind, capacity, base_price, ga_taken) VALUES ('g','e','G','general',10,100,11)`))
	require.ErrorContains(t, err, "sections_check")
}
