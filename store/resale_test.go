package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// resaleEvent is a ticket event whose organiser allows resale at up to
// 120 % of face value with a 5 % fee, and one of whose seats its seller
// owns a ticket for.
type resaleEvent struct {
	ticketEvent
	seller string
	ticket store.TicketRow
}

func newResaleEvent(t *testing.T) resaleEvent {
	t.Helper()
	e := newTicketEvent(t)
	_, err := e.st.Pool().Exec(context.Background(), `UPDATE events SET resale_enabled = true, resale_max_price_bp = 12000,
		resale_fee_bp = 500, resale_closes_minutes = 60 WHERE id = $1`, e.ev)
	require.NoError(t, err)
	seller := "seller_" + e.ev
	row := e.ticket(e.sold(seller, 1), seller, 1)
	require.NoError(t, e.st.Tickets.InsertTickets(context.Background(), []store.TicketRow{row}))
	return resaleEvent{ticketEvent: e, seller: seller, ticket: row}
}

// list lists the seller's ticket at price (EUR minor units).
func (e resaleEvent) list(price int64) store.Listing {
	e.t.Helper()
	l, err := e.st.Resale.CreateListing(context.Background(), store.NewListing{ID: uuid.New(), TicketID: e.ticket.ID, Seller: e.seller,
		Email: "seller@example.com", Price: money.Money{Amount: price, Currency: "EUR"}})
	require.NoError(e.t, err)
	return l
}

// holdListing places buyer's resale hold on listing.
func (e resaleEvent) holdListing(buyer string, listing uuid.UUID) (store.Hold, error) {
	h, _, err := e.st.Holds.CreateResaleHold(context.Background(), store.ResaleHoldRequest{ReservationID: uuid.New(), UserID: buyer,
		EventID: e.ev, ListingIDs: []uuid.UUID{listing}})
	return h, err
}

func (e resaleEvent) ticketStatus(id string) vocab.TicketStatus {
	e.t.Helper()
	var s vocab.TicketStatus
	require.NoError(e.t, e.st.Pool().QueryRow(context.Background(), `SELECT status FROM tickets WHERE id = $1`, id).Scan(&s))
	return s
}

func (e resaleEvent) audit() store.AuditReport {
	e.t.Helper()
	r, err := e.st.Holds.Audit(context.Background(), e.ev, time.Minute)
	require.NoError(e.t, err)
	return r
}

func TestAListingAboveTheOrganisersCapIsRefusedNamingTheCap(t *testing.T) {
	t.Parallel()
	e := newResaleEvent(t)
	_, err := e.st.Resale.CreateListing(context.Background(), store.NewListing{ID: uuid.New(), TicketID: e.ticket.ID, Seller: e.seller,
		Price: money.Money{Amount: 1201, Currency: "EUR"}})
	var capErr *store.PriceAboveCapError
	require.ErrorAs(t, err, &capErr)
	require.Equal(t, money.Money{Amount: 1200, Currency: "EUR"}, capErr.Cap, "120 % of the 10.00 the seller paid")
	require.Equal(t, vocab.TicketValid, e.ticketStatus(e.ticket.ID), "a refused listing changes nothing")

	l := e.list(1200)
	require.Equal(t, vocab.ListingActive, l.Status)
	require.Equal(t, int64(60), l.Fee.Amount, "5 % of 12.00")
	require.Equal(t, int64(1140), l.Payout.Amount.Amount)
	require.Equal(t, vocab.TicketListed, e.ticketStatus(e.ticket.ID), "a listed ticket opens no door")
}

