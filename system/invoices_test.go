package system_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// getPDF fetches path as token: the status, the content type and the body.
func (e *e2e) getPDF(path, token string) (int, string, string, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.api.URL+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), body
}

// TestAPaidBookingHasANumberedInvoiceAndItsRefundACreditNote: over HTTP
// with the saga. The sale's issue step numbers the organisation's invoice;
// the fan, support and the organiser read it as PDF, another fan and
// another organisation's organiser get 404. The fan cancels within policy:
// the refund's credit note takes the next number.
func TestAPaidBookingHasANumberedInvoiceAndItsRefundACreditNote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newE2E(t)
	var org string
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT org_id FROM events WHERE id = $1`, e.eventID).Scan(&org))
	org = org + "_" + e.eventID[4:] // the package's events share a database: an organisation of the test's own
	_, err := e.store.Pool().Exec(ctx, `UPDATE events SET org_id = $2, service_fee = 100 WHERE id = $1`, e.eventID, org)
	require.NoError(t, err)
	require.NoError(t, e.store.Orgs.SaveOrgSettings(ctx, store.OrgSettings{OrgID: org, LegalName: "Encore Live BV",
		VATID: "NL000000000B01", TaxRateBp: 2100, PricesIncludeTax: true, InvoicePrefix: "LIVE"}))

	fan := e.fanWithEmail("ines", "ines@example.com")
	id, _ := e.buy(fan, e.seat(2, 1))
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM invoices WHERE reservation_id = $1 AND kind = 'INVOICE'`, id) == 1
	}, 30*time.Second, 50*time.Millisecond, "the sale's issue step invoices it")
	year := time.Now().UTC().Format("2006")

	status, ctype, disp, body := e.getPDF("/v1/bookings/"+id+"/invoice.pdf", fan)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Equal(t, "application/pdf", ctype)
	require.True(t, bytes.HasPrefix(body, []byte("%PDF-")))
	require.Contains(t, disp, "LIVE-"+year+"-000001.pdf")
	for _, who := range []string{e.staff("sam", "", session.Support), e.staff("olga", org, session.Organiser)} {
		status, _, _, _ = e.getPDF("/v1/bookings/"+id+"/invoice.pdf", who)
		require.Equal(t, http.StatusOK, status)
	}
	for _, who := range []string{e.fan("mallory"), e.staff("rival", "org_rival", session.Organiser)} {
		status, _, _, _ = e.getPDF("/v1/bookings/"+id+"/invoice.pdf", who)
		require.Equal(t, http.StatusNotFound, status)
	}
	status, _, _, body = e.getPDF("/v1/bookings/"+id+"/credit-note.pdf", fan)
	require.Equal(t, http.StatusNotFound, status)
	require.True(t, strings.Contains(string(body), "/problems/no-invoice"), "%s", body)

	// The organiser's report shows the fee and the tax apart.
	var invTax, invTotal int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT tax, total FROM invoices WHERE reservation_id = $1`, id).Scan(&invTax, &invTotal))
	report, err := (&organiser.Sales{Reader: store.NewReader(e.store.Pool())}).Report(ctx, venues.Scope{Admin: true}, e.eventID)
	require.NoError(t, err)
	require.Equal(t, int64(100), report.Totals.Fees)
	require.Equal(t, invTax, report.Tax)
	require.Equal(t, invTotal-invTax, report.Net)
	require.Positive(t, invTax, "21 % VAT included")

	status, out := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil)
	require.Equal(t, http.StatusOK, status, "%v", out)
	e.waitStatus(fan, id, vocab.BookingRefunded, 30*time.Second)
	require.Eventually(t, func() bool {
		status, _, disp, _ = e.getPDF("/v1/bookings/"+id+"/credit-note.pdf", fan)
		return status == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the refund's credit note")
	require.Contains(t, disp, "LIVE-"+year+"-000002.pdf", "the credit note takes the next number")
	var total, credit int64
	require.NoError(t, e.store.Pool().QueryRow(ctx, `SELECT (SELECT total FROM invoices WHERE reservation_id = $1 AND kind = 'INVOICE'),
		(SELECT total FROM invoices WHERE reservation_id = $1 AND kind = 'CREDIT_NOTE')`, id).Scan(&total, &credit))
	require.Equal(t, -total, credit)
}
