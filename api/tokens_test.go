package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/tickets"
)

// call sends one request to base and decodes a JSON answer.
func call(t *testing.T, base, method, path, token string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	r := apitest.Do(t, method, base+path, token, body)
	return r.Status, r.Header, r.Body
}

func quiet(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// devAPI serves the demo login with a development issuer whose URL is the
// server's own origin, as encore dev does.
func devAPI(t *testing.T) (*httptest.Server, *session.Issuer) {
	t.Helper()
	var h atomic.Pointer[http.Handler]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	dev := session.NewIssuerAt("dev-secret", ts.URL+session.DevIssuerPath, session.DefaultAudience)
	handler := (&api.Server{Sessions: dev, Log: quiet(t)}).Handler()
	h.Store(&handler)
	return ts, dev
}

func TestTheDemoLoginsTokenVerifiesWithTheKeysServedAtDevOIDC(t *testing.T) {
	t.Parallel()
	ts, dev := devAPI(t)
	status, _, body := call(t, ts.URL, http.MethodPost, "/v1/sessions", "", map[string]any{
		"user_id": "asha", "device_id": "phone", "email": "asha@example.com", "roles": []string{"organiser"}, "org": "org-1"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	token := body["token"].(string)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := session.Discover(ctx, session.Options{Issuer: dev.URL(), Audience: session.DefaultAudience, Client: ts.Client()})
	require.NoError(t, err, "discovery and the key set are served on the API's origin")
	id, err := v.Verify(ctx, token)
	require.NoError(t, err)
	require.Equal(t, session.Identity{UserID: "asha", DeviceID: "phone", Email: "asha@example.com",
		Roles: []session.Role{session.Organiser}, Org: "org-1", IssuedAt: id.IssuedAt}, id)

	status, _, me := call(t, ts.URL, http.MethodGet, "/v1/me", token, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"user_id": "asha", "device_id": "phone", "email": "asha@example.com",
		"roles": []any{"organiser"}, "org": "org-1"}, me)

	status, _, me = call(t, ts.URL, http.MethodGet, "/v1/me", dev.Issue("bo", "laptop", time.Now()), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{"fan"}, me["roles"], "no roles claim means fan")
}

func TestTheDemoLoginRefusesUnknownRolesAndMalformedEmails(t *testing.T) {
	t.Parallel()
	ts, _ := devAPI(t)
	for name, body := range map[string]map[string]any{
		"an unknown role":                 {"user_id": "u", "device_id": "d", "roles": []string{"root"}},
		"an email with a display name":    {"user_id": "u", "device_id": "d", "email": "Asha <asha@example.com>"},
		"an email with a header smuggled": {"user_id": "u", "device_id": "d", "email": "a@example.com\r\nBcc: x@example.com"},
		"an org with a space":             {"user_id": "u", "device_id": "d", "org": "org 1"},
	} {
		t.Run(name, func(t *testing.T) {
			status, _, p := call(t, ts.URL, http.MethodPost, "/v1/sessions", "", body)
			require.Equal(t, http.StatusUnprocessableEntity, status)
			require.Equal(t, "/problems/invalid-request", p["type"])
		})
	}
}

func TestWithTheDemoLoginOffThereIsNoSessionRouteNorDevelopmentIssuer(t *testing.T) {
	t.Parallel()
	dev := session.NewIssuer("elsewhere")
	// An API verifying an issuer's tokens without the demo login.
	ts := httptest.NewServer((&api.Server{Tokens: dev.Verifier(), Log: quiet(t)}).Handler())
	defer ts.Close()
	for _, path := range []string{"/v1/sessions", "/dev/oidc/jwks.json", "/dev/oidc/.well-known/openid-configuration"} {
		method := http.MethodGet
		if path == "/v1/sessions" {
			method = http.MethodPost
		}
		status, _, p := call(t, ts.URL, method, path, "", map[string]any{"user_id": "u", "device_id": "d"})
		require.Equal(t, http.StatusNotFound, status, path)
		require.Equal(t, "/problems/not-found", p["type"])
	}
	status, _, _ := call(t, ts.URL, http.MethodGet, "/v1/me", dev.Issue("asha", "phone", time.Now()), nil)
	require.Equal(t, http.StatusOK, status, "the issuer's tokens still verify")
	status, _, p := call(t, ts.URL, http.MethodGet, "/v1/me", session.NewIssuer("forger").Issue("asha", "phone", time.Now()), nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "/problems/unauthorized", p["type"])
}

func TestAFanCannotReadOrTouchAnotherFansHoldBookingOrTicket(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	st := s.holds.Store
	key, err := tickets.NewSecret()
	require.NoError(t, err)
	kr, err := tickets.NewKeyring(key)
	require.NoError(t, err)
	srv := &api.Server{Holds: s.holds, Bookings: &booking.Service{Holds: s.holds, Store: st, Log: s.holds.Log},
		Tickets: &tickets.Wallet{Store: st, Keyring: kr}, Sessions: s.issuer, Log: s.holds.Log}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	own := *s
	own.url = ts.URL

	owner, other := s.fan("owner"), s.fan("other")
	held := own.hold(owner, map[string]any{"seat_ids": []string{s.seat("a", 0, 1)}})
	require.Equal(t, http.StatusCreated, held.Status, string(held.Raw))
	holdID := held.Body["hold_id"].(string)
	// Paid, as a booking with tickets is (tickets are issued to paid
	// bookings only).
	_, err = s.pool.Exec(ctx, `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1`, holdID)
	require.NoError(t, err)
	// A ticket on the reservation, as the saga issues it once paid.
	secret, err := tickets.NewSecret()
	require.NoError(t, err)
	ticketID := tickets.NewTicketID()
	sealed, err := kr.Seal(secret, ticketID)
	require.NoError(t, err)
	require.NoError(t, st.Tickets.InsertTickets(ctx, []store.TicketRow{{ID: ticketID, ReservationID: uuid.MustParse(holdID),
		EventID: s.eventID, SectionID: s.eventID + "_a", SeatID: s.seat("a", 0, 1), Unit: 1,
		UserID: "owner_" + s.eventID, SecretSealed: sealed}}))

	for _, r := range []struct{ method, path, ownersView string }{
		{http.MethodGet, "/v1/holds/" + holdID, "/v1/holds/" + holdID},
		{http.MethodDelete, "/v1/holds/" + holdID, "/v1/holds/" + holdID},
		{http.MethodGet, "/v1/bookings/" + holdID, "/v1/bookings/" + holdID},
		{http.MethodPost, "/v1/bookings/" + holdID + "/cancel", "/v1/bookings/" + holdID},
		{http.MethodGet, "/v1/tickets/" + ticketID + "/qr", "/v1/tickets/" + ticketID + "/qr"},
	} {
		t.Run(r.method+" "+strings.Replace(r.path, holdID, ":id", 1), func(t *testing.T) {
			got := own.do(r.method, r.path, other, nil)
			require.Equal(t, http.StatusNotFound, got.Status, string(got.Raw))
			require.Equal(t, "/problems/not-found", got.Body["type"])
			got = own.do(http.MethodGet, r.ownersView, owner, nil)
			require.Equal(t, http.StatusOK, got.Status, "the owner still sees it: %s", got.Raw)
		})
	}
	got := own.do(http.MethodGet, "/v1/holds/"+holdID, owner, nil)
	require.Equal(t, "PAID", got.Body["status"], "the other fan released and cancelled nothing")
	require.Equal(t, 1, s.count(`SELECT count(*) FROM tickets WHERE reservation_id = $1 AND status = 'VALID'`, holdID))
}
