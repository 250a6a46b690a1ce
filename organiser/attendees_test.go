package organiser_test

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
)

// TestTheSalesCSVWithAnswersListsTheAttendeesAfterTheSectionsNeutralised:
// the sales CSV asked with answers has the sections, an empty line, then
// one row per ticket with a column per question; a fan's answer that
// starts a formula is written as text.
func TestTheSalesCSVWithAnswersListsTheAttendeesAfterTheSectionsNeutralised(t *testing.T) {
	t.Parallel()
	report := organiser.Report{EventID: "evt_x", Currency: "EUR",
		Sections: []store.SectionSales{{SectionID: "sec_a", Name: "Stalls", Capacity: 10, Sold: 1, Revenue: 2500}},
		Totals:   store.SectionSales{SectionID: "total", Capacity: 10, Sold: 1, Revenue: 2500}}
	att := organiser.Attendees{EventID: "evt_x", Questions: []store.Question{{ID: "name"}, {ID: "diet"}},
		Attendees: []store.Attendee{{TicketID: "tkt_1", BookingID: uuid.New(), SectionID: "sec_a", SeatID: "sec_a-A-1",
			Email: "fan@example.com", Answers: map[string]string{"name": `=HYPERLINK("http://x.invalid")`, "diet": "vegan"}}}}
	var buf bytes.Buffer
	require.NoError(t, organiser.WriteSalesCSV(&buf, report, att))
	r := csv.NewReader(&buf)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	require.NoError(t, err)
	require.Equal(t, "section_id", rows[0][0])
	require.Equal(t, "total", rows[2][0])
	require.Equal(t, []string{"ticket_id", "booking_id", "section_id", "seat_id", "email", "name", "diet"}, rows[3],
		"the attendees follow the sections (the empty line between is skipped by CSV readers)")
	require.Equal(t, `'=HYPERLINK("http://x.invalid")`, rows[4][5], "a formula is neutralised")
	require.Equal(t, "vegan", rows[4][6])
}
