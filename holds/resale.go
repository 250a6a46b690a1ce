package holds

import (
	"context"
	"errors"

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
	if err := s.allow(ctx, who); err != nil {
		return Answer{}, err
	}
	if idemKey != "" {
		prev, err := s.Store.Holds.LookupIdempotent(ctx, who.UserID, idemKey, reqHash)
		if err != nil {
			return Answer{}, err
		}
		if prev != nil {
			return s.replay(ctx, who, prev)
		}
	}
	if err := s.SalesOpen(cart.EventID); err != nil {
		return Answer{}, err
	}
	ids := make([]uuid.UUID, len(cart.ListingIDs))
	for i, id := range cart.ListingIDs {
		var err error
		if ids[i], err = uuid.Parse(id); err != nil {
			return Answer{}, &store.InvalidError{Field: "listing_ids", Message: "not a listing ID: " + id}
		}
	}
	req := store.ResaleHoldRequest{ReservationID: reservationID(who.UserID, idemKey), UserID: who.UserID, FanEmail: who.Email,
		EventID: cart.EventID, ListingIDs: ids, IdempotencyKey: idemKey, RequestHash: reqHash}
	var r renderer
	req.Render = r.render
	hold, stored, err := s.Store.Holds.CreateResaleHold(ctx, req)
	if errors.Is(err, store.ErrReservationIDTaken) {
		req.ReservationID = uuid.New()
		hold, stored, err = s.Store.Holds.CreateResaleHold(ctx, req)
	}
	if err != nil {
		return Answer{}, err
	}
	if stored != nil {
		return s.replay(ctx, who, stored)
	}
	body, err := r.answer(hold)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Hold: hold, Body: body}, nil
}