func TestAListedTicketCannotBeSentOrListedTwiceAndComesBackValidWhenWithdrawn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newResaleEvent(t)
	l := e.list(1000)
	_, err := e.st.Tickets.CreateTransfer(ctx, uuid.New(), e.ticket.ID, e.seller, "", "friend@example.com", time.Now().Add(time.Hour), store.TransferLimits{})
	require.ErrorIs(t, err, store.ErrTicketNotTransferable)
	_, err = e.st.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: e.ticket.ID, Seller: e.seller, Price: money.Money{Amount: 900}})
	require.ErrorIs(t, err, store.ErrTicketNotListable)
	moved, err := e.st.Tickets.Transferred(ctx, e.ticket.ReservationID)
	require.NoError(t, err)
	require.True(t, moved, "a booking with a listed ticket cannot be cancelled for a refund")

	_, err = e.st.Resale.WithdrawListing(ctx, l.ID, "someone_else")
	require.ErrorIs(t, err, store.ErrNotFound)
	w, err := e.st.Resale.WithdrawListing(ctx, l.ID, e.seller)
	require.NoError(t, err)
	require.Equal(t, vocab.ListingWithdrawn, w.Status)
	require.Equal(t, vocab.TicketValid, e.ticketStatus(e.ticket.ID))
	_, err = e.st.Resale.WithdrawListing(ctx, l.ID, e.seller)
	require.ErrorIs(t, err, store.ErrListingNotActive)
}

// TestBuyersRacingForOneListingWhileItsSellerWithdrawsItGetOneHold: ten
// buyers hold one listing while its seller withdraws it, five rounds: one
// of them wins (a hold, or the withdrawal), and the audit finds no listing
// with two buyers. A seller cannot withdraw a listing a buyer holds.
func TestBuyersRacingForOneListingWhileItsSellerWithdrawsItGetOneHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 5 {
		e := newResaleEvent(t)
		l := e.list(1100)
		held, withdrawn := raceTen(t, func(i int) error {
			_, err := e.holdListing("buyer_"+e.ev+"_"+string(rune('a'+i)), l.ID)
			return err
		}, func() error {
			_, err := e.st.Resale.WithdrawListing(ctx, l.ID, e.seller)
			return err
		}, func(err error) bool {
			var lu *store.ListingUnavailableError
			return errors.As(err, &lu) || errors.Is(err, store.ErrListingHeld)
		})
		require.Equal(t, 1, held+withdrawn, "round %d: one hold or the withdrawal", round)
		require.Zero(t, e.audit().ListingsSoldTwice)
		if held == 1 {
			require.Equal(t, vocab.TicketListed, e.ticketStatus(e.ticket.ID))
		} else {
			require.Equal(t, vocab.TicketValid, e.ticketStatus(e.ticket.ID))
		}
	}
}

