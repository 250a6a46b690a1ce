package holds_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/holds"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newService is the hold use case over a fresh event of two seated sections
// and a general-admission one, database only (no hints, no rate limit).
func newService(t *testing.T) (*holds.Service, string) {
	t.Helper()
	pool := testenv.DB(t)
	eventID := "evt_" + testenv.RandomSuffix()
	ev := demo.Event{
		ID: eventID, Title: "Test", VenueID: "ven_test", VenueName: "Test Hall", City: "Testville", Currency: "EUR",
		StartsAt: time.Now().Add(30 * 24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour),
		Sections: []demo.Section{
			{ID: eventID + "_a", Name: "A", Rows: 5, PerRow: 20, BasePrice: 5000},
			{ID: eventID + "_ga", Name: "Floor", General: true, Capacity: 50, BasePrice: 2000},
		},
	}
	require.NoError(t, demo.Create(context.Background(), pool, ev))
	svc := &holds.Service{
		Store: store.New(pool, store.Options{}),
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return svc, eventID
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func TestAReplayedAnswerIsTheFirstAnswersBytes(t *testing.T) {
	t.Parallel()
	svc, eventID := newService(t)
	ctx := context.Background()
	cases := []struct {
		name string
		cart holds.Cart
	}{
		{"named seats", holds.Cart{EventID: eventID, SeatIDs: []string{demo.SeatID(eventID+"_a", 0, 1), demo.SeatID(eventID+"_a", 0, 2)}}},
		{"adjacent best available", holds.Cart{EventID: eventID, SectionID: eventID + "_a", Quantity: 3, Adjacent: true}},
		{"general admission", holds.Cart{EventID: eventID, SectionID: eventID + "_ga", Quantity: 2}},
	}
	// Serial: the carts share the event's seats, and best available must
	// not take the named seats before they are held.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			who := session.Identity{UserID: "fan-" + testenv.RandomSuffix()}
			first, err := svc.Hold(ctx, who, tc.cart, "key", hash(tc.name), "")
			require.NoError(t, err)
			require.False(t, first.Replayed)
			again, err := svc.Hold(ctx, who, tc.cart, "key", hash(tc.name), "")
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, string(first.Body), string(again.Body))
		})
	}
}

func TestAHoldCommittedButNeverAnsweredIsRenderedFromTheReservationOnReplay(t *testing.T) {
	t.Parallel()
	svc, eventID := newService(t)
	ctx := context.Background()
	cases := []struct {
		name  string
		after func(t *testing.T, h store.Hold, who session.Identity)
	}{
		{"while it is pending", func(*testing.T, store.Hold, session.Identity) {}},
		{"after the fan released it", func(t *testing.T, h store.Hold, who session.Identity) {
			released, err := svc.Release(ctx, who, h.ID)
			require.NoError(t, err)
			require.True(t, released)
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			who := session.Identity{UserID: "fan-" + testenv.RandomSuffix()}
			cart := holds.Cart{EventID: eventID, SeatIDs: []string{demo.SeatID(eventID+"_a", 4, 1+2*i), demo.SeatID(eventID+"_a", 4, 2+2*i)}}
			// A key record without its answer's bytes, as holds committed
			// before answers were kept in the hold's transaction left it.
			committed, stored, err := svc.Store.Holds.CreateHold(ctx, store.HoldRequest{
				ReservationID: uuid.New(), UserID: who.UserID, EventID: eventID, SeatIDs: cart.SeatIDs,
				IdempotencyKey: "crash", RequestHash: hash(tc.name),
			})
			require.NoError(t, err)
			require.Nil(t, stored)
			want, err := holds.Encode(committed)
			require.NoError(t, err)
			tc.after(t, committed, who)

			replay, err := svc.Hold(ctx, who, cart, "crash", hash(tc.name), "")
			require.NoError(t, err)
			require.True(t, replay.Replayed)
			require.Equal(t, string(want), string(replay.Body), "the answer the fan would have had")

			again, err := svc.Hold(ctx, who, cart, "crash", hash(tc.name), "")
			require.NoError(t, err)
			require.Equal(t, string(want), string(again.Body), "every replay renders the same bytes")
		})
	}
}

func TestAHoldsAnswerCommitsWithTheHoldOrNotAtAll(t *testing.T) {
	t.Parallel()
	svc, eventID := newService(t)
	ctx := context.Background()
	who := session.Identity{UserID: "fan-" + testenv.RandomSuffix()}
	cart := holds.Cart{EventID: eventID, SeatIDs: []string{demo.SeatID(eventID+"_a", 3, 1)}}
	first, err := svc.Hold(ctx, who, cart, "once", hash("once"), "")
	require.NoError(t, err)
	kept, err := svc.Store.Holds.LookupIdempotent(ctx, who.UserID, "once", hash("once"))
	require.NoError(t, err)
	require.Equal(t, string(first.Body), string(kept.Body), "the key's record holds the bytes the fan was answered")

	// An answer that cannot be made rolls the hold back with it: no seat
	// is taken and no key is recorded.
	seat := demo.SeatID(eventID+"_a", 3, 2)
	other := "fan-" + testenv.RandomSuffix()
	_, _, err = svc.Store.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: other,
		EventID: eventID, SeatIDs: []string{seat}, IdempotencyKey: "broken", RequestHash: hash("broken"),
		Render: func(store.Hold) ([]byte, error) { return nil, errors.New("cannot render") }})
	require.ErrorContains(t, err, "cannot render")
	none, err := svc.Store.Holds.LookupIdempotent(ctx, other, "broken", hash("broken"))
	require.NoError(t, err)
	require.Nil(t, none, "no key record without its answer")
	again, err := svc.Hold(ctx, session.Identity{UserID: "fan-" + testenv.RandomSuffix()},
		holds.Cart{EventID: eventID, SeatIDs: []string{seat}}, "", nil, "")
	require.NoError(t, err, "the seat was never taken")
	require.Equal(t, []string{seat}, []string{again.Hold.Items[0].SeatID})
}

func TestAHoldRecordsTheEmailOfTheFansTokenAndNothingWhenItHasNone(t *testing.T) {
	t.Parallel()
	svc, eventID := newService(t)
	ctx := context.Background()
	for i, email := range []string{"asha@example.com", ""} {
		who := session.Identity{UserID: "fan-" + testenv.RandomSuffix(), Email: email}
		a, err := svc.Hold(ctx, who, holds.Cart{EventID: eventID, SeatIDs: []string{demo.SeatID(eventID+"_a", 1, i+1)}}, "", nil, "")
		require.NoError(t, err)
		got, err := svc.Store.Bookings.FanEmail(ctx, a.Hold.ID)
		require.NoError(t, err)
		require.Equal(t, email, got)
		require.NotContains(t, string(a.Body), "example.com", "the email is not part of the hold's answer")
	}
}
