package organiser

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/encore-tickets/encore/internal/csvsafe"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// Orders is GET /v1/admin/events/{id}/orders: the event's bookings that
// match the search, newest first, and the summary over all of them (what
// a cancellation would refund and revoke, whatever the search).
type Orders struct {
	EventID  string              `json:"event_id"`
	Query    string              `json:"q"`
	Status   string              `json:"status"`
	Summary  store.OrdersSummary `json:"summary"`
	Orders   []store.EventOrder  `json:"orders"`
	Matching int                 `json:"matching"`
}

// OrderStatuses are the statuses ?status= may name.
var OrderStatuses = []string{"PENDING_PAYMENT", "PAID", "EXPIRED", "CANCELLED"}

// Orders reads the event's orders for the scope's organisation. q finds an
// order by its buyer's e-mail, its booking ID (or the start of it) or a
// seat's label ("Row B, Seat 6"), case-insensitively; status keeps one
// status. Without a status, lapsed holds (EXPIRED) are left out: they never
// were orders.
func (s *Service) Orders(ctx context.Context, scope venues.Scope, eventID, q, status string) (Orders, error) {
	if err := scope.Check(); err != nil {
		return Orders{}, err
	}
	list, sum, err := s.store.Bookings.EventOrders(ctx, eventID, scope.Filter())
	if err != nil {
		return Orders{}, err
	}
	out := Orders{EventID: eventID, Query: q, Status: status, Summary: sum, Orders: []store.EventOrder{}}
	needle := strings.ToLower(strings.TrimSpace(q))
	for _, o := range list {
		for i := range o.Items {
			o.Items[i].Label = venues.Label(o.Items[i].Place)
		}
		if status == "" && o.Status == "EXPIRED" || status != "" && o.Status != status {
			continue
		}
		if needle != "" && !orderMatches(o, needle) {
			continue
		}
		out.Orders = append(out.Orders, o)
	}
	out.Matching = len(out.Orders)
	return out, nil
}

// orderMatches says whether needle (lower case) is in the order's e-mail
// or one of its labels, or starts its booking ID.
func orderMatches(o store.EventOrder, needle string) bool {
	if strings.Contains(strings.ToLower(o.Email), needle) || strings.HasPrefix(o.BookingID.String(), needle) {
		return true
	}
	for _, it := range o.Items {
		if strings.Contains(strings.ToLower(it.Label), needle) {
			return true
		}
	}
	return false
}

// WriteCSV writes the orders as CSV, one line an order, its places joined
// by "; ". Every text cell goes through csvsafe: an e-mail or a section
// name that looks like a formula stays text in the organiser's
// spreadsheet; the amounts are the program's own numbers (minor units).
func (o Orders) WriteCSV(w io.Writer) error {
	cw := csvsafe.NewWriter(w)
	_ = cw.Header("booking_id", "email", "status", "payment_status", "places", "tickets", "total_minor", "currency", "created_at", "paid_at")
	for _, b := range o.Orders {
		labels := make([]string, 0, len(b.Items))
		n := 0
		for _, it := range b.Items {
			l := it.Label
			if it.Quantity > 1 {
				l += " × " + strconv.Itoa(it.Quantity)
			}
			labels = append(labels, l)
			n += it.Quantity
		}
		paid := ""
		if b.PaidAt != nil {
			paid = b.PaidAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		_ = cw.Write(csvsafe.Text(b.BookingID.String()), csvsafe.Text(b.Email), csvsafe.Text(b.Status), csvsafe.Text(b.PaymentStatus),
			csvsafe.Text(strings.Join(labels, "; ")), csvsafe.Int(n), csvsafe.Int(b.Total), csvsafe.Text(b.Currency),
			csvsafe.Text(b.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")), csvsafe.Text(paid))
	}
	return cw.Flush()
}