// TestASoldListingMovesTheTicketAndBalancesItsMoney: a buyer's hold on a
// listing is sold: the listing SOLD, the seller's ticket TRANSFERRED, the
// buyer holds a new ticket in their own booking, the payout recorded
// (refunded plus owed plus fee is the price), and the audit is clean. A
// retried issue adds nothing.
func TestASoldListingMovesTheTicketAndBalancesItsMoney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newResaleEvent(t)
	l := e.list(1200)
	buyer := "buyer_" + e.ev
	_, err := e.holdListing(e.seller, l.ID)
	var lu *store.ListingUnavailableError
	require.ErrorAs(t, err, &lu, "nobody buys their own listing")
	h, err := e.holdListing(buyer, l.ID)
	require.NoError(t, err)
	require.Equal(t, money.Money{Amount: 1200, Currency: "EUR"}, h.Total)
	require.Equal(t, l.ID.String(), h.Items[0].ListingID)
	_, err = e.st.Resale.WithdrawListing(ctx, l.ID, e.seller)
	require.ErrorIs(t, err, store.ErrListingHeld, "the seller cannot withdraw a listing a buyer holds")

	info, err := e.st.Bookings.LoadBooking(ctx, h.ID)
	require.NoError(t, err)
	require.True(t, info.Resale)
	require.False(t, info.CancelBy.After(time.Now()), "a resale purchase is final")

	ok, err := e.st.Bookings.ConfirmSale(ctx, h.ID)
	require.NoError(t, err)
	require.True(t, ok)
	fresh := []store.ResoldTicket{{ID: "tkt_" + uuid.NewString(), SecretSealed: []byte("new-sealed")}}
	ids, err := e.st.Resale.IssueResold(ctx, h.ID, fresh)
	require.NoError(t, err)
	require.Equal(t, []string{fresh[0].ID}, ids)
	again, err := e.st.Resale.IssueResold(ctx, h.ID, []store.ResoldTicket{{ID: "tkt_" + uuid.NewString(), SecretSealed: []byte("x")}})
	require.NoError(t, err)
	require.Equal(t, ids, again, "a retried issue keeps the moved ticket")
	require.Equal(t, vocab.TicketTransferred, e.ticketStatus(e.ticket.ID))
	mine, err := e.st.Tickets.GetTicket(ctx, ids[0], buyer)
	require.NoError(t, err)
	require.Equal(t, vocab.TicketValid, mine.Status)
	require.Equal(t, h.ID, mine.ReservationID, "the new ticket is in the buyer's booking")
	settled, err := e.st.Holds.Settle(ctx, e.ev, time.Minute)
	require.NoError(t, err)
	require.Zero(t, settled.BookingsMissingTickets, "the seller's booking issued its ticket, now resold; the buyer's has the new one")

	due, err := e.st.Resale.PayoutsDue(ctx, h.ID)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, int64(1140), due[0].Amount.Amount)
	require.Empty(t, due[0].IntentID, "the test's sale has no captured payment: all of it will be owed")
	require.NoError(t, e.st.Resale.RecordPayout(ctx, l.ID, 0, 1140, ""))
	require.NoError(t, e.st.Resale.RecordPayout(ctx, l.ID, 1140, 0, "re_x"), "a retried record changes nothing")
	mineNow, err := e.st.Resale.ListingsOf(ctx, e.seller)
	require.NoError(t, err)
	require.Equal(t, vocab.ListingSold, mineNow[0].Status)
	require.Equal(t, vocab.PayoutOwed, mineNow[0].Payout.Status)
	require.Equal(t, int64(1140), mineNow[0].Payout.Owed)
	r := e.audit()
	require.Zero(t, r.Violations(), r.String())

	// The audit sees money that does not balance.
	_, err = e.st.Pool().Exec(ctx, `UPDATE reservation_items SET price_at_lock = 1100 WHERE reservation_id = $1`, h.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), e.audit().ResaleMoneyUnbalanced)
}

// TestAListingWhoseResaleClosedExpiresAndItsTicketComesBack: the sweeper
// ends an unheld listing past its closing time and the ticket is valid
// again; buyers cannot hold it.
func TestAListingWhoseResaleClosedExpiresAndItsTicketComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newResaleEvent(t)
	l := e.list(1000)
	_, err := e.st.Pool().Exec(ctx, `UPDATE resale_listings SET closes_at = now() - interval '1 second' WHERE id = $1`, l.ID)
	require.NoError(t, err)
	_, err = e.holdListing("buyer_"+e.ev, l.ID)
	var lu *store.ListingUnavailableError
	require.ErrorAs(t, err, &lu)
	for {
		n, err := e.st.Resale.ExpireListings(ctx, 100)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Equal(t, vocab.TicketValid, e.ticketStatus(e.ticket.ID))
	ls, err := e.st.Resale.ListingsOf(ctx, e.seller)
	require.NoError(t, err)
	require.Equal(t, vocab.ListingExpired, ls[0].Status)
}

// TestANewListingGoesFirstToTheFanWaitingLongest: a fan on the event's
// waitlist has a new listing first, for the window; anyone else's hold is
// refused naming when the offer ends; the waiting fan may hold it. A
// second listing goes to the next waiting fan, not the same one again.
func TestANewListingGoesFirstToTheFanWaitingLongest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newResaleEvent(t)
	first, second := "wait1_"+e.ev, "wait2_"+e.ev
	for _, u := range []string{first, second} {
		_, _, err := e.st.Waitlists.JoinWaitlist(ctx, store.WaitlistJoin{EventID: e.ev, UserID: u, Email: u + "@example.com", Quantity: 1})
		require.NoError(t, err)
	}
	l, err := e.st.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: e.ticket.ID, Seller: e.seller,
		Price: money.Money{Amount: 1000}, WaitlistFirst: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, first, l.OfferedTo)
	require.Equal(t, first+"@example.com", l.OfferedEmail)
	_, err = e.holdListing("buyer_"+e.ev, l.ID)
	var lu *store.ListingUnavailableError
	require.ErrorAs(t, err, &lu)
	require.Contains(t, lu.Detail, "offered first to a fan on the waitlist until")

	// Another seller's listing goes to the next fan in line.
	other := "seller2_" + e.ev
	row := e.ticketEvent.ticket(e.sold(other, 2), other, 2)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{row}))
	l2, err := e.st.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: row.ID, Seller: other,
		Price: money.Money{Amount: 1000}, WaitlistFirst: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, second, l2.OfferedTo)

	_, err = e.holdListing(first, l.ID)
	require.NoError(t, err, "the fan it is offered to may hold it")
}

