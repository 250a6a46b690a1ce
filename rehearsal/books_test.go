package rehearsal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/store"
)

// settlingBooks are books of a stack still finishing a late break: the
// audit fails while PostgreSQL restarts (auditFails reads), then a paid
// booking waits for its tickets (missingFor more reads).
type settlingBooks struct {
	auditFails, missingFor int
	audits, settles        int
}

func (b *settlingBooks) Audit(context.Context, string) (store.AuditReport, error) {
	b.audits++
	if b.audits <= b.auditFails {
		return store.AuditReport{}, errors.New("the database system is starting up")
	}
	return store.AuditReport{}, nil
}

func (b *settlingBooks) Settle(context.Context, string) (store.Settled, error) {
	b.settles++
	if b.settles <= b.auditFails+b.missingFor {
		return store.Settled{BookingsMissingTickets: 1}, nil
	}
	return store.Settled{}, nil
}

func (b *settlingBooks) Reconcile(context.Context, time.Time) (activities.ReconcileReport, error) {
	return activities.ReconcileReport{}, nil
}

func TestTheBooksWaitForAStackThatIsStillFinishingALateBreak(t *testing.T) {
	t.Parallel()
	b := &settlingBooks{auditFails: 1, missingFor: 2}
	c := check(context.Background(), b, "evt", time.Now(), time.Millisecond)
	require.NoError(t, c.auditErr)
	require.NoError(t, c.settleErr)
	require.Zero(t, c.settled.BookingsMissingTickets, "the booking got its tickets once PostgreSQL was back")
	require.Equal(t, 4, c.settleTries, "read until the audit answered and the tickets were there")
}

func TestAPaidBookingThatNeverGetsItsTicketsCountsOnceTheBooksStopWaiting(t *testing.T) {
	t.Parallel()
	b := &settlingBooks{missingFor: 1000}
	c := check(context.Background(), b, "evt", time.Now(), time.Millisecond)
	require.EqualValues(t, 1, c.settled.BookingsMissingTickets)
	require.Equal(t, settleTries, c.settleTries)
	require.Equal(t, settleTries, b.settles, "no more reads than the books allow")
}
