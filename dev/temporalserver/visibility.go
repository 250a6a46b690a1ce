package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"
	tschema "go.temporal.io/server/schema"
)

// The visibility schema builds an index on each of its 28 pre-allocated
// custom search attribute columns (Bool01 to KeywordList03; the table has
// 74), whether or not a namespace maps an attribute onto the column. A
// workflow's visibility row changes an indexed column on nearly every write
// (its close time is in every index), so each write inserts into every
// index: Encore maps 7 columns, and the other 21 indexes cost each booking's
// three visibility writes an insert apiece. Measured on encore dev (32 fans
// booking): the visibility database's CPU a booking fell from 8.6-9.2 to
// 7.0 ms without them on a stack that had sold about 1,500 bookings, and
// from 5.4-5.6 to 5.1-5.3 ms on fresh stacks, whose small table stays
// cached. A query on an attribute whose column has no index still
// answers, by a scan, until the next start builds the index.

// visibilitySchemaFile is the visibility schema this server release sets up.
const visibilitySchemaFile = "postgresql/v12/visibility/schema.sql"

// customIndexPattern finds the CREATE INDEX statements on the pre-allocated
// custom columns: their column follows namespace_id directly, where the
// system attributes' columns are named Temporal*.
var customIndexPattern = regexp.MustCompile(`(?m)^CREATE INDEX (by_\w+)\s+ON executions_visibility (?:USING GIN )?\(namespace_id, ((?:Bool|Datetime|Double|Int|Keyword|Text|KeywordList)\d{2})\b[^;]*;`)

// customIndex is one index on a pre-allocated custom search attribute column.
type customIndex struct {
	name   string // by_keyword_01
	column string // Keyword01, the field name a namespace's alias maps onto
	create string // the schema's CREATE INDEX statement
}

