package activities

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Holds end holds on the saga's behalf through the holds service,
// which also gives the seats' hints back; every exported method is an
// activity.
type Holds struct {
	Service *holds.Service
}

// ExpireHold ends a hold whose expiry timer fired and returns the status the
// reservation ended in. A hold already ended (paid, released, or swept) is
// not an error: the reservation row decides, and its status is returned.
func (a *Holds) ExpireHold(ctx context.Context, reservationID string) (vocab.BookingStatus, error) {
	return a.end(ctx, reservationID, a.Service.Expire)
}

// ReleaseHold ends a hold at the fan's request.
func (a *Holds) ReleaseHold(ctx context.Context, reservationID string) (vocab.BookingStatus, error) {
	return a.end(ctx, reservationID, a.Service.Cancel)
}

func (a *Holds) end(ctx context.Context, reservationID string, fn func(context.Context, uuid.UUID) error) (vocab.BookingStatus, error) {
	id, err := uuid.Parse(reservationID)
	if err != nil {
		return "", temporal.NewNonRetryableApplicationError("bad reservation ID", ErrTypeInvalidID, err)
	}
	err = fn(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotPending) {
		return "", err
	}
	h, err := a.Service.Get(ctx, id, "")
	if err != nil {
		return "", err
	}
	return vocab.BookingStatus(h.Status), nil
}
