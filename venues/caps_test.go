package venues_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/venues"
)

// endless is a body of a head, then rep over and over up to size bytes,
// then a tail; read counts the bytes a reader took from it, so a test can
// tell whether the parser stopped early or read everything.
type endless struct {
	head, rep, tail string
	size, read      int
	pending         string
}

func (b *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if b.pending == "" {
			switch {
			case b.read+n == 0 && b.head != "":
				b.pending = b.head
			case b.read+n+len(b.rep) <= b.size:
				b.pending = b.rep
			case b.tail != "":
				b.pending, b.tail = b.tail, ""
			default:
				b.read += n
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
		c := copy(p[n:], b.pending)
		b.pending = b.pending[c:]
		n += c
	}
	b.read += n
	return n, nil
}

// seatsJSON is a venue whose one row goes on with seat after seat for
// about size bytes: far past the seat cap well before its end.
func seatsJSON(size int) *endless {
	return &endless{head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "s", "kind": "seated", "category": "c", "rows": [{"label": "A", "seats": [{"number": 1, "x": 0, "y": 0}`,
		rep: `, {"number": 2, "x": 0, "y": 0}`, tail: `]}]}]}}`, size: size}
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
	require.Less(t, body.read, 4<<20, "read %d of %d bytes", body.read, body.size)
}

func TestAJSONLayoutPastTheSectionCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	body := &endless{head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "g", "kind": "general", "category": "c", "capacity": 1}`,
		rep: `, {"id": "g", "kind": "general", "category": "c", "capacity": 1}`, tail: `]}}`, size: 20 << 20}
	_, err := venues.ParseJSON(body)
	requireLimit(t, err, "layout.sections", venues.MaxSections)
	require.Less(t, body.read, 1<<20, "read %d of %d bytes", body.read, body.size)
}

func TestAJSONBodyPastTheSizeCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	// Whitespace costs nothing to parse: only the size cap stops it.
	body := &endless{head: `{"name": "Hall", "city":`, rep: strings.Repeat(" ", 4096), tail: `"Ghent"}`, size: 64 << 20}
	_, err := venues.ParseJSON(body)
	requireLimit(t, err, "body", venues.MaxFileBytes)
	require.LessOrEqual(t, body.read, venues.MaxFileBytes+64<<10, "read %d of %d bytes", body.read, body.size)
}

func TestACSVLayoutPastTheSeatOrSectionCapIsRefusedAtTheCap(t *testing.T) {
	t.Parallel()
	seats := &endless{head: "section,kind,category,row,seat,x,y\n", rep: "s,seated,c,A,1,0,0\n", size: 30 << 20}
	_, err := venues.ParseCSV(seats, venues.CSVMeta{Name: "Hall", City: "Ghent", Timezone: "Europe/Brussels"})
	requireLimit(t, err, "layout", venues.MaxSeats)
	require.Less(t, seats.read, 3<<20, "read %d of %d bytes", seats.read, seats.size)

	var b strings.Builder
	b.WriteString("section,kind,category,row,seat,x,y,capacity\n")
	for i := range venues.MaxSections + 1 {
		fmt.Fprintf(&b, "g%d,general,c,,,,,1\n", i)
	}
	_, err = venues.ParseCSV(strings.NewReader(b.String()), venues.CSVMeta{Name: "Hall", City: "Ghent", Timezone: "Europe/Brussels"})
	requireLimit(t, err, "layout.sections", venues.MaxSections)
}
