package organiser

import (
	"context"
	"io"

	"github.com/encore-tickets/encore/internal/csvsafe"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Sales reads sales reports from the browse plane's read-only pool: a
// report never competes with the buy plane's connections.
type Sales struct {
	Reader *store.Reader
}

// Report is GET /v1/admin/events/{id}/sales: every section and the totals.
type Report struct {
	EventID  string               `json:"event_id"`
	Currency string               `json:"currency"`
	Sections []store.SectionSales `json:"sections"`
	Totals   store.SectionSales   `json:"totals"`
	// Tax is the paid bookings' tax; Net what they brought without it
	// (revenue and fees less tax).
	Tax int64 `json:"tax"`
	Net int64 `json:"net"`
}

// Report reads the event's report for the scope's organisation.
func (s *Sales) Report(ctx context.Context, scope venues.Scope, eventID string) (Report, error) {
	if err := scope.Check(); err != nil {
		return Report{}, err
	}
	es, err := s.Reader.EventSales(ctx, eventID, scope.Filter())
	if err != nil {
		return Report{}, err
	}
	r := Report{EventID: es.EventID, Currency: es.Currency, Sections: es.Sections, Totals: store.SectionSales{SectionID: "total"}}
	if r.Sections == nil {
		r.Sections = []store.SectionSales{}
	}
	for _, sec := range es.Sections {
		t := &r.Totals
		t.Capacity += sec.Capacity
		t.Sold += sec.Sold
		t.Held += sec.Held
		t.Blocked += sec.Blocked
		t.Available += sec.Available
		t.Revenue += sec.Revenue
		t.Refunded += sec.Refunded
		t.ChargedBackTickets += sec.ChargedBackTickets
		t.ChargedBack += sec.ChargedBack
		t.ResaleSold += sec.ResaleSold
		t.ResaleVolume += sec.ResaleVolume
		t.ResaleFees += sec.ResaleFees
		t.Fees += sec.Fees
	}
	r.Tax = es.Tax
	r.Net = r.Totals.Revenue + r.Totals.Fees - r.Tax
	return r, nil
}

// WriteCSV writes the report as CSV: a header, one line per section and a
// "total" line (chargebacks and fan-to-fan resale as a count of tickets
// and amounts); money in minor units of the currency, as in the JSON. It
// writes through csvsafe, so a section name an organiser (or anyone who
// could name a section) typed never reaches a spreadsheet as a formula; the
// counts and amounts are the report's own numbers and stay numbers.
func (r Report) WriteCSV(w io.Writer) error {
	cw := csvsafe.NewWriter(w)
	_ = cw.Header("section_id", "name", "capacity", "sold", "held", "blocked", "available", "revenue", "refunded",
		"charged_back_tickets", "charged_back", "resale_sold", "resale_volume", "resale_fees", "fees", "currency")
	for _, s := range append(r.Sections, r.Totals) {
		_ = cw.Write(csvsafe.Text(s.SectionID), csvsafe.Text(s.Name), csvsafe.Int(s.Capacity), csvsafe.Int(s.Sold),
			csvsafe.Int(s.Held), csvsafe.Int(s.Blocked), csvsafe.Int(s.Available), csvsafe.Int(s.Revenue),
			csvsafe.Int(s.Refunded), csvsafe.Int(s.ChargedBackTickets), csvsafe.Int(s.ChargedBack),
			csvsafe.Int(s.ResaleSold), csvsafe.Int(s.ResaleVolume), csvsafe.Int(s.ResaleFees), csvsafe.Int(s.Fees), csvsafe.Text(r.Currency))
	}
	return cw.Flush()
}
