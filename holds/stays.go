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
	req := store.HoldRequest{ReservationID: reservationID(who.UserID, idemKey), UserID: who.UserID,
		Stays: cart.Stays, MaxUnpaidRoomNights: s.MaxUnpaidRoomNights, FanEmail: who.Email,
		IdempotencyKey: idemKey, RequestHash: reqHash}
	var r renderer
	req.Render = r.render
	hold, stored, err := s.Store.Hotels.CreateStayHold(ctx, req)
	if errors.Is(err, store.ErrReservationIDTaken) {
		req.ReservationID = uuid.New()
		hold, stored, err = s.Store.Hotels.CreateStayHold(ctx, req)
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
