package testenv

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// QueryCounter is a pgx tracer (set it as a pool's ConnConfig.Tracer) that
// counts the statements the pool sends whose SQL Match accepts, or every
// statement when Match is nil, a batch's one by one: how a test proves how
// many statements a step costs.
type QueryCounter struct {
	Match func(sql string) bool
	n     atomic.Int64
}

// TraceQueryStart counts a statement.
func (c *QueryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if c.Match == nil || c.Match(d.SQL) {
		c.n.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing: a statement is counted when sent.
func (c *QueryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart does nothing: a batch's statements are counted as their
// results are read (TraceBatchQuery).
func (c *QueryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery counts one statement of a batch.
func (c *QueryCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if c.Match == nil || c.Match(d.SQL) {
		c.n.Add(1)
	}
}

// TraceBatchEnd does nothing.
func (c *QueryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Count is how many statements were counted since the last Reset.
func (c *QueryCounter) Count() int64 { return c.n.Load() }

// Reset starts the count again from zero.
func (c *QueryCounter) Reset() { c.n.Store(0) }
