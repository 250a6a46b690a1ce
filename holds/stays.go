package holds

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// holdStays places a hotel-only hold: the account's rate limit, the stored
// answer of the same Idempotency-Key, then the one transaction
// (store.CreateStayHold) that takes every night of every stay or none. No
// event means no event limits, admission or seat hints: rooms are counted
// inventory that only the database decides. The account's own limits are
// the database's too, under a lock on the account: one unpaid hold per
// property and night (a second is refused naming the first, as a second
// seat hold of one event is; a retry with the same Idempotency-Key gets the
// first answer back instead), and at most MaxUnpaidRoomNights room-nights
// unpaid.
func (s *Service) holdStays(ctx context.Context, who session.Identity, cart Cart, idemKey string, reqHash []byte) (Answer, error) {
	return s.holdAlone(ctx, who, idemKey, reqHash, nil, func(id uuid.UUID, render func(store.Hold) ([]byte, error)) (store.Hold, *store.StoredResponse, error) {
		return s.Store.Hotels.CreateStayHold(ctx, store.HoldRequest{ReservationID: id, UserID: who.UserID,
			Stays: cart.Stays, MaxUnpaidRoomNights: s.MaxUnpaidRoomNights, FanEmail: who.Email,
			IdempotencyKey: idemKey, RequestHash: reqHash, Render: render})
	})
}

// holdAlone places a hold that the database alone decides (no event
// limits, admission or seat hints): the account's rate limit, the stored
// answer of the same Idempotency-Key, any check before the transaction,
// then create (the one transaction, given the reservation ID and the
// renderer of its answer), retried with a fresh ID when the key's derived
// one was taken by a forgotten hold.
func (s *Service) holdAlone(ctx context.Context, who session.Identity, idemKey string, reqHash []byte, check func() error,
	create func(uuid.UUID, func(store.Hold) ([]byte, error)) (store.Hold, *store.StoredResponse, error)) (Answer, error) {
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
	if check != nil {
		if err := check(); err != nil {
			return Answer{}, err
		}
	}
	var r renderer
	hold, stored, err := create(reservationID(who.UserID, idemKey), r.render)
	if errors.Is(err, store.ErrReservationIDTaken) {
		hold, stored, err = create(uuid.New(), r.render)
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
