package testenv

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// QueryCounter is a pgx tracer (set it as a pool's ConnConfig.Tracer) that
// counts the statements the pool sends whose SQL Match accepts, or every
// statement when Match is nil: how a test proves how many round trips a step
// costs.
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

// Count is how many statements were counted since the last Reset.
func (c *QueryCounter) Count() int64 { return c.n.Load() }

// Reset starts the count again from zero.
func (c *QueryCounter) Reset() { c.n.Store(0) }
