package testenv

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// CountRowWrites installs, in a database of the test's own (FreshDB), a
// trigger on each table that counts every row it inserts, updates or
// deletes, and returns a function reading the counts by table. It is how a
// test proves what a step costs in row writes: exact and at once, where
// PostgreSQL's statistics views are shared and flushed late.
func CountRowWrites(tb testing.TB, pool *pgxpool.Pool, tables ...string) func() map[string]int {
	tb.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS test_row_writes (tbl text PRIMARY KEY, n int NOT NULL DEFAULT 0);
		CREATE OR REPLACE FUNCTION test_count_row_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_row_writes (tbl, n) VALUES (TG_TABLE_NAME, 1)
			ON CONFLICT (tbl) DO UPDATE SET n = test_row_writes.n + 1;
			RETURN NULL;
		END $$`)
	require.NoError(tb, err)
	for _, t := range tables {
		_, err := pool.Exec(ctx, fmt.Sprintf(`CREATE OR REPLACE TRIGGER test_count_row_writes
			AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION test_count_row_write()`,
			pgx.Identifier{t}.Sanitize()))
		require.NoError(tb, err)
	}
	return func() map[string]int {
		tb.Helper()
		rows, err := pool.Query(ctx, `SELECT tbl, n FROM test_row_writes`)
		require.NoError(tb, err)
		out := map[string]int{}
		for _, t := range tables {
			out[t] = 0
		}
		for rows.Next() {
			var t string
			var n int
			require.NoError(tb, rows.Scan(&t, &n))
			out[t] = n
		}
		require.NoError(tb, rows.Err())
		return out
	}
}
