package tickets

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
)

// DefaultWaitlistFirst is how long a fan on an event's waitlist has a new
// resale listing before anyone else.
const DefaultWaitlistFirst = 10 * time.Minute

// Resale lists fans' tickets for resale under the organiser's cap and
// withdraws them. Buying a listing is an ordinary hold (holds.Cart's
// ListingIDs) checked out through the booking saga, which moves the ticket
// and pays the seller.
type Resale struct {
	Store  *store.Store
	Mailer notify.Mailer // nil: no emails
	Limits store.ResaleLimits
	// WaitlistFirst is how long a waitlisted fan has a new listing first
	// (0: DefaultWaitlistFirst; negative: no first offer).
	WaitlistFirst time.Duration
	// PublicURL is the base of links in the emails ("" leaves them out).
	PublicURL string
	Log       *slog.Logger
}

// List offers seller's ticket at price. The listing's fee and payout
// follow from the event's policy; a price above its cap is a
// *store.PriceAboveCapError naming the cap.
func (r *Resale) List(ctx context.Context, seller, email, ticketID string, price money.Money) (store.Listing, error) {
	if !ValidID(ticketID) {
		return store.Listing{}, store.ErrNotFound
	}
	first := r.WaitlistFirst
	if first == 0 {
		first = DefaultWaitlistFirst
	}
	l, err := r.Store.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: ticketID, Seller: seller, Email: email,
		Price: price, Limits: r.Limits, WaitlistFirst: max(first, 0)})
	if err != nil {
		return l, err
	}
	if l.OfferedEmail != "" && l.OfferedUntil != nil {
		r.mail(ctx, notify.Message{To: l.OfferedEmail, Key: "listing-" + l.ID.String() + "-first-offer",
			Subject: "A ticket you are waiting for is on resale",
			Body: fmt.Sprintf("A fan is reselling a ticket for an event whose waitlist you are on: %s, %s. It is yours to buy first until %s:\n%s\n",
				l.Place.Section, money.Format(l.Price), l.OfferedUntil.UTC().Format("Mon 2 Jan 2006 15:04 MST"),
				r.link("#/event/"+l.EventID+"/resale"))})
	}
	return l, nil
}

// Withdraw takes seller's listing off sale; the ticket is valid again.
func (r *Resale) Withdraw(ctx context.Context, seller string, id uuid.UUID) (store.Listing, error) {
	return r.Store.Resale.WithdrawListing(ctx, id, seller)
}

// ForEvent lists the event's listings a buyer may hold now.
func (r *Resale) ForEvent(ctx context.Context, eventID string) ([]store.Listing, error) {
	return r.Store.Resale.EventListings(ctx, eventID)
}

// Of lists seller's listings with their payouts.
func (r *Resale) Of(ctx context.Context, seller string) ([]store.Listing, error) {
	return r.Store.Resale.ListingsOf(ctx, seller)
}

func (r *Resale) link(fragment string) string { return appLink(r.PublicURL, fragment) }

// mail queues m; a failure is logged: the listing stands.
func (r *Resale) mail(ctx context.Context, m notify.Message) {
	queueMail(ctx, r.Mailer, r.Log, "resale", m)
}
