package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
)

// qrStack is the API with the QR route and one paid booking whose ticket
// was issued directly in SQL, as the saga issues it.
type qrStack struct {
	url      string
	issuer   *session.Issuer
	owner    string
	ticketID string
	secret   []byte
	booking  uuid.UUID
	store    *store.Store
}

func newQRStack(t *testing.T) *qrStack {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID := "evt_" + testenv.RandomSuffix()
	section := eventID + "_a"
	require.NoError(t, demo.Create(ctx, pool, demo.Event{
		ID: eventID, Title: "QR " + t.Name(), VenueID: "ven_test", VenueName: "Test Hall", City: "Testville",
		StartsAt: time.Now().Add(24 * time.Hour), OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR",
		Sections: []demo.Section{{ID: section, Name: "A", Rows: 1, PerRow: 4, BasePrice: 5000}},
	}))
	owner := "fan_qr_" + eventID
	seat := demo.SeatID(section, 0, 1)
	booking := uuid.New()
	_, err := pool.Exec(ctx, `INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, owner)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency)
		VALUES ($1, $2, $3, 'PAID', now(), now(), 5000, 'EUR')`, booking, owner, eventID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, booking, seat)
	require.NoError(t, err)
	key, err := tickets.NewSecret()
	require.NoError(t, err)
	kr, err := tickets.NewKeyring(key)
	require.NoError(t, err)
	secret, err := tickets.NewSecret()
	require.NoError(t, err)
	id := tickets.NewTicketID()
	sealed, err := kr.Seal(secret, id)
	require.NoError(t, err)
	st := store.New(pool, store.Options{})
	require.NoError(t, st.Tickets.InsertTickets(ctx, []store.TicketRow{{ID: id, ReservationID: booking, EventID: eventID,
		SectionID: section, SeatID: seat, Unit: 1, UserID: owner, SecretSealed: sealed}}))

	issuer := session.NewIssuer("qr-test-secret")
	srv := &api.Server{Sessions: issuer, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Tickets: &tickets.Wallet{Store: st, Keyring: kr}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &qrStack{url: ts.URL, issuer: issuer, owner: owner, ticketID: id, secret: secret, booking: booking, store: st}
}

func (s *qrStack) get(t *testing.T, user, path string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+s.issuer.Issue(user, "phone", time.Now()))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp, body.Bytes()
}

func TestTicketQRIsTheOwnersOnly(t *testing.T) {
	s := newQRStack(t)
	path := "/v1/tickets/" + s.ticketID + "/qr"

	resp, body := s.get(t, s.owner, path)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var got struct {
		Payload   string    `json:"payload"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	c, err := tickets.Verify(got.Payload, s.secret, time.Now())
	require.NoError(t, err, "the code verifies with the ticket's own secret")
	require.Equal(t, s.ticketID, c.TicketID)
	require.WithinDuration(t, time.Now(), got.ExpiresAt, tickets.WindowLength+time.Second)
	require.True(t, got.ExpiresAt.After(time.Now().Add(-time.Second)))

	resp, body = s.get(t, s.owner, path+"?format=png")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	img, err := png.Decode(bytes.NewReader(body))
	require.NoError(t, err, "the body decodes as a PNG")
	require.Equal(t, 320, img.Bounds().Dx())

	cases := []struct {
		name, user, path string
		status           int
		problem          string
	}{
		{"another fan", "fan_someone_else", path, http.StatusNotFound, "not-found"},
		{"another fan, png", "fan_someone_else", path + "?format=png", http.StatusNotFound, "not-found"},
		{"no token", "", path, http.StatusUnauthorized, "unauthorized"},
		{"unknown ticket", s.owner, "/v1/tickets/" + tickets.NewTicketID() + "/qr", http.StatusNotFound, "not-found"},
		{"malformed ticket ID", s.owner, "/v1/tickets/x'--/qr", http.StatusNotFound, "not-found"},
		{"bad format", s.owner, path + "?format=gif", http.StatusUnprocessableEntity, "invalid-request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.get(t, tc.user, tc.path)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.Contains(t, string(body), `"type":"/problems/`+tc.problem+`"`)
		})
	}

	t.Run("revoked", func(t *testing.T) {
		_, err := s.store.Tickets.RevokeTickets(context.Background(), s.booking)
		require.NoError(t, err)
		resp, body := s.get(t, s.owner, path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, string(body), "revoked")
	})
}
