package manifest_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"

	"github.com/encore-tickets/encore/vocab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// venue is one fresh event with paid bookings made directly in SQL, as the
// booking saga leaves them: reservation PAID, seats SOLD, items live, one
// ticket per seat with its sealed secret.
type venue struct {
	t       *testing.T
	pool    *pgxpool.Pool
	store   *store.Store
	keyring *tickets.Keyring
	keys    manifest.Keys
	eventID string
	section string
	next    int
}

func newVenue(t *testing.T) *venue {
	t.Helper()
	pool := testenv.DB(t)
	eventID := "evt_" + testenv.RandomSuffix()
	require.NoError(t, demo.Create(context.Background(), pool, demo.Event{
		ID: eventID, Title: "Gate " + t.Name(), VenueID: "ven_gate", VenueName: "Gate Hall", City: "Testville",
		StartsAt: time.Now().Add(48 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: eventID + "_a", Name: "A", Rows: 4, PerRow: 10, BasePrice: 5000}},
	}))
	cfg := config.Default()
	key, err := tickets.ParseKey(cfg.TicketSealingKey.Reveal())
	require.NoError(t, err)
	kr, err := tickets.NewKeyring(key)
	require.NoError(t, err)
	keys, err := manifest.KeysFromConfig(cfg)
	require.NoError(t, err)
	return &venue{t: t, pool: pool, store: store.New(pool, store.Options{}), keyring: kr, keys: keys,
		eventID: eventID, section: eventID + "_a"}
}

// issued is a ticket with its secret in the clear, for making codes.
type issued struct {
	ID, SeatID string
	Secret     []byte
}

func (i issued) code(at time.Time) string {
	p, _ := tickets.Payload(i.ID, i.Secret, at)
	return p
}

// book makes a paid booking of n seats and issues its tickets.
func (v *venue) book(user string, n int) (uuid.UUID, []issued) {
	v.t.Helper()
	ctx := context.Background()
	id := uuid.New()
	_, err := v.pool.Exec(ctx, `INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, user)
	require.NoError(v.t, err)
	_, err = v.pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
		VALUES ($1, $2, $3, 'PAID', now() + interval '10 minutes', now(), $4, 'EUR')`, id, user, v.eventID, 5000*n)
	require.NoError(v.t, err)
	var rows []store.TicketRow
	var out []issued
	for range n {
		seat := demo.SeatID(v.section, v.next/10, v.next%10+1)
		v.next++
		_, err = v.pool.Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, id, seat)
		require.NoError(v.t, err)
		_, err = v.pool.Exec(ctx, `INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price,
			surge_bps, discount, price_at_lock) VALUES ($1, $2, $3, $4, 5000, 10000, 0, 5000)`, id, v.eventID, v.section, seat)
		require.NoError(v.t, err)
		tid := tickets.NewTicketID()
		secret, err := tickets.NewSecret()
		require.NoError(v.t, err)
		sealed, err := v.keyring.Seal(secret, tid)
		require.NoError(v.t, err)
		rows = append(rows, store.TicketRow{ID: tid, ReservationID: id, EventID: v.eventID, SectionID: v.section,
			SeatID: seat, Unit: 1, UserID: user, SecretSealed: sealed})
		out = append(out, issued{ID: tid, SeatID: seat, Secret: secret})
	}
	require.NoError(v.t, v.store.Tickets.InsertTickets(ctx, rows))
	return id, out
}

// cancel ends a paid booking; revoke says whether its tickets are revoked
// too (the saga does) or left VALID (a saga that has not got there yet).
func (v *venue) cancel(id uuid.UUID, revoke bool) {
	v.t.Helper()
	ctx := context.Background()
	if revoke {
		ids, err := v.store.Tickets.RevokeTickets(ctx, id)
		require.NoError(v.t, err)
		require.NotEmpty(v.t, ids)
	}
	_, err := v.pool.Exec(ctx, `UPDATE reservations SET status = 'CANCELLED' WHERE id = $1`, id)
	require.NoError(v.t, err)
}

