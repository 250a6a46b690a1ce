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
	trips atomic.Int64
}

// TraceQueryStart counts a statement.
func (c *QueryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.trips.Add(1)
	if c.Match == nil || c.Match(d.SQL) {
		c.n.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing: a statement is counted when sent.
func (c *QueryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts the batch's round trip; its statements are
// counted as their results are read (TraceBatchQuery).
func (c *QueryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
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

// Trips is how many round trips were sent since the last Reset: a
// statement sent alone is one, a batch one whatever it holds (once its
// statements are prepared on the connection, which costs one more the
// first time). Match does not apply.
func (c *QueryCounter) Trips() int64 { return c.trips.Load() }

// Reset starts both counts again from zero.
func (c *QueryCounter) Reset() { c.n.Store(0); c.trips.Store(0) }
