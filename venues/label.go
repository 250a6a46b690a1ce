package venues

import (
	"strconv"

	"github.com/encore-tickets/encore/store"
)

// Label names a place as the venue's signs do, for people: "Lower 7, Row P,
// Seat 16" for a seat, the area's own name ("Standing pit") for general
// admission. Fans read it on holds, bookings, tickets and e-mails instead of
// a seat ID.
func Label(p store.Place) string {
	if p.Row == "" {
		return p.Section
	}
	return p.Section + ", Row " + p.Row + ", Seat " + strconv.Itoa(p.Number)
}