func (v *venue) export(opt manifest.ExportOptions) ([]byte, manifest.Header) {
	v.t.Helper()
	opt.EventID = v.eventID
	data, h, err := manifest.Export(context.Background(), v.store, v.keyring, v.keys, opt)
	require.NoError(v.t, err)
	return data, h
}

func TestInsertTicketsIsIdempotent(t *testing.T) {
	t.Parallel()
	v := newVenue(t)
	ctx := context.Background()
	id, first := v.book("fan_idem", 2)

	// The saga step retried with fresh IDs and secrets adds nothing.
	var retry []store.TicketRow
	for _, tk := range first {
		sealed, err := v.keyring.Seal([]byte("another secret, another ticket ID"), "x")
		require.NoError(t, err)
		retry = append(retry, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: id, EventID: v.eventID,
			SectionID: v.section, SeatID: tk.SeatID, Unit: 1, UserID: "fan_idem", SecretSealed: sealed})
	}
	require.NoError(t, v.store.Tickets.InsertTickets(ctx, retry))
	require.NoError(t, v.store.Tickets.InsertTickets(ctx, retry))
	got, err := v.store.Tickets.TicketsOfReservation(ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, tk := range got {
		require.Equal(t, first[i].ID, tk.ID, "the first issue stands")
		require.Equal(t, vocab.TicketValid, tk.Status)
		secret, err := v.keyring.Open(tk.SecretSealed, tk.ID)
		require.NoError(t, err)
		require.Equal(t, first[i].Secret, secret)
	}

	// Another paid booking's valid ticket for a sold seat (a double sale)
	// is a conflict, never absorbed.
	other := uuid.New()
	_, err = v.pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
		VALUES ($1, 'fan_idem', $2, 'PAID', now(), now(), 0, 'EUR')`, other, v.eventID)
	require.NoError(t, err)
	err = v.store.Tickets.InsertTickets(ctx, []store.TicketRow{{ID: tickets.NewTicketID(), ReservationID: other, EventID: v.eventID,
		SectionID: v.section, SeatID: first[0].SeatID, Unit: 1, UserID: "fan_idem", SecretSealed: []byte{1}}})
	var conflict *store.TicketConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "tickets_one_valid_per_seat", conflict.Constraint)

	// Owner only.
	tk, err := v.store.Tickets.GetTicket(ctx, first[0].ID, "fan_idem")
	require.NoError(t, err)
	require.Equal(t, first[0].SeatID, tk.SeatID)
	_, err = v.store.Tickets.GetTicket(ctx, first[0].ID, "someone_else")
	require.ErrorIs(t, err, store.ErrNotFound)

	// Revoking twice revokes once.
	ids, err := v.store.Tickets.RevokeTickets(ctx, id)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	ids, err = v.store.Tickets.RevokeTickets(ctx, id)
	require.NoError(t, err)
	require.Empty(t, ids)
}

func TestExportCarriesPaidTicketsToTwoGatesSharingALedger(t *testing.T) {
	t.Parallel()
	v := newVenue(t)
	_, alice := v.book("fan_alice", 2)
	bobBooking, bob := v.book("fan_bob", 1)
	carolBooking, carol := v.book("fan_carol", 1)
	v.cancel(bobBooking, true)    // refunded: tickets revoked
	v.cancel(carolBooking, false) // cancelled, tickets not yet revoked

	data, h := v.export(manifest.ExportOptions{})
	require.Equal(t, manifest.KindFull, h.Kind)
	require.False(t, h.Reentry, "no re-entry unless the event allows it")
	require.Equal(t, 2, h.TicketCount, "only alice's tickets")
	require.Equal(t, 1, h.RevokeCount, "carol's ticket of a cancelled booking is named revoked")
	require.NotContains(t, string(data), alice[0].ID, "ticket IDs are inside the encrypted body")

	m, err := manifest.Open(data, v.keys, time.Now())
	require.NoError(t, err)
	require.Equal(t, v.eventID, m.EventID)
	require.Equal(t, []string{carol[0].ID}, m.Body.Revoked)
	got := map[string][]byte{}
	for _, e := range m.Body.Tickets {
		got[e.ID] = e.Secret
	}
	require.Equal(t, alice[0].Secret, got[alice[0].ID])
	require.NotContains(t, got, bob[0].ID)

	north := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &v.keys})
	south := gate.StartForTest(t, gate.TestOptions{DBPath: north.DBPath(), Keys: &v.keys})
	code, r := north.Scan(alice[0].code(time.Now()), "north-1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, gate.Accepted, r.Result)
	require.Equal(t, alice[0].SeatID, r.SeatID)
	_, r = south.Scan(alice[0].code(time.Now()), "south-1")
	require.Equal(t, gate.ReasonAlreadyUsed, r.Reason)
	require.Equal(t, "north-1", r.FirstGateID)
	_, r = south.Scan(bob[0].code(time.Now()), "south-1")
	require.Equal(t, gate.ReasonUnknownTicket, r.Reason, "a refunded ticket is left out of a full export")
}

func TestDeltaExportRevokesTicketsRefundedSinceTheLastOne(t *testing.T) {
	t.Parallel()
	v := newVenue(t)
	early, earlyTickets := v.book("fan_early", 1)
	data, full := v.export(manifest.ExportOptions{})
	g := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &v.keys})

	_, lateTickets := v.book("fan_late", 1)
	v.cancel(early, true)
	_, err := v.pool.Exec(context.Background(), `UPDATE events SET reentry = true WHERE id = $1`, v.eventID)
	require.NoError(t, err)
	delta, h := v.export(manifest.ExportOptions{Since: full.Version})
	require.True(t, h.Reentry, "the event's re-entry rule travels with its manifest")
	require.Equal(t, manifest.KindDelta, h.Kind)
	require.Equal(t, full.Version, h.BaseVersion)
	require.Greater(t, h.Version, full.Version, "a later export has a later version")
	require.Equal(t, 1, h.TicketCount)
	require.Equal(t, 1, h.RevokeCount)

	m, err := manifest.Open(delta, v.keys, time.Now())
	require.NoError(t, err)
	res, err := g.Store.Import(context.Background(), m, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, res.Revoked)

	_, r := g.Scan(earlyTickets[0].code(time.Now()), "n")
	require.Equal(t, gate.ReasonRevoked, r.Reason)
	_, r = g.Scan(lateTickets[0].code(time.Now()), "n")
	require.Equal(t, gate.Accepted, r.Result)

	// The superseded full export can no longer be imported.
	old, err := manifest.Open(data, v.keys, time.Now())
	require.NoError(t, err)
	_, err = g.Store.Import(context.Background(), old, time.Now())
	require.ErrorContains(t, err, "supersedes")
}

func TestTamperedExpiredAndWrongKeyManifestsAreRefused(t *testing.T) {
	t.Parallel()
	v := newVenue(t)
	v.book("fan_t", 3)
	expiry := time.Now().Add(6 * time.Hour).Truncate(time.Second)
	data, h := v.export(manifest.ExportOptions{ExpiresAt: expiry})
	require.True(t, expiry.Equal(h.ExpiresAt))

	flip := func(i int) []byte {
		b := bytes.Clone(data)
		b[i] ^= 0x10
		return b
	}
	otherKeys := func(enc, sign bool) manifest.Keys {
		k := v.keys
		if enc {
			k.Encryption = bytes.Repeat([]byte{9}, 32)
		}
		if sign {
			k.Verify = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey)
		}
		return k
	}
	bodyStart := len(data) / 2
	cases := []struct {
		name string
		data []byte
		keys manifest.Keys
		now  time.Time
		want string
	}{
		{"one flipped bit in the encrypted body", flip(bodyStart), v.keys, time.Now(), "signature does not verify"},
		{"one flipped bit in the header", flip(20), v.keys, time.Now(), "signature does not verify"},
		{"one flipped bit in the signature", flip(len(data) - 1), v.keys, time.Now(), "signature does not verify"},
		{"one flipped bit in the magic", flip(0), v.keys, time.Now(), "not an Encore manifest"},
		{"truncated", data[:len(data)-10], v.keys, time.Now(), "signature does not verify"},
		{"expired", data, v.keys, expiry.Add(time.Second), "expired at " + expiry.UTC().Format(time.RFC3339)},
		{"expired at the instant", data, v.keys, expiry, "export a fresh one"},
		{"signed with another key", data, otherKeys(false, true), time.Now(), "signed with another key"},
		{"encrypted under another key", data, otherKeys(true, false), time.Now(), "encrypted under key " + manifest.KeyID(v.keys.Encryption)},
		{"not a manifest", []byte("hello"), v.keys, time.Now(), "not an Encore manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := manifest.Open(tc.data, tc.keys, tc.now)
			require.ErrorContains(t, err, tc.want)
		})
	}
	var expired *manifest.ExpiredError
	_, err := manifest.Open(data, v.keys, expiry.Add(time.Hour))
	require.ErrorAs(t, err, &expired)
	var wrong *manifest.WrongKeyError
	_, err = manifest.Open(data, otherKeys(true, false), time.Now())
	require.ErrorAs(t, err, &wrong)

	t.Run("every single flipped bit is refused", func(t *testing.T) {
		t.Parallel()
		for i := range data {
			b := bytes.Clone(data)
			b[i] ^= 1 << (i % 8)
			_, err := manifest.Open(b, v.keys, time.Now())
			require.Error(t, err, fmt.Sprintf("byte %d", i))
		}
	})

	_, _, err = manifest.Export(context.Background(), v.store, v.keyring, v.keys,
		manifest.ExportOptions{EventID: v.eventID, ExpiresAt: time.Now().Add(-time.Minute)})
	require.ErrorContains(t, err, "before it is made")
	_, _, err = manifest.Export(context.Background(), v.store, v.keyring, v.keys, manifest.ExportOptions{EventID: "evt_nope"})
	require.ErrorContains(t, err, "no event")

	hdr, err := manifest.ReadHeader(data, v.keys.Verify)
	require.NoError(t, err)
	require.Equal(t, h.Version, hdr.Version)
}

// TestADeltaCarriesATicketMovedToAnotherPhoneAndTheGateRefusesTheOldPhone:
// the wallet opened on a second phone after the full export reaches the
// gate in the next delta (only the generation), after which the first
// phone's offline codes are refused and the second's accepted.
func TestADeltaCarriesATicketMovedToAnotherPhoneAndTheGateRefusesTheOldPhone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newVenue(t)
	_, ts := v.book("fan_phones", 2)
	// Issued long before the exports: only the move can bring one into the
	// delta.
	_, err := v.pool.Exec(ctx, `UPDATE tickets SET issued_at = now() - interval '1 day' WHERE event_id = $1`, v.eventID)
	require.NoError(t, err)
	wallet := &tickets.Wallet{Store: v.store, Keyring: v.keyring}
	first, err := wallet.Open(ctx, "fan_phones", "old-phone", ts[0].ID)
	require.NoError(t, err)
	data, full := v.export(manifest.ExportOptions{})
	g := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &v.keys})

	second, err := wallet.Open(ctx, "fan_phones", "new-phone", ts[0].ID)
	require.NoError(t, err)
	require.Equal(t, first.Generation+1, second.Generation)
	delta, h := v.export(manifest.ExportOptions{Since: full.Version})
	require.Equal(t, manifest.KindDelta, h.Kind)
	m, err := manifest.Open(delta, v.keys, time.Now())
	require.NoError(t, err)
	generations := map[string]int64{}
	for _, e := range m.Body.Tickets {
		generations[e.ID] = e.Generation
	}
	require.Equal(t, map[string]int64{ts[0].ID: second.Generation}, generations, "the moved ticket, with its new generation")
	_, err = g.Store.Import(ctx, m, time.Now())
	require.NoError(t, err)

	oldCode, _ := tickets.DevicePayload(ts[0].ID, ts[0].Secret, first.Generation, time.Now())
	_, r := g.Scan(oldCode, "n")
	require.Equal(t, gate.ReasonOtherDevice, r.Reason, r.Detail)
	newCode, _ := tickets.DevicePayload(ts[0].ID, ts[0].Secret, second.Generation, time.Now())
	_, r = g.Scan(newCode, "n")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)
}

// TestATransferredTicketIsRefusedAsTransferredAndItsNewHolderGetsIn: a
// ticket handed on after the full export reaches the gate in the next
// delta as transferred (its old codes refused with that reason) beside the
// recipient's new ticket, which enters; a full export made afterwards says
// the same.
func TestATransferredTicketIsRefusedAsTransferredAndItsNewHolderGetsIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newVenue(t)
	_, ts := v.book("fan_sender", 1)
	data, full := v.export(manifest.ExportOptions{})
	g := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &v.keys})

	handing := &tickets.Transfers{Store: v.store, Keyring: v.keyring}
	x, err := handing.Offer(ctx, "fan_sender", "", ts[0].ID, "friend@example.com")
	require.NoError(t, err)
	_, got, err := handing.Accept(ctx, "fan_friend", "friend@example.com", x.ID)
	require.NoError(t, err)
	delta, _ := v.export(manifest.ExportOptions{Since: full.Version})
	m, err := manifest.Open(delta, v.keys, time.Now())
	require.NoError(t, err)
	_, err = g.Store.Import(ctx, m, time.Now())
	require.NoError(t, err)

	_, r := g.Scan(ts[0].code(time.Now()), "n")
	require.Equal(t, gate.ReasonTransferred, r.Reason, r.Detail)
	secret, err := v.keyring.Open(got.SecretSealed, got.ID)
	require.NoError(t, err)
	fresh := issued{ID: got.ID, SeatID: got.SeatID, Secret: secret}
	_, r = g.Scan(fresh.code(time.Now()), "n")
	require.Equal(t, gate.Accepted, r.Result, r.Detail)

	again, _ := v.export(manifest.ExportOptions{})
	other := gate.StartForTest(t, gate.TestOptions{Manifest: again, Keys: &v.keys})
	_, r = other.Scan(ts[0].code(time.Now()), "s")
	require.Equal(t, gate.ReasonTransferred, r.Reason, "a full export says so too: %s", r.Detail)
}

// TestAListedTicketIsRefusedAsListedUntilItsListingIsWithdrawn: a ticket
// its holder lists for resale reaches the gate's next delta marked listed
// and is refused with reason listed; withdrawn, the delta after lists it
// again and it gets in.
func TestAListedTicketIsRefusedAsListedUntilItsListingIsWithdrawn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newVenue(t)
	_, ts := v.book("fan_seller", 1)
	_, err := v.pool.Exec(ctx, `UPDATE events SET resale_enabled = true WHERE id = $1`, v.eventID)
	require.NoError(t, err)
	data, full := v.export(manifest.ExportOptions{})
	g := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &v.keys})
	apply := func(since int64) manifest.Header {
		delta, h := v.export(manifest.ExportOptions{Since: since})
		m, err := manifest.Open(delta, v.keys, time.Now())
		require.NoError(t, err)
		_, err = g.Store.Import(ctx, m, time.Now())
		require.NoError(t, err)
		return h
	}

	l, err := (&tickets.Resale{Store: v.store}).List(ctx, "fan_seller", "", ts[0].ID, money.Money{Amount: 100})
	require.NoError(t, err)
	listed := apply(full.Version)
	_, r := g.Scan(ts[0].code(time.Now()), "n")
	require.Equal(t, gate.ReasonListed, r.Reason, r.Detail)

	_, err = v.store.Resale.WithdrawListing(ctx, l.ID, "fan_seller")
	require.NoError(t, err)
	apply(listed.Version)
	_, r = g.Scan(ts[0].code(time.Now()), "n")
	require.Equal(t, gate.Accepted, r.Result, "withdrawn, the ticket opens the door again: %s", r.Detail)
}
