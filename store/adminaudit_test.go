package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

func TestTheAdminAuditLogListsActionsNewestFirstAndFilters(t *testing.T) {
	ctx := context.Background()
	pool := testenv.DB(t)
	st := store.New(pool, store.Options{})
	require.NoError(t, st.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: "olga", OrgID: "org_a", Action: "event.publish",
		Target: "evt_1", Before: json.RawMessage(`{"status":"DRAFT"}`), After: json.RawMessage(`{"status":"PUBLISHED"}`)}))
	require.NoError(t, st.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: "sam", Action: "booking.refund", Target: "bk_1", Reason: "duplicate"}))
	require.NoError(t, st.Orgs.RecordAdminAction(ctx, store.AdminAction{Actor: "olga", OrgID: "org_a", Action: "seats.block", Target: "evt_1"}))

	all, err := st.Orgs.ListAdminActions(ctx, store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, []string{"seats.block", "booking.refund", "event.publish"}, []string{all[0].Action, all[1].Action, all[2].Action})
	require.JSONEq(t, `{"status":"PUBLISHED"}`, string(all[2].After))
	require.Nil(t, all[1].Before, "no document is stored as none, not as JSON null")

	olga, err := st.Orgs.ListAdminActions(ctx, store.AuditFilter{Actor: "olga", Target: "evt_1"})
	require.NoError(t, err)
	require.Len(t, olga, 2)
	older, err := st.Orgs.ListAdminActions(ctx, store.AuditFilter{BeforeID: all[0].ID, Limit: 1})
	require.NoError(t, err)
	require.Len(t, older, 1)
	require.Equal(t, "booking.refund", older[0].Action)
}

func TestAnAdminActionRecordedInARolledBackTransactionLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	pool := testenv.DB(t)
	st := store.New(pool, store.Options{})
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, store.RecordAdminActionTx(ctx, tx, store.AdminAction{Actor: "otto", Action: "controls.patch", Target: "evt_rb"}))
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return store.RecordAdminActionTx(ctx, tx, store.AdminAction{Actor: "otto", Action: "controls.patch", Target: "evt_ok"})
	}))
	got, err := st.Orgs.ListAdminActions(ctx, store.AuditFilter{Action: "controls.patch"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "evt_ok", got[0].Target)
	require.Error(t, st.Orgs.RecordAdminAction(ctx, store.AdminAction{Action: "x"}), "an action without its actor is refused")
}