// TestEveryManifestDuringAResaleAdmitsOneHolderOfTheSeat: gates admit
// whom their manifest lists valid. While a ticket is listed, held, sold
// and moved to its buyer, exports taken concurrently (each one snapshot,
// as a gate's manifest is) list exactly one ticket of the seat, and at
// most one of them valid: never the seller's and the buyer's at once.
func TestEveryManifestDuringAResaleAdmitsOneHolderOfTheSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 3 {
		e := newResaleEvent(t)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		exports := 0
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					snap, err := e.st.Tickets.ManifestTickets(ctx, e.ev, time.Time{})
					if err != nil {
						t.Error(err)
						return
					}
					usable, valid := 0, 0
					for _, tk := range snap.Valid {
						if tk.SeatID != e.seat(1) {
							continue
						}
						switch tk.Status {
						case vocab.TicketValid:
							usable++
							valid++
						case vocab.TicketListed:
							usable++
						}
					}
					mu.Lock()
					exports++
					mu.Unlock()
					if usable != 1 || valid > 1 {
						t.Errorf("round %d: a manifest lists %d tickets of the seat as the holder's, %d valid", round, usable, valid)
						return
					}
				}
			}()
		}
		l := e.list(1000)
		h, err := e.holdListing("buyer_"+e.ev, l.ID)
		require.NoError(t, err)
		ok, err := e.st.Bookings.ConfirmSale(ctx, h.ID)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = e.st.Resale.IssueResold(ctx, h.ID, []store.ResoldTicket{{ID: "tkt_" + uuid.NewString(), SecretSealed: []byte("s")}})
		require.NoError(t, err)
		// Let the exporters see the end state too.
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return exports > 10 }, 10*time.Second, 5*time.Millisecond)
		close(stop)
		wg.Wait()
		require.Zero(t, e.audit().PlacesWithTwoHolders)
	}
}

func TestListingLimitsStopTouting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limits store.ResaleLimits
		setup  func(t *testing.T, e resaleEvent)
	}{
		{"a ticket listed as often as allowed", store.ResaleLimits{PerTicket: 1}, func(t *testing.T, e resaleEvent) {
			l := e.list(1000)
			_, err := e.st.Resale.WithdrawListing(ctx, l.ID, e.seller)
			require.NoError(t, err)
		}},
		{"a seat that changed hands as often as allowed", store.ResaleLimits{Hands: 1}, func(t *testing.T, e resaleEvent) {
			_, err := e.st.Pool().Exec(ctx, `UPDATE tickets SET holder_seq = 1 WHERE id = $1`, e.ticket.ID)
			require.NoError(t, err)
		}},
		{"a fan with as many open listings as allowed", store.ResaleLimits{ActivePerFan: 1}, func(t *testing.T, e resaleEvent) {
			row := e.ticketEvent.ticket(e.sold(e.seller, 2), e.seller, 2)
			require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{row}))
			_, err := e.st.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: row.ID, Seller: e.seller, Price: money.Money{Amount: 900}})
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newResaleEvent(t)
			tc.setup(t, e)
			_, err := e.st.Resale.CreateListing(ctx, store.NewListing{ID: uuid.New(), TicketID: e.ticket.ID, Seller: e.seller,
				Price: money.Money{Amount: 900}, Limits: tc.limits})
			require.ErrorIs(t, err, store.ErrResaleLimit)
		})
	}
}
