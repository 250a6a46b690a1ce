package organiser

import (
	"context"
	"encoding/csv"
	"io"
	"strconv"

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
	}
	return r, nil
}

// WriteCSV writes the report as CSV: a header, one line per section and a
// "total" line; money in minor units of the currency, as in the JSON.
func (r Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"section_id", "name", "capacity", "sold", "held", "blocked", "available", "revenue", "refunded", "currency"})
	for _, s := range append(r.Sections, r.Totals) {
		_ = cw.Write([]string{s.SectionID, s.Name, strconv.Itoa(s.Capacity), strconv.Itoa(s.Sold), strconv.Itoa(s.Held),
			strconv.Itoa(s.Blocked), strconv.Itoa(s.Available), strconv.FormatInt(s.Revenue, 10), strconv.FormatInt(s.Refunded, 10), r.Currency})
	}
	cw.Flush()
	return cw.Error()
}
