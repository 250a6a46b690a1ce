// Package invoices renders an organisation's invoices and credit notes as
// PDF. The numbers, lines and amounts are the store's (store.IssueInvoice
// takes the gapless number and freezes the seller's legal data); this
// package only lays them out, with the standard Helvetica font, so the
// text stays extractable by any PDF reader.
package invoices

import (
	"bytes"
	"fmt"

	"codeberg.org/go-pdf/fpdf"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
)

// PDF renders v.
func PDF(v store.Invoice) ([]byte, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetTitle(title(v)+" "+v.Number, true)
	pdf.SetCreator("Encore", true)
	// Core fonts speak Windows-1252: names with accents (Zoë, Müller)
	// are translated, not dropped.
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 18)
	pdf.CellFormat(0, 10, tr(title(v)), "", 1, "L", false, 0, "")
	pdf.SetFont("Helvetica", "", 10)
	seller := v.Seller.LegalName
	if seller == "" {
		seller = v.OrgID
	}
	for _, l := range []string{seller, v.Seller.Address, vatLine(v.Seller.VATID)} {
		if l != "" {
			pdf.MultiCell(0, 5, tr(l), "", "L", false)
		}
	}
	pdf.Ln(4)
	for _, kv := range [][2]string{
		{"Number", v.Number},
		{"Date", v.IssuedAt.UTC().Format("2 January 2006")},
		{"Booking", v.ReservationID.String()},
		{"Customer", v.Buyer},
		{"Event", v.EventTitle},
	} {
		if kv[1] == "" {
			continue
		}
		pdf.SetFont("Helvetica", "B", 10)
		pdf.CellFormat(30, 6, kv[0], "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		pdf.CellFormat(0, 6, tr(kv[1]), "", 1, "L", false, 0, "")
	}
	pdf.Ln(4)
	pdf.SetFont("Helvetica", "B", 10)
	for _, h := range []struct {
		w     float64
		text  string
		align string
	}{{95, "Description", "L"}, {15, "Qty", "R"}, {30, "Unit price", "R"}, {0, "Amount", "R"}} {
		pdf.CellFormat(h.w, 7, h.text, "B", 0, h.align, false, 0, "")
	}
	pdf.Ln(-1)
	pdf.SetFont("Helvetica", "", 10)
	for _, l := range v.Lines {
		pdf.CellFormat(95, 6, tr(l.Description), "", 0, "L", false, 0, "")
		pdf.CellFormat(15, 6, fmt.Sprint(l.Quantity), "", 0, "R", false, 0, "")
		pdf.CellFormat(30, 6, amount(l.UnitPrice, v.Currency), "", 0, "R", false, 0, "")
		pdf.CellFormat(0, 6, amount(l.Amount, v.Currency), "", 1, "R", false, 0, "")
	}
	pdf.Ln(2)
	taxLabel := fmt.Sprintf("VAT %s%%", percent(v.TaxRateBp))
	if v.Seller.PricesIncludeTax {
		taxLabel += " (included)"
	}
	for _, t := range []struct {
		label string
		value int64
		show  bool
	}{
		{"Service fees", v.Fees, v.Fees != 0},
		{"Net", v.Net, true},
		{taxLabel, v.Tax, true},
		{"Total", v.Total, true},
	} {
		if !t.show {
			continue
		}
		style := ""
		if t.label == "Total" {
			style = "B"
		}
		pdf.SetFont("Helvetica", style, 10)
		pdf.CellFormat(140, 6, t.label, "", 0, "R", false, 0, "")
		pdf.CellFormat(0, 6, amount(t.value, v.Currency), "", 1, "R", false, 0, "")
	}
	if v.Kind == store.KindCreditNote {
		pdf.Ln(6)
		pdf.SetFont("Helvetica", "", 9)
		pdf.MultiCell(0, 5, "This credit note refunds the amount above to the card the booking was paid with.", "", "L", false)
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, fmt.Errorf("invoices: render %s: %w", v.Number, err)
	}
	return buf.Bytes(), nil
}

func title(v store.Invoice) string {
	if v.Kind == store.KindCreditNote {
		return "Credit note"
	}
	return "Invoice"
}

func vatLine(id string) string {
	if id == "" {
		return ""
	}
	return "VAT ID " + id
}

// amount writes minor units with the currency's own exponent.
func amount(minor int64, currency string) string {
	return money.Format(money.Money{Amount: minor, Currency: currency})
}

// percent writes basis points as a percentage ("21", "5.5").
func percent(bp int) string {
	if bp%100 == 0 {
		return fmt.Sprint(bp / 100)
	}
	return fmt.Sprintf("%d.%02d", bp/100, bp%100)
}
