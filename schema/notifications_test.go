package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/schema"
)

// A database migrated before 0042 keeps what it knew about sent messages:
// every marker becomes the log's first line of its kind (a line of its own
// when the marker predates the log), and support's resends and repeated
// lines become resend lines, so the saga never sends an automatic message
// twice after the upgrade.
func TestMigration0042CarriesEveryMarkerAndResendIntoTheLog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, pool := emptyDatabase(t, "test_mig42_")

	// The database as 0041 left it.
	ms, err := schema.Migrations()
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, m := range ms {
		if m.Version >= 42 {
			break
		}
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		}), m.Name)
	}
	// Old rows, on bookings without their fans or events (replica mode skips
	// the foreign keys for this transaction only): a confirmation marked and logged, then resent
	// twice; a cancellation marked before the log existed; a booking
	// confirmed and logged twice by racing senders.
	logged, early, raced := uuid.New(), uuid.New(), uuid.New()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica;
			INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
			SELECT id, 'u', 'e', 'PAID', now(), now(), 0, 'EUR' FROM unnest(ARRAY['`+logged.String()+`', '`+early.String()+`', '`+raced.String()+`']::uuid[]) AS id;
			INSERT INTO notifications (reservation_id, kind) VALUES
				('`+logged.String()+`', 'confirmation'), ('`+early.String()+`', 'cancellation'), ('`+raced.String()+`', 'confirmation');
			INSERT INTO notification_log (reservation_id, kind, recipient) VALUES
				('`+logged.String()+`', 'confirmation', 'a@example.test'),
				('`+logged.String()+`', 'resend', 'a@example.test'),
				('`+logged.String()+`', 'resend', 'a@example.test'),
				('`+raced.String()+`', 'confirmation', 'r@example.test'),
				('`+raced.String()+`', 'confirmation', 'r@example.test')`)
		return err
	}))

	v, err := schema.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, schema.Latest(), v)

	type line struct {
		Kind      string
		Recipient string
		Resend    bool
	}
	linesOf := func(id uuid.UUID) []line {
		rows, err := pool.Query(ctx, `SELECT kind, recipient, resend FROM notification_log WHERE reservation_id = $1 ORDER BY id`, id)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[line])
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []line{{"confirmation", "a@example.test", false}, {"resend", "a@example.test", true},
		{"resend", "a@example.test", true}}, linesOf(logged))
	require.Equal(t, []line{{"cancellation", "", false}}, linesOf(early), "a marker older than the log is kept")
	require.Equal(t, []line{{"confirmation", "r@example.test", false}, {"confirmation", "r@example.test", true}}, linesOf(raced))
	var marker bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('notifications') IS NOT NULL`).Scan(&marker))
	require.False(t, marker, "the marker table is gone")
}
