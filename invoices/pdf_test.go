package invoices_test

import (
	"bytes"
	"compress/zlib"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/invoices"
	"github.com/encore-tickets/encore/store"
)

// pdfText is the text a PDF reader extracts from doc's content streams:
// every stream inflated, every string shown with Tj joined.
func pdfText(t *testing.T, doc []byte) string {
	t.Helper()
	var out bytes.Buffer
	streams := regexp.MustCompile(`(?s)stream\r?\n(.*?)\nendstream`).FindAllSubmatch(doc, -1)
	require.NotEmpty(t, streams)
	shown := regexp.MustCompile(`\(((?:\\.|[^\\)])*)\)\s*Tj`)
	for _, s := range streams {
		r, err := zlib.NewReader(bytes.NewReader(s[1]))
		if err != nil {
			continue // not a compressed content stream
		}
		body, err := io.ReadAll(r)
		if err != nil {
			continue
		}
		for _, m := range shown.FindAllSubmatch(body, -1) {
			out.Write(m[1])
			out.WriteByte('\n')
		}
	}
	return out.String()
}

func TestAnInvoicePDFCarriesTheSellerTheNumberTheLinesAndTheTotalsAsText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kind  store.InvoiceKind
		sign  int64
		title string
	}{
		{"an invoice", store.KindInvoice, 1, "Invoice"},
		{"a credit note", store.KindCreditNote, -1, "Credit note"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := store.Invoice{Number: "ZMC-2026-000123", Kind: tc.kind, ReservationID: uuid.New(), OrgID: "org_zmc",
				IssuedAt: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), Currency: "EUR",
				Net: tc.sign * 3303, Tax: tc.sign * 297, Fees: tc.sign * 300, Total: tc.sign * 3600, TaxRateBp: 900,
				Seller: store.OrgSettings{LegalName: "Muller Concerts BV", Address: "Keizersgracht 1, Amsterdam", VATID: "NL001234567B01",
					PricesIncludeTax: true},
				Lines: []store.InvoiceLine{{Description: "Stalls · Child", Quantity: 2, UnitPrice: tc.sign * 1650, Fee: 300, Amount: tc.sign * 3300}},
				Buyer: "fan@example.com", EventTitle: "Night of the Proms"}
			doc, err := invoices.PDF(v)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(doc, []byte("%PDF-")))
			text := pdfText(t, doc)
			for _, want := range []string{tc.title, "Muller Concerts BV", "VAT ID NL001234567B01", "ZMC-2026-000123", "fan@example.com",
				"Night of the Proms", "Child", "VAT 9% \\(included\\)", "Total"} {
				require.Contains(t, text, want)
			}
			require.Regexp(t, `EUR -?36\.00`, text)
		})
	}
}
