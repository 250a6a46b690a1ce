package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AdminAction is one organiser, support or operator action as the admin
// audit log keeps it: who did what to which object, when, and the object
// before and after (JSON; nil when there was none).
type AdminAction struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	OrgID  string          `json:"org_id,omitempty"`
	Action string          `json:"action"`
	Target string          `json:"target,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`

	// EventID, when set, is the event the action was on: the record then
	// carries that event's organisation, read by the INSERT itself, and
	// OrgID is only the fallback for an event that does not exist. An
	// admin or support agent belongs to an organisation of their own, and
	// their action on another organisation's event belongs in that
	// organisation's log, where its organisers look for it.
	EventID string `json:"-"`
}

// AuditFilter narrows ListAdminActions; empty fields match everything.
// BeforeID pages backwards: only rows older than it. OrgID restricts the
// list to one organisation's records (an organiser's view).
type AuditFilter struct {
	Actor, Action, Target, OrgID string
	BeforeID                     int64
	Limit                        int
}

// RecordAdminAction appends a to the audit log on its own.
func (s *Orgs) RecordAdminAction(ctx context.Context, a AdminAction) error {
	return recordAdminAction(ctx, s.pool, a)
}

// RecordAdminActionTx appends a inside tx, so the record commits (or rolls
// back) with the change it describes.
func RecordAdminActionTx(ctx context.Context, tx pgx.Tx, a AdminAction) error {
	return recordAdminAction(ctx, tx, a)
}

func recordAdminAction(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, a AdminAction) error {
	if a.Actor == "" || a.Action == "" {
		return fmt.Errorf("store: an admin action needs its actor and action")
	}
	_, err := q.Exec(ctx, `INSERT INTO admin_audit (actor, org_id, action, target, reason, before, after)
		VALUES ($1, coalesce((SELECT org_id FROM events WHERE id = nullif($8, '')), $2), $3, $4, $5, $6, $7)`,
		a.Actor, a.OrgID, a.Action, a.Target, a.Reason, nullJSON(a.Before), nullJSON(a.After), a.EventID)
	return err
}

// nullJSON stores an absent document as SQL NULL rather than JSON null.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// ListAdminActions returns the newest actions first.
func (s *Orgs) ListAdminActions(ctx context.Context, f AuditFilter) ([]AdminAction, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, org_id, action, target, reason, before, after
		FROM admin_audit
		WHERE ($1 = '' OR actor = $1) AND ($2 = '' OR action = $2) AND ($3 = '' OR target = $3)
		  AND ($4 = 0 OR id < $4) AND ($6 = '' OR org_id = $6)
		ORDER BY id DESC LIMIT $5`, f.Actor, f.Action, f.Target, f.BeforeID, f.Limit, f.OrgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (AdminAction, error) {
		var a AdminAction
		var before, after []byte
		err := row.Scan(&a.ID, &a.At, &a.Actor, &a.OrgID, &a.Action, &a.Target, &a.Reason, &before, &after)
		a.Before, a.After = before, after
		return a, err
	})
}
