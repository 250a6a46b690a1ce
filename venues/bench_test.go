package venues_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// BenchmarkLayoutImport50000Seats validates and imports a 50,000-seat
// layout (50 sections of 40 rows of 25 seats) per iteration, as POST
// /v1/admin/venues does, and reports seats a second.
func BenchmarkLayoutImport50000Seats(b *testing.B) {
	pool := testenv.DB(b)
	svc := venues.NewService(store.New(pool, store.Options{}))
	v := gridLayout("Bench Stadium", 50, 40, 25)
	require.Equal(b, 50_000, v.Layout.Seats())
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		imp, err := svc.Import(ctx, venues.Admin("org_bench", "bench"), v)
		require.NoError(b, err)
		require.Equal(b, 50_000, imp.Seats)
	}
	b.ReportMetric(float64(50_000*b.N)/b.Elapsed().Seconds(), "seats/s")
}

// BenchmarkRawCopy50000Seats is the ceiling for the import: the same 50,000
// seat rows sent by one COPY into a table shaped like venue_seats but with
// no keys, constraints or validation, in one transaction per iteration.
func BenchmarkRawCopy50000Seats(b *testing.B) {
	pool := testenv.DB(b)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_raw_seats (LIKE venue_seats)`)
	require.NoError(b, err)
	rows := make([][]any, 0, 50_000)
	for s := range 50 {
		for r := range 40 {
			for n := range 25 {
				rows = append(rows, []any{"ven_raw", fmt.Sprintf("s%02d", s), venues.RowLabel(r), n + 1, float64(s*35 + n), float64(r), "standard"})
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		tx, err := pool.Begin(ctx)
		require.NoError(b, err)
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_raw_seats"},
			[]string{"venue_id", "section_id", "row_label", "number", "x", "y", "category"}, pgx.CopyFromRows(rows))
		require.NoError(b, err)
		require.EqualValues(b, 50_000, n)
		require.NoError(b, tx.Commit(ctx))
	}
	b.ReportMetric(float64(50_000*b.N)/b.Elapsed().Seconds(), "seats/s")
}
