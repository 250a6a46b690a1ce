package venues_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/venues"
)

// seatsJSON is a venue whose one row goes on with seat after seat for
// about size bytes: far past the seat cap well before its end.
func seatsJSON(size int) *apitest.Endless {
	return &apitest.Endless{Head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "s", "kind": "seated", "category": "c", "rows": [{"label": "A", "seats": [{"number": 1, "x": 0, "y": 0}`,
		Rep: `, {"number": 2, "x": 0, "y": 0}`, Tail: `]}]}]}}`, Size: size}
}

func requireLimit(t *testing.T, err error, field string, limit int) {
	t.Helper()
	var le *venues.LimitError
	require.True(t, errors.As(err, &le), "want a *venues.LimitError, got %v", err)
	require.Equal(t, field, le.Field)
	require.Equal(t, limit, le.Limit)
}

func TestAJSONLayoutPastTheSeatCapIsRefusedAtTheCapWithoutReadingTheRest(t *testing.T) {
	t.Parallel()
	body := seatsJSON(30 << 20) // a million seats, under the body cap
	_, err := venues.ParseJSON(body)
	requireLimit(t, err, "layout", venues.MaxSeats)
	// 100,001 seats of 31 bytes are 3.1 MB; the decoder reads ahead a little.
	require.Less(t, body.N, 4<<20, "read %d of %d bytes", body.N, body.Size)
}

func TestAJSONLayoutPastTheSectionCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	body := &apitest.Endless{Head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "g", "kind": "general", "category": "c", "capacity": 1}`,
		Rep: `, {"id": "g", "kind": "general", "category": "c", "capacity": 1}`, Tail: `]}}`, Size: 20 << 20}
	_, err := venues.ParseJSON(body)
	requireLimit(t, err, "layout.sections", venues.MaxSections)
	require.Less(t, body.N, 1<<20, "read %d of %d bytes", body.N, body.Size)
}

func TestAJSONBodyPastTheSizeCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	// Whitespace costs nothing to parse: only the size cap stops it.
	body := &apitest.Endless{Head: `{"name": "Hall", "city":`, Rep: strings.Repeat(" ", 4096), Tail: `"Ghent"}`, Size: 64 << 20}
	_, err := venues.ParseJSON(body)
	requireLimit(t, err, "body", venues.MaxFileBytes)
	require.LessOrEqual(t, body.N, venues.MaxFileBytes+64<<10, "read %d of %d bytes", body.N, body.Size)
}

func TestACSVLayoutPastTheSeatOrSectionCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	seats := &apitest.Endless{Head: "section,kind,category,row,seat,x,y\n", Rep: "s,seated,c,A,1,0,0\n", Size: 30 << 20}
	_, err := venues.ParseCSV(seats, venues.CSVMeta{Name: "Hall", City: "Ghent", Timezone: "Europe/Brussels"})
	requireLimit(t, err, "layout", venues.MaxSeats)
	require.Less(t, seats.N, 3<<20, "read %d of %d bytes", seats.N, seats.Size)

	var b strings.Builder
	b.WriteString("section,kind,category,row,seat,x,y,capacity\n")
	for i := range venues.MaxSections + 1 {
		fmt.Fprintf(&b, "g%d,general,c,,,,,1\n", i)
	}
	_, err = venues.ParseCSV(strings.NewReader(b.String()), venues.CSVMeta{Name: "Hall", City: "Ghent", Timezone: "Europe/Brussels"})
	requireLimit(t, err, "layout.sections", venues.MaxSections)
}
