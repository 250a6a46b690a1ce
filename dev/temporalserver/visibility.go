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
// booking): the visibility database's CPU fell from 8.6-9.2 to 7.0 ms a
// booking without them. A query on an attribute whose column has no index
// still answers, by a scan, until the next start builds the index.

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
// the database lacks: run before the schema tool upgrades a visibility
// database, whose migrations expect the schema's own indexes.
func restoreCustomIndexes(exec func(stmt string, args ...any) error) error {
	idx, err := customIndexes()
	if err != nil {
		return err
	}
	for _, ix := range idx {
		stmt := strings.Replace(ix.create, "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
		if err := exec(stmt); err != nil {
			return fmt.Errorf("temporalserver: restore index %s: %w", ix.name, err)
		}
	}
	return nil
}

// fitVisibilityIndexes keeps an index on each custom column some namespace
// maps an attribute onto and none on the others: it drops the unmapped
// columns' indexes and builds any a newly mapped column lacks. Several
// processes starting on one database take turns (an advisory lock).
func (s *Server) fitVisibilityIndexes(ctx context.Context) (dropped, built []string, err error) {
	mapped, err := s.mappedCustomColumns(ctx)
	if err != nil {
		return nil, nil, err
	}
	idx, err := customIndexes()
	if err != nil {
		return nil, nil, err
	}
	pc, err := pgx.ParseConfig(s.cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: parse DatabaseURL: %w", err)
	}
	pc.Database = s.cfg.VisibilityDatabaseName
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: connect to %s: %w", pc.Database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey(pc.Database+"/custom-indexes")); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT indexname FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename = 'executions_visibility'`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for _, n := range names {
			present[n] = true
		}
		for _, ix := range idx {
			switch {
			case mapped[ix.column] && !present[ix.name]:
				if _, err := tx.Exec(ctx, ix.create); err != nil {
					return fmt.Errorf("build index %s: %w", ix.name, err)
				}
				built = append(built, ix.name)
			case !mapped[ix.column] && present[ix.name]:
				if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{ix.name}.Sanitize()); err != nil {
					return fmt.Errorf("drop index %s: %w", ix.name, err)
				}
				dropped = append(dropped, ix.name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("temporalserver: visibility indexes: %w", err)
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
