package api_test

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

func TestTheSalesCSVNeutralisesSectionNamesThatASpreadsheetWouldRunAsFormulas(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	tok := s.token("owner", "org_csv", session.Organiser)
	v := venues.ClubVenue()
	require.Len(t, v.Layout.Sections, 2)
	formula := `=HYPERLINK("http://x.invalid","x")`
	v.Layout.Sections[0].Name = formula
	v.Layout.Sections[1].Name = "@SUM(1+1)"
	body, err := venues.EncodeJSON(v)
	require.NoError(t, err)
	r := s.do(http.MethodPost, "/v1/admin/venues?org=org_csv", tok, body, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := s.event(tok, r.Body["venue_id"].(string))

	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales?format=csv", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	rows, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	require.NoError(t, err)
	prefix := store.SectionPrefix(id)
	first, second := findRow(rows, prefix+v.Layout.Sections[0].ID), findRow(rows, prefix+v.Layout.Sections[1].ID)
	require.NotNil(t, first, "rows: %v", rows)
	require.NotNil(t, second, "rows: %v", rows)
	require.Equal(t, "'"+formula, first[1], "a leading quote makes the cell text")
	require.Equal(t, "'@SUM(1+1)", second[1])
	for _, row := range rows {
		for _, cell := range row {
			require.False(t, cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])), "cell %q of %v", cell, row)
		}
	}
	// The report's own numbers stay numbers; the JSON keeps the names as typed.
	require.Equal(t, "140", findRow(rows, prefix+"balcony")[2])
	r = s.do(http.MethodGet, "/v1/admin/events/"+id+"/sales", tok, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"=HYPERLINK(`)
}
