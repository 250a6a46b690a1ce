package rehearsal

import (
	"context"
	"net/http"

	"github.com/encore-tickets/encore/money"
)

// bookingTickets is as much of GET /v1/bookings/{id} as a fan handing a
// ticket on reads.
type bookingTickets struct {
	Items []struct {
		SeatID string      `json:"seat_id"`
		Price  money.Money `json:"price"`
	} `json:"items"`
	Tickets []struct {
		ID     string `json:"id"`
		SeatID string `json:"seat_id"`
		Status string `json:"status"`
	} `json:"tickets"`
}

// handOn plays what a paid fan may do with a ticket during the sale:
// transfer it to a friend, who signs in and accepts it, or list it for
// resale at its face value (at the cap when the organiser's is lower),
// for a fan who finds nothing left to buy.
func (f *fan) handOn(ctx context.Context, booking string) {
	rn := f.run
	var b bookingTickets
	if a := rn.edge.api(ctx, f.client, "booking", http.MethodGet, "/v1/bookings/"+booking, f.token, nil); !a.ok() || a.decode(&b) != nil {
		return
	}
	var ticket, seat string
	for _, t := range b.Tickets {
		if t.Status == "VALID" {
			ticket, seat = t.ID, t.SeatID
			break
		}
	}
	if ticket == "" {
		return
	}
	if f.transfer {
		f.give(ctx, ticket)
		return
	}
	var price money.Money
	for _, it := range b.Items {
		if it.SeatID == seat || seat == "" {
			price = it.Price
			break
		}
	}
	if price.Amount <= 0 {
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		a := rn.edge.api(ctx, f.client, "list", http.MethodPost, "/v1/tickets/"+ticket+"/listings", f.token,
			map[string]any{"price": price}, "Idempotency-Key", f.key("list", attempt))
		if a.ok() {
			rn.rec.n.listed.Add(1)
			return
		}
		if a.name() != "price-above-cap" || a.problem.Cap == nil {
			return
		}
		price = *a.problem.Cap
	}
}

// give offers the ticket to the fan's friend, who signs in with the
// address it was sent to and accepts it.
func (f *fan) give(ctx context.Context, ticket string) {
	rn := f.run
	friend := f.user + "_friend"
	a := rn.edge.api(ctx, f.client, "transfer", http.MethodPost, "/v1/tickets/"+ticket+"/transfer", f.token,
		map[string]string{"to_email": friend + "@rehearsal.test"}, "Idempotency-Key", f.key("transfer", 0))
	var x struct {
		TransferID string `json:"transfer_id"`
	}
	if !a.ok() || a.decode(&x) != nil || x.TransferID == "" {
		return
	}
	rn.rec.n.transfersOffered.Add(1)
	token, _ := f.session(ctx, friend)
	if token == "" {
		return
	}
	if a := rn.edge.api(ctx, f.client, "accept", http.MethodPost, "/v1/transfers/"+x.TransferID+"/accept", token, struct{}{},
		"Idempotency-Key", f.key("accept", 0)); a.ok() {
		rn.rec.n.transfersAccepted.Add(1)
	}
}

// holdListing is a fan who found no seats left looking at the resale
// listings: it holds the cheapest one nobody holds, as an ordinary hold
// paid the same way.
func (f *fan) holdListing(ctx context.Context, headers []string) (id string, ok bool) {
	rn := f.run
	var ls struct {
		Listings []struct {
			ID     string `json:"listing_id"`
			Held   bool   `json:"held"`
			Status string `json:"status"`
		} `json:"listings"`
	}
	if a := rn.edge.api(ctx, f.client, "listings", http.MethodGet, "/v1/events/"+rn.event.ID+"/listings", f.token, nil); !a.ok() || a.decode(&ls) != nil {
		return "", false
	}
	for i, l := range ls.Listings {
		if l.Held || l.Status != "ACTIVE" || i >= 3 {
			continue
		}
		a := rn.edge.api(ctx, f.client, "hold", http.MethodPost, "/v1/holds", f.token,
			map[string]any{"event_id": rn.event.ID, "listing_ids": []string{l.ID}},
			append([]string{"Idempotency-Key", f.key("resale-hold", i)}, headers...)...)
		var h struct {
			HoldID string `json:"hold_id"`
		}
		if a.status == http.StatusCreated && a.decode(&h) == nil && h.HoldID != "" {
			rn.rec.n.resaleHolds.Add(1)
			return h.HoldID, true
		}
	}
	return "", false
}

// session signs user in with the demo login, on a device of its own; the
// token is "" when the answer gave none.
func (f *fan) session(ctx context.Context, user string) (string, answer) {
	a := f.run.edge.api(ctx, f.client, "session", http.MethodPost, "/v1/sessions", "", map[string]string{
		"user_id": user, "device_id": "dev-" + user, "email": user + "@rehearsal.test"})
	var s struct {
		Token string `json:"token"`
	}
	if !a.ok() || a.decode(&s) != nil {
		return "", a
	}
	return s.Token, a
}
