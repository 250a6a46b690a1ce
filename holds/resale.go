package holds

import (
	"context"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// holdListings places a resale hold: the operator's pause, the account's
// rate limit, the stored answer of the same Idempotency-Key, then the one
// transaction (store.CreateResaleHold) that holds every listing of the cart
// or none. Listings are few and each is locked by its row, so neither the
// waiting room nor seat hints stand in front of it; the buyer's pending
// checkout and purchase limit are the database's, as for seats.
func (s *Service) holdListings(ctx context.Context, who session.Identity, cart Cart, idemKey string, reqHash []byte) (Answer, error) {
	ids := make([]uuid.UUID, len(cart.ListingIDs))
	for i, id := range cart.ListingIDs {
		var err error
		if ids[i], err = uuid.Parse(id); err != nil {
			return Answer{}, &store.InvalidError{Field: "listing_ids", Message: "not a listing ID: " + id}
		}
	}
	return s.holdAlone(ctx, who, idemKey, reqHash, func() error { return s.SalesOpen(cart.EventID) },
		func(id uuid.UUID, render func(store.Hold) ([]byte, error)) (store.Hold, *store.StoredResponse, error) {
			return s.Store.Holds.CreateResaleHold(ctx, store.ResaleHoldRequest{ReservationID: id, UserID: who.UserID, FanEmail: who.Email,
				EventID: cart.EventID, ListingIDs: ids, IdempotencyKey: idemKey, RequestHash: reqHash, Render: render})
		})
}
