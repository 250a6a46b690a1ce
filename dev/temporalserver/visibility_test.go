package temporalserver

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	serverlog "go.temporal.io/server/common/log"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
)

func TestVisibilityIndexesOnlyTheCustomColumnsANamespaceMaps(t *testing.T) {
	t.Parallel()
	dbURL := testDatabaseURL(t)
	s := StartForTest(t, dbURL, func(c *Config) { c.SearchAttributes = testSearchAttributes })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, visDB := s.DatabaseNames()
	pc, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	pc.Database = visDB
	conn, err := pgx.ConnectConfig(ctx, pc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	all, err := customIndexes()
	require.NoError(t, err)
	require.Len(t, all, 28, "Bool, Datetime, Double, Int ×3, Keyword ×10, Text and KeywordList ×3")
	mapped, err := s.mappedCustomColumns(ctx)
	require.NoError(t, err)
	require.Len(t, mapped, len(testSearchAttributes))

	present := visibilityIndexes(t, ctx, conn)
	for _, ix := range all {
		require.Equal(t, mapped[ix.column], present[ix.name], "%s on %s", ix.name, ix.column)
	}
	// The system attributes' and the table's own indexes are the schema's:
	// 74 in all, less the unmapped custom columns'.
	require.Len(t, present, 74-(len(all)-len(mapped)))
	require.True(t, present["by_temporal_keyword_01"] && present["by_status"] && present["by_workflow_id"])

	// An attribute added later gets its column's index at the next start.
	_, err = s.client.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        s.cfg.Namespace,
		SearchAttributes: map[string]enums.IndexedValueType{"EncoreNote": enums.INDEXED_VALUE_TYPE_TEXT},
	})
	require.NoError(t, err)
	now, err := s.mappedCustomColumns(ctx)
	require.NoError(t, err)
	var added []string // the server picks a free Text column, any of the three
	for _, ix := range all {
		if now[ix.column] && !mapped[ix.column] {
			added = append(added, ix.name)
		}
	}
	require.Len(t, added, 1)
	require.Regexp(t, `^by_text_0[1-3]$`, added[0])
	dropped, built, err := s.fitVisibilityIndexes(ctx)
	require.NoError(t, err)
	require.Empty(t, dropped)
	require.Equal(t, added, built)

	// A start that upgrades the schema first gives its migrations every
	// index back: the recorded version set one back, setupSchema restores
	// the indexes and applies the last migration again.
	_, err = conn.Exec(ctx, `UPDATE schema_version SET curr_version = '1.13'`)
	require.NoError(t, err)
	target, err := parseDatabaseURL(dbURL)
	require.NoError(t, err)
	require.NoError(t, setupSchema(target.sqlConfig(visDB, 2), visibilitySchemaName, pgschema.VisibilityVersion,
		restoreCustomIndexes, serverlog.NewNoopLogger()))
	present = visibilityIndexes(t, ctx, conn)
	for _, ix := range all {
		require.True(t, present[ix.name], ix.name)
	}
	require.Len(t, present, 74)
	var version string
	require.NoError(t, conn.QueryRow(ctx, `SELECT curr_version FROM schema_version`).Scan(&version))
	require.Equal(t, pgschema.VisibilityVersion, version)
}

// visibilityIndexes are the names of executions_visibility's indexes.
func visibilityIndexes(t *testing.T, ctx context.Context, conn *pgx.Conn) map[string]bool {
	t.Helper()
	rows, _ := conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'executions_visibility'`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}