// customIndexes are the schema's indexes on the pre-allocated custom columns.
func customIndexes() ([]customIndex, error) {
	sql, err := fs.ReadFile(tschema.Assets(), visibilitySchemaFile)
	if err != nil {
		return nil, fmt.Errorf("temporalserver: read %s: %w", visibilitySchemaFile, err)
	}
	var out []customIndex
	for _, m := range customIndexPattern.FindAllStringSubmatch(string(sql), -1) {
		out = append(out, customIndex{name: m[1], column: m[2], create: m[0]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("temporalserver: no custom search attribute index in %s", visibilitySchemaFile)
	}
	return out, nil
}

// restoreCustomIndexes builds every custom-column index the schema has and
// the database lacks, in one statement: run before the schema tool
// upgrades a visibility database, so a migration finds the schema's own
// indexes (none from 1.2 to 1.14 touches them; Temporal's migrations build
// theirs IF NOT EXISTS). A database older than the columns (before 1.2)
// skips each index whose column it does not have yet.
func restoreCustomIndexes(exec func(stmt string, args ...any) error) error {
	idx, err := customIndexes()
	if err != nil {
		return err
	}
	var do strings.Builder
	do.WriteString("DO $$ BEGIN\n")
	for _, ix := range idx {
		fmt.Fprintf(&do, "IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "+
			"AND table_name = 'executions_visibility' AND column_name = '%s') THEN\n  %s\nEND IF;\n",
			strings.ToLower(ix.column), strings.Replace(ix.create, "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
	}
	do.WriteString("END $$")
	if err := exec(do.String()); err != nil {
		return fmt.Errorf("temporalserver: restore the custom search attribute indexes: %w", err)
	}
	return nil
}

// indexLockTimeout bounds each DROP or CREATE INDEX's wait for the table:
// the server is serving by then, and a change that cannot have the table
// soon waits for the next start rather than stall visibility behind it.
const indexLockTimeout = "5s"

// fitVisibilityIndexes keeps an index on each custom column some namespace
// maps an attribute onto and none on the others: it drops the unmapped
// columns' indexes and builds any a newly mapped column lacks. It holds
// the advisory lock that prepareDatabases takes, so a start that sets up
// or upgrades the schema and one that fits the indexes take turns, and
// reads the namespaces' mappings only once it holds it.
func (s *Server) fitVisibilityIndexes(ctx context.Context) (dropped, built []string, err error) {
	idx, err := customIndexes()
	if err != nil {
		return nil, nil, err
	}
	admin, err := pgx.Connect(ctx, s.cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: connect to the admin database: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	lockKey := schemaLockKey(s.cfg)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return nil, nil, fmt.Errorf("temporalserver: advisory lock: %w", err)
	}
	defer func() {
		_, _ = admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockKey)
	}()
	mapped, err := s.mappedCustomColumns(ctx)
	if err != nil {
		return nil, nil, err
	}

	pc, err := pgx.ParseConfig(s.cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: parse DatabaseURL: %w", err)
	}
	pc.Database = s.cfg.VisibilityDatabaseName
	pc.RuntimeParams["lock_timeout"] = indexLockTimeout
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: connect to %s: %w", pc.Database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// valid is false for an index a CREATE INDEX CONCURRENTLY left
	// unfinished: dropped, and built again if its column is mapped.
	valid := map[string]bool{}
	var name string
	var ok bool
	rows, _ := conn.Query(ctx, `SELECT c.relname, x.indisvalid FROM pg_index x
		JOIN pg_class c ON c.oid = x.indexrelid
		WHERE x.indrelid = 'executions_visibility'::regclass`)
	if _, err := pgx.ForEachRow(rows, []any{&name, &ok}, func() error { valid[name] = ok; return nil }); err != nil {
		return nil, nil, fmt.Errorf("temporalserver: list visibility indexes: %w", err)
	}
	// Drops in one short transaction (DROP INDEX CONCURRENTLY costs a wait
	// for every running transaction an index, about 0.8 s for the 21 at a
	// start); builds CONCURRENTLY, as a large table's would block writes.
	var drop, build []customIndex
	for _, ix := range idx {
		isValid, present := valid[ix.name]
		if present && (!mapped[ix.column] || !isValid) {
			drop = append(drop, ix)
			present = false
		}
		if mapped[ix.column] && !present {
			build = append(build, ix)
		}
	}
	if len(drop) > 0 {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, ix := range drop {
				if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+pgx.Identifier{ix.name}.Sanitize()); err != nil {
					return fmt.Errorf("drop index %s: %w", ix.name, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("temporalserver: %w", err)
		}
		for _, ix := range drop {
			if !mapped[ix.column] {
				dropped = append(dropped, ix.name)
			}
		}
	}
	for _, ix := range build {
		create := strings.Replace(ix.create, "CREATE INDEX ", "CREATE INDEX CONCURRENTLY IF NOT EXISTS ", 1)
		if _, err := conn.Exec(ctx, create); err != nil {
			return dropped, built, fmt.Errorf("temporalserver: build index %s: %w", ix.name, err)
		}
		built = append(built, ix.name)
	}
	return dropped, built, nil
}

// mappedCustomColumns are the custom columns (Keyword01, ...) that any
// namespace maps a search attribute onto.
func (s *Server) mappedCustomColumns(ctx context.Context) (map[string]bool, error) {
	mapped := map[string]bool{}
	var token []byte
	for {
		resp, err := s.client.WorkflowService().ListNamespaces(ctx,
			&workflowservice.ListNamespacesRequest{PageSize: 100, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("temporalserver: list namespaces: %w", err)
		}
		for _, ns := range resp.GetNamespaces() {
			for column := range ns.GetConfig().GetCustomSearchAttributeAliases() {
				mapped[column] = true
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if len(mapped) == 0 {
		// A server that maps nothing may be one whose namespaces did not
		// list their aliases: keep every index rather than guess.
		return nil, errors.New("temporalserver: no namespace maps a custom search attribute")
	}
	return mapped, nil
}
