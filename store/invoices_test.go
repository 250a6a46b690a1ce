package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// TestAHundredBookingsInvoicedAtOnceGetTheNumbersOneToAHundred: an
// organisation's hundred paid bookings are invoiced concurrently, each
// twice at once, beside one unpaid hold: the numbers are 1..100 of the
// year, no gap, no duplicate, one invoice per booking, none for the hold.
// A refund then takes number 101 for its credit note.
func TestAHundredBookingsInvoicedAtOnceGetTheNumbersOneToAHundred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev := "evt_inv_" + testenv.RandomSuffix()
	org := "org_" + ev
	require.NoError(t, st.Catalogue.CreateEvent(ctx, store.EventSpec{ID: ev, Title: "Invoiced", VenueID: "ven_inv",
		VenueName: "V", City: "C", StartsAt: time.Now().AddDate(0, 1, 0), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []store.SectionSpec{{ID: "sec_" + ev, Name: "Stalls", Rows: 11, PerRow: 10, BasePrice: 2500}}}))
	_, err := st.Pool().Exec(ctx, `UPDATE events SET org_id = $2 WHERE id = $1`, ev, org)
	require.NoError(t, err)
	require.NoError(t, st.Orgs.SaveOrgSettings(ctx, store.OrgSettings{OrgID: org, LegalName: "Zoë Müller Concerts BV",
		TaxRateBp: 900, PricesIncludeTax: true, InvoicePrefix: "ZMC"}))

	seat := func(i int) string { return fmt.Sprintf("sec_%s-%c-%d", ev, 'A'+i/10, i%10+1) }
	paid := make([]uuid.UUID, 100)
	for i := range paid {
		h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fmt.Sprintf("fan%d_%s", i, ev),
			EventID: ev, SeatIDs: []string{seat(i)}})
		require.NoError(t, err)
		ok, err := st.Bookings.ConfirmSale(ctx, h.ID)
		require.NoError(t, err)
		require.True(t, ok)
		paid[i] = h.ID
	}
	unpaid, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: "late_" + ev, EventID: ev,
		SeatIDs: []string{seat(100)}})
	require.NoError(t, err)

	var wg sync.WaitGroup
	numbers := make([]string, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := st.Bookings.IssueInvoice(ctx, paid[i%100])
			if err != nil {
				t.Error(err)
				return
			}
			numbers[i] = v.Number
		}()
	}
	_, unpaidErr := st.Bookings.IssueInvoice(ctx, unpaid.ID)
	wg.Wait()
	require.ErrorIs(t, unpaidErr, store.ErrNoInvoice, "an unpaid hold takes no number")
	for i := range 100 {
		require.Equal(t, numbers[i], numbers[i+100], "both calls for a booking answer its one invoice")
	}
	year := time.Now().UTC().Year()
	rows, err := st.Pool().Query(ctx, `SELECT seq FROM invoices WHERE org_id = $1 AND year = $2 ORDER BY seq`, org, year)
	require.NoError(t, err)
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, seqs, 100)
	for i, s := range seqs {
		require.Equal(t, int64(i+1), s, "gapless from 1")
	}

	v, err := st.Bookings.Invoice(ctx, paid[0], store.KindInvoice)
	require.NoError(t, err)
	require.Regexp(t, fmt.Sprintf(`^ZMC-%d-0000\d\d$|^ZMC-%d-000100$`, year, year), v.Number)
	require.Equal(t, "Zoë Müller Concerts BV", v.Seller.LegalName)
	require.Equal(t, v.Net+v.Tax, v.Total)
	require.Len(t, v.Lines, 1)

	cn, err := st.Bookings.IssueCreditNote(ctx, paid[0], v.Total)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("ZMC-%d-000101", year), cn.Number, "the credit note takes the next number")
	require.Equal(t, -v.Total, cn.Total)
	require.Equal(t, -v.Tax, cn.Tax)
	again, err := st.Bookings.IssueCreditNote(ctx, paid[0], v.Total)
	require.NoError(t, err)
	require.Equal(t, cn.Number, again.Number, "one credit note per refund")
}
