package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// replicaPrimary is the cluster to copy: the test cluster of
// `encore testinfra` when its URL is set (every package's database: the copy
// a multi-process test makes), else a private one started for this test.
func replicaPrimary(t *testing.T, ctx context.Context) string {
	t.Helper()
	if u := os.Getenv("ENCORE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	opts := privateOptions(t, Options{PostgresPort: freePort(t, 25560), Fast: true, Log: newLog(t)})
	return requireStarts(t, ctx, EnsurePostgres, opts).URL
}

func TestAReplicaStreamsThePrimarysWritesAndRefusesItsOwn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	primary := replicaPrimary(t, ctx)
	name := "devstack_replica_" + time.Now().Format("150405") + "_" + randomHex(t)
	dbURL, err := EnsureDatabase(ctx, primary, name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = DropDatabase(context.Background(), primary, name) })
	pgExec(t, dbURL, "CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)")
	pgExec(t, dbURL, "INSERT INTO notes VALUES (1, 'before the copy')")

	dir := filepath.Join(reachableDir(t), "replica")
	port := freePort(t, 25600)
	rep, err := StartReplica(ctx, primary, dir, port)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rep.Stop()) })
	t.Logf("replica of %s on port %d: copied in %s, accepting connections %s later", redact(primary), port,
		rep.CopyTime.Round(time.Millisecond), rep.StartTime.Round(time.Millisecond))
	require.Less(t, rep.CopyTime, 2*time.Minute, "the copy of the cluster is quick enough for a test")

	repDB, err := rep.URLFor(dbURL)
	require.NoError(t, err)
	require.Equal(t, 1, pgQueryInt(t, repDB, "SELECT count(*) FROM notes"), "the copy holds what was written before it")
	require.Equal(t, 1, pgQueryInt(t, repDB, "SELECT pg_is_in_recovery()::int"), "the replica is a standby")

	// A row written on the primary now appears on the replica.
	pgExec(t, dbURL, "INSERT INTO notes VALUES (2, 'after the copy')")
	caught, err := rep.CatchUp(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, pgQueryInt(t, repDB, "SELECT count(*) FROM notes"), "the replica replays the primary's commit")
	lag, err := rep.Lag(ctx)
	require.NoError(t, err)
	t.Logf("caught up in %s; lag now %d bytes", caught, lag)

	// And it refuses writes.
	conn, err := pgx.Connect(ctx, repDB)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "INSERT INTO notes VALUES (3, 'on the replica')")
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "a write on the replica fails: %v", err)
	require.Equal(t, "25006", pgErr.Code, "read_only_sql_transaction")

	// Stop ends it: the port closes.
	require.NoError(t, rep.Stop())
	require.False(t, portOpen(port), "the replica no longer listens")
	require.True(t, pgAnswers(primary), "the primary runs on")
}

func TestAReplicaOfARemotePrimaryIsRefused(t *testing.T) {
	t.Parallel()
	_, err := StartReplica(testContext(t), "postgres://postgres@db.example.com:5432/postgres", t.TempDir(), 55999)
	require.ErrorContains(t, err, "not on the loopback interface")
}

func randomHex(t *testing.T) string {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
