package demo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
)

func TestSeedCreatesThreeAmsterdamHotelsWithNinetyNightsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: the seed writes the demo's fixed IDs and the
	// test counts whole tables.
	pool, _ := testenv.FreshDB(t)
	count := func(sql string) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	now := time.Now()
	require.NoError(t, demo.Seed(ctx, pool, now))
	_, err := pool.Exec(ctx, `UPDATE room_nights SET held = 1 WHERE property_id = 'prop_canal_house' AND room_type = 'double'`)
	require.NoError(t, err)
	require.NoError(t, demo.Seed(ctx, pool, now))

	require.Equal(t, 3, count(`SELECT count(*) FROM properties WHERE city = 'Amsterdam' AND venue_id = '`+demo.ArenaVenueID+`'`))
	require.Equal(t, 6, count(`SELECT count(*) FROM room_types`))
	// Counted over this seed's nights only: another test of the package
	// seeds an hour later, which past 23:00 UTC starts a day later.
	window := fmt.Sprintf(` AND night >= '%s' AND night < '%s'`, now.Format(time.DateOnly),
		now.AddDate(0, 0, demo.HotelNights).Format(time.DateOnly))
	require.Equal(t, 6*demo.HotelNights, count(`SELECT count(*) FROM room_nights WHERE true`+window))
	require.Equal(t, demo.HotelNights, count(`SELECT count(*) FROM room_nights WHERE overbook_limit > 0`+window), "one room type overbooks")
	require.Equal(t, demo.HotelNights, count(`SELECT count(*) FROM room_nights WHERE held = 1`+window), "a second seed keeps the counters")
}
