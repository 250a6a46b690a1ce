package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// TestRecipientsRacingToAcceptOneTransferWhileTheSenderCancelsLeaveOneValidHolder:
// ten sessions of the recipient accept one transfer while the sender
// cancels it, and the seat's tickets are audited: at most one acceptance
// (or the cancellation) wins, and at every end exactly one ticket of the
// place is valid, its holder the one the transfer says.
func TestRecipientsRacingToAcceptOneTransferWhileTheSenderCancelsLeaveOneValidHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 5 {
		e := newTicketEvent(t)
		alice, bob := "alice_"+e.ev, "bob_"+e.ev // the package's tests share one database
		booking := e.sold(alice, 1)
		row := e.ticket(booking, alice, 1)
		require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{row}))
		tr, err := e.st.Tickets.CreateTransfer(ctx, uuid.New(), row.ID, alice, "alice@example.com", "bob@example.com",
			time.Now().Add(time.Hour), store.TransferLimits{})
		require.NoError(t, err)
		_, err = e.st.Tickets.CreateTransfer(ctx, uuid.New(), row.ID, alice, "", "carol@example.com", time.Now().Add(time.Hour), store.TransferLimits{})
		require.ErrorIs(t, err, store.ErrTicketNotTransferable, "one offer of a ticket at a time")

		accepted, cancelled := raceTen(t, func(int) error {
			_, _, err := e.st.Tickets.AcceptTransfer(ctx, tr.ID, bob, "Bob@Example.com",
				store.TicketRow{ID: "tkt_" + uuid.NewString(), UserID: bob, SecretSealed: []byte("sealed")})
			return err
		}, func() error {
			_, err := e.st.Tickets.CancelTransfer(ctx, tr.ID, alice)
			return err
		}, func(err error) bool { return errors.Is(err, store.ErrTransferNotPending) })
		require.Equal(t, 1, accepted+cancelled, "round %d: one ending wins", round)

		var valid, transferred int
		var holder string
		require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'VALID'), count(*) FILTER (WHERE status = 'TRANSFERRED'),
			coalesce(max(user_id) FILTER (WHERE status = 'VALID'), '') FROM tickets WHERE seat_id = $1`, e.seat(1)).Scan(&valid, &transferred, &holder))
		require.Equal(t, 1, valid, "round %d: exactly one valid holder of the seat", round)
		if accepted == 1 {
			require.Equal(t, bob, holder)
			require.Equal(t, 1, transferred)
		} else {
			require.Equal(t, alice, holder)
			require.Equal(t, 0, transferred)
		}
	}
}

// TestATransferIsRefusedForAnotherAddressARevokedTicketAndPastTheLimits:
// the wrong recipient, a ticket refunded while offered, the per-ticket
// limit of hands and the open offers per fan.
func TestATransferIsRefusedForAnotherAddressARevokedTicketAndPastTheLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTicketEvent(t)
	alice, bob, dave := "alice_"+e.ev, "bob_"+e.ev, "dave_"+e.ev // the package's tests share one database
	booking := e.sold(alice, 1)
	row := e.ticket(booking, alice, 1)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{row}))
	offer := func(ticket, from, to string, lim store.TransferLimits) (store.Transfer, error) {
		return e.st.Tickets.CreateTransfer(ctx, uuid.New(), ticket, from, "", to, time.Now().Add(time.Hour), lim)
	}
	_, err := offer(row.ID, "mallory_"+e.ev, "m@example.com", store.TransferLimits{})
	require.ErrorIs(t, err, store.ErrNotFound, "another fan's ticket")

	tr, err := offer(row.ID, alice, "bob@example.com", store.TransferLimits{})
	require.NoError(t, err)
	_, _, err = e.st.Tickets.AcceptTransfer(ctx, tr.ID, "mallory_"+e.ev, "mallory@example.com", store.TicketRow{ID: "tkt_m", UserID: "mallory_" + e.ev, SecretSealed: []byte("s")})
	require.ErrorIs(t, err, store.ErrWrongRecipient)
	_, _, err = e.st.Tickets.AcceptTransfer(ctx, tr.ID, bob, "bob@example.com", store.TicketRow{ID: "tkt_bob_" + uuid.NewString(), UserID: bob, SecretSealed: []byte("s")})
	require.NoError(t, err)
	_, err = offer(row.ID, alice, "carol@example.com", store.TransferLimits{})
	require.ErrorIs(t, err, store.ErrTicketNotTransferable, "alice's old ticket is TRANSFERRED: nothing left to offer")

	mine, _, err := e.st.Tickets.TicketsOfUser(ctx, bob, nil, 10)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	_, err = offer(mine[0].ID, bob, "carol@example.com", store.TransferLimits{PerTicket: 1})
	require.ErrorIs(t, err, store.ErrTransferLimit, "the seat has changed hands once, the limit")
	_, err = offer(mine[0].ID, bob, "carol@example.com", store.TransferLimits{OpenPerFan: 1})
	require.NoError(t, err)

	other := e.sold(bob, 2)
	orow := e.ticket(other, bob, 2)
	require.NoError(t, e.st.Tickets.InsertTickets(ctx, []store.TicketRow{orow}))
	_, err = offer(orow.ID, bob, "dave@example.com", store.TransferLimits{OpenPerFan: 1})
	require.ErrorIs(t, err, store.ErrTransferLimit, "bob already has an open offer")

	tr2, err := offer(orow.ID, bob, "dave@example.com", store.TransferLimits{})
	require.NoError(t, err)
	_, err = e.st.Tickets.RevokeTickets(ctx, other)
	require.NoError(t, err)
	_, _, err = e.st.Tickets.AcceptTransfer(ctx, tr2.ID, dave, "dave@example.com", store.TicketRow{ID: "tkt_d_" + uuid.NewString(), UserID: dave, SecretSealed: []byte("s")})
	require.ErrorIs(t, err, store.ErrTicketNotTransferable, "a ticket refunded while offered is not handed on")

	list, err := e.st.Tickets.TransfersOf(ctx, alice, "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, vocab.TransferAccepted, list[0].Status)
}
