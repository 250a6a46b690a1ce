package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/notify"
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
	mails    *mailLog
}

// mailLog keeps the emails a test's server sends.
type mailLog struct {
	mu   sync.Mutex
	sent []notify.Message
}

func (l *mailLog) Send(_ context.Context, m notify.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, m)
	return nil
}

// to lists the subjects sent to address.
func (l *mailLog) to(address string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.sent {
		if m.To == address {
			out = append(out, m.Subject)
		}
	}
	return out
}

func newQRStack(t *testing.T) *qrStack {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID, section := rowEvent(t, "QR", 4)
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
	kr := newKeyring(t)
	id, secret, sealed := sealedTicket(t, kr)
	st := store.New(pool, store.Options{})
	require.NoError(t, st.Tickets.InsertTickets(ctx, []store.TicketRow{{ID: id, ReservationID: booking, EventID: eventID,
		SectionID: section, SeatID: seat, Unit: 1, UserID: owner, SecretSealed: sealed}}))

	issuer := session.NewIssuer("qr-test-secret")
	mails := &mailLog{}
	srv := &api.Server{Sessions: issuer, Log: quiet(t),
		Tickets:   &tickets.Wallet{Store: st, Keyring: kr},
		Transfers: &tickets.Transfers{Store: st, Keyring: kr, Mailer: mails, Limits: store.TransferLimits{PerTicket: 3, OpenPerFan: 10}}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &qrStack{url: ts.URL, issuer: issuer, owner: owner, ticketID: id, secret: secret, booking: booking, store: st, mails: mails}
}

// newKeyring is a keyring of one fresh sealing key.
func newKeyring(t *testing.T) *tickets.Keyring {
	t.Helper()
	key, err := tickets.NewSecret()
	require.NoError(t, err)
	kr, err := tickets.NewKeyring(key)
	require.NoError(t, err)
	return kr
}

// sealedTicket is a new ticket's ID, its fresh secret and the secret sealed
// by kr, as the saga stores it when it issues the ticket.
func sealedTicket(t *testing.T, kr *tickets.Keyring) (id string, secret, sealed []byte) {
	t.Helper()
	secret, err := tickets.NewSecret()
	require.NoError(t, err)
	id = tickets.NewTicketID()
	sealed, err = kr.Seal(secret, id)
	require.NoError(t, err)
	return id, secret, sealed
}

func (s *qrStack) get(t *testing.T, user, path string) (*http.Response, []byte) {
	t.Helper()
	return s.getOn(t, user, "phone", path)
}

// getOn is get from one of user's devices.
func (s *qrStack) getOn(t *testing.T, user, device, path string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+s.issuer.Issue(user, device, time.Now()))
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

func TestAFanCannotReadOrTouchAnotherFansHoldBookingOrTicket(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	st := s.holds.Store
	kr := newKeyring(t)
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
	_, err := s.pool.Exec(ctx, `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1`, holdID)
	require.NoError(t, err)
	// A ticket on the reservation, as the saga issues it once paid.
	ticketID, _, sealed := sealedTicket(t, kr)
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

// meStack is the QR stack with the fan's own lists mounted, and a second,
// newer paid booking of two tickets for the same owner.
func meStack(t *testing.T) (*qrStack, uuid.UUID) {
	t.Helper()
	s := newQRStack(t)
	ctx := context.Background()
	first, err := s.store.Tickets.GetTicket(ctx, s.ticketID, s.owner)
	require.NoError(t, err)
	second := uuid.New()
	_, err = s.store.Pool().Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency, created_at)
		VALUES ($1, $2, $3, 'PAID', now(), now(), 10000, 'EUR', now() + interval '1 second')`, second, s.owner, first.EventID)
	require.NoError(t, err)
	var rows []store.TicketRow
	for n := 2; n <= 3; n++ {
		seat := demo.SeatID(first.SectionID, 0, n)
		_, err = s.store.Pool().Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, second, seat)
		require.NoError(t, err)
		rows = append(rows, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: second, EventID: first.EventID,
			SectionID: first.SectionID, SeatID: seat, Unit: 1, UserID: s.owner, SecretSealed: first.SecretSealed})
	}
	require.NoError(t, s.store.Tickets.InsertTickets(ctx, rows))
	_, err = s.store.Pool().Exec(ctx, `UPDATE tickets SET issued_at = now() + interval '1 second' WHERE reservation_id = $1`, second)
	require.NoError(t, err)

	srv := &api.Server{Sessions: s.issuer, Log: quiet(t),
		Tickets: &tickets.Wallet{Store: s.store}, Bookings: &booking.Service{Store: s.store}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s, second
}

type page struct {
	Tickets []struct {
		ID        string `json:"id"`
		BookingID string `json:"booking_id"`
		Status    string `json:"status"`
	} `json:"tickets"`
	Bookings []struct {
		BookingID string `json:"booking_id"`
		Status    string `json:"status"`
	} `json:"bookings"`
	NextCursor *string `json:"next_cursor"`
}

func (s *qrStack) page(t *testing.T, user, path string) page {
	t.Helper()
	resp, body := s.get(t, user, path)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var p page
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}

func TestMyTicketsAreTheCallersNewestFirstPageByPage(t *testing.T) {
	s, second := meStack(t)

	p1 := s.page(t, s.owner, "/v1/me/tickets?limit=2")
	require.Len(t, p1.Tickets, 2)
	for _, tk := range p1.Tickets {
		require.Equal(t, second.String(), tk.BookingID, "the newer booking's tickets come first")
		require.Equal(t, "VALID", tk.Status)
	}
	require.NotNil(t, p1.NextCursor)
	p2 := s.page(t, s.owner, "/v1/me/tickets?limit=2&cursor="+url.QueryEscape(*p1.NextCursor))
	require.Len(t, p2.Tickets, 1)
	require.Equal(t, s.ticketID, p2.Tickets[0].ID)
	require.Nil(t, p2.NextCursor, "the last page")

	require.Empty(t, s.page(t, "someone_else", "/v1/me/tickets").Tickets, "another fan sees none of them")
}

func TestMyBookingsAreTheCallersNewestFirstWithTheirStatus(t *testing.T) {
	s, second := meStack(t)

	p1 := s.page(t, s.owner, "/v1/me/bookings?limit=1")
	require.Len(t, p1.Bookings, 1)
	require.Equal(t, second.String(), p1.Bookings[0].BookingID)
	require.Equal(t, "PAID", p1.Bookings[0].Status)
	require.NotNil(t, p1.NextCursor)
	p2 := s.page(t, s.owner, "/v1/me/bookings?limit=1&cursor="+url.QueryEscape(*p1.NextCursor))
	require.Len(t, p2.Bookings, 1)
	require.Equal(t, s.booking.String(), p2.Bookings[0].BookingID)
	require.Nil(t, p2.NextCursor)

	require.Empty(t, s.page(t, "someone_else", "/v1/me/bookings").Bookings)
}

func TestMyListsRefuseBadPagingAndAnonymousCallers(t *testing.T) {
	s, _ := meStack(t)
	for _, tc := range []struct {
		user, path string
		status     int
	}{
		{s.owner, "/v1/me/tickets?limit=0", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/tickets?limit=abc", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/tickets?cursor=nonsense", http.StatusUnprocessableEntity},
		{s.owner, "/v1/me/bookings?cursor=123_not-a-uuid", http.StatusOK},
		{s.owner, "/v1/me/bookings?limit=101", http.StatusUnprocessableEntity},
		{"", "/v1/me/tickets", http.StatusUnauthorized},
		{"", "/v1/me/bookings", http.StatusUnauthorized},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := s.get(t, tc.user, tc.path)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
		})
	}
}

// countedMeStack serves the fan's lists and bookings over a pool of its own
// whose queries are counted, and seeds one fan with one paid booking and
// another with fifty, each of two seats, two tickets and a payment.
type countedMeStack struct {
	url       string
	issuer    *session.Issuer
	queries   *testenv.QueryCounter
	one, many string
}

func newCountedMeStack(t *testing.T) *countedMeStack {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID, section := rowEvent(t, "Counted", 102)
	s := &countedMeStack{one: "fan_one_" + eventID, many: "fan_many_" + eventID, queries: &testenv.QueryCounter{}}
	for _, u := range []string{s.one, s.many} {
		_, err := pool.Exec(ctx, `INSERT INTO users (id) VALUES ($1) ON CONFLICT DO NOTHING`, u)
		require.NoError(t, err)
	}
	st := store.New(pool, store.Options{})
	seat := 0
	book := func(user string, at time.Time) {
		id := uuid.New()
		_, err := pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency, created_at)
			VALUES ($1, $2, $3, 'PAID', now(), now(), 10000, 'EUR', $4)`, id, user, eventID, at)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO payments (reservation_id, intent_id, amount, currency, status)
			VALUES ($1, $2, 10000, 'EUR', 'CAPTURED')`, id, "pi_"+id.String())
		require.NoError(t, err)
		var rows []store.TicketRow
		for range 2 {
			seat++
			seatID := demo.SeatID(section, 0, seat)
			_, err = pool.Exec(ctx, `INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, base_price, surge_bps, discount, price_at_lock)
				VALUES ($1, $2, $3, $4, 5000, 10000, 0, 5000)`, id, eventID, section, seatID)
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `UPDATE seats SET status = 'SOLD', reservation_id = $1 WHERE id = $2`, id, seatID)
			require.NoError(t, err)
			rows = append(rows, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: id, EventID: eventID,
				SectionID: section, SeatID: seatID, Unit: 1, UserID: user, SecretSealed: []byte("sealed")})
		}
		require.NoError(t, st.Tickets.InsertTickets(ctx, rows))
	}
	start := time.Now().Add(-time.Hour)
	book(s.one, start)
	for i := range 50 {
		book(s.many, start.Add(time.Duration(i)*time.Second))
	}

	counted, err := store.OpenPool(ctx, testenv.DatabaseURL(t), store.PoolOptions{MaxConns: 4, Tracer: s.queries})
	require.NoError(t, err)
	t.Cleanup(counted.Close)
	cst := store.New(counted, store.Options{})
	s.issuer = session.NewIssuer("counted-test-secret")
	srv := &api.Server{Sessions: s.issuer, Log: quiet(t),
		Tickets: &tickets.Wallet{Store: cst}, Bookings: &booking.Service{Store: cst}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

// get answers path for user and how many queries the server sent for it.
func (s *countedMeStack) get(t *testing.T, user, path string) (apitest.Response, int64) {
	t.Helper()
	s.queries.Reset()
	r := apitest.Do(t, http.MethodGet, s.url+path, s.issuer.Issue(user, "phone", time.Now()), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return r, s.queries.Count()
}

func TestMyBookingsAndMyTicketsCostTheSameQueriesForAPageOfOneAsForAPageOfFifty(t *testing.T) {
	t.Parallel()
	s := newCountedMeStack(t)

	one, oneQueries := s.get(t, s.one, "/v1/me/bookings?limit=50")
	many, manyQueries := s.get(t, s.many, "/v1/me/bookings?limit=50")
	require.Len(t, one.Body["bookings"], 1)
	require.Len(t, many.Body["bookings"], 50)
	require.Equal(t, oneQueries, manyQueries, "a page of 50 bookings sent %d queries, a page of one %d", manyQueries, oneQueries)
	// Six reads in one snapshot: with its BEGIN and COMMIT, eight.
	require.LessOrEqual(t, manyQueries, int64(8))

	// Each booking of the list is the booking's own page.
	for _, b := range []struct {
		user    string
		booking any
	}{{s.many, many.Body["bookings"].([]any)[0]}, {s.many, many.Body["bookings"].([]any)[49]}, {s.one, one.Body["bookings"].([]any)[0]}} {
		m, user := b.booking.(map[string]any), b.user
		own, _ := s.get(t, user, fmt.Sprintf("/v1/bookings/%s", m["booking_id"]))
		require.NotNil(t, own.Body["cancellation"], "the booking's own page adds its cancellation terms")
		delete(own.Body, "cancellation")
		require.Equal(t, own.Body, m)
		require.Len(t, m["tickets"], 2)
		require.Len(t, m["seat_ids"], 2)
		require.Equal(t, "PAID", m["status"])
		require.NotNil(t, m["payment"])
	}

	oneT, oneTQueries := s.get(t, s.one, "/v1/me/tickets?limit=100")
	manyT, manyTQueries := s.get(t, s.many, "/v1/me/tickets?limit=100")
	require.Len(t, oneT.Body["tickets"], 2)
	require.Len(t, manyT.Body["tickets"], 100)
	require.Equal(t, oneTQueries, manyTQueries, "a page of 100 tickets sent %d queries, a page of two %d", manyTQueries, oneTQueries)
}

// checkoutEdge is the fan API's checkout route under a return-URL policy;
// the checks under test answer before any booking is looked at.
func checkoutEdge(t *testing.T, returns api.ReturnURLs) (string, string) {
	t.Helper()
	issuer := session.NewIssuer("return-url-secret")
	ts := httptest.NewServer((&api.Server{Bookings: &booking.Service{}, Sessions: issuer, ReturnURLs: returns}).Handler())
	t.Cleanup(ts.Close)
	return ts.URL, issuer.Issue("asha", "phone", time.Now())
}

func TestACheckoutUnderProductionRefusesAReturnURLOffThePublicOriginNamingTheField(t *testing.T) {
	t.Parallel()
	base, fan := checkoutEdge(t, api.ReturnURLs{Origin: "https://tickets.example", NoLoopback: true})
	for _, u := range []string{
		"http://127.0.0.1:8080/#/booking/b1",
		"http://localhost/#/booking/b1",
		"http://[::1]:9090/debug/pprof/",
		"https://evil.example/#/booking/b1",
		"http://tickets.example/#/booking/b1",
		"https://tickets.example.evil.example/",
		"javascript:alert(1)",
	} {
		r := apitest.Do(t, http.MethodPost, base+"/v1/holds/"+uuid.NewString()+"/checkout", fan,
			map[string]any{"payment_method": "pm_card_visa", "return_url": u}, "Idempotency-Key", "k-"+uuid.NewString())
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, u)
		require.Equal(t, "/problems/invalid-request", r.Body["type"], u)
		errs, _ := r.Body["errors"].([]any)
		require.NotEmpty(t, errs, u)
		require.Equal(t, "return_url", errs[0].(map[string]any)["field"], u)
	}
}

func TestACheckoutOutsideProductionStillAcceptsALoopbackReturnURL(t *testing.T) {
	t.Parallel()
	base, fan := checkoutEdge(t, api.ReturnURLs{Origin: "https://tickets.example"})
	for _, u := range []string{"http://127.0.0.1:8080/#/booking/b1", "https://tickets.example/#/booking/b1"} {
		r := apitest.Do(t, http.MethodPost, base+"/v1/holds/"+uuid.NewString()+"/checkout", fan,
			map[string]any{"payment_method": "pm_card_visa", "return_url": u}, "Idempotency-Key", strings.Repeat("k", 256))
		// Past the return_url check, the next one refuses the too long key.
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, u)
		errs, _ := r.Body["errors"].([]any)
		require.NotEmpty(t, errs, u)
		require.Equal(t, "Idempotency-Key", errs[0].(map[string]any)["field"], u)
	}
}

func TestABookingNamesItsEventInTheVenuesZoneAndLabelsEverySeatAndTicketForPeople(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID := "evt_" + testenv.RandomSuffix()
	starts := time.Date(2027, 3, 12, 20, 0, 0, 0, time.UTC)
	require.NoError(t, demo.Create(ctx, pool, demo.Event{ID: eventID, Title: "Night in Amsterdam", VenueID: "ven_" + eventID,
		VenueName: "Ziggo Hall", City: "Amsterdam", Timezone: "Europe/Amsterdam", StartsAt: starts,
		OnsaleAt: time.Now().Add(-time.Hour), Currency: "EUR", Sections: []demo.Section{
			{ID: eventID + "_lower7", Name: "Lower 7", Rows: 2, PerRow: 4, BasePrice: 5000},
			{ID: eventID + "_pit", Name: "Standing pit", General: true, Capacity: 100, BasePrice: 3000},
		}}))
	user := "fan_" + eventID
	_, err := pool.Exec(ctx, `INSERT INTO users (id) VALUES ($1)`, user)
	require.NoError(t, err)
	id := uuid.New()
	_, err = pool.Exec(ctx, `INSERT INTO reservations (id, user_id, event_id, status, expires_at, ended_at, total, currency, promo_code)
		VALUES ($1, $2, $3, 'PAID', now(), now(), 10500, 'EUR', 'FRIENDS')`, id, user, eventID)
	require.NoError(t, err)
	var seatID, row string
	var number int
	require.NoError(t, pool.QueryRow(ctx, `SELECT id, row_label, number FROM seats WHERE section_id = $1 ORDER BY row_label DESC, number DESC LIMIT 1`,
		eventID+"_lower7").Scan(&seatID, &row, &number))
	_, err = pool.Exec(ctx, `INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity, base_price, surge_bps, discount, price_at_lock)
		VALUES ($1, $2, $3, $4, 1, 5000, 10000, 500, 4500), ($1, $2, $5, NULL, 2, 3000, 10000, 0, 3000)`, id, eventID, eventID+"_lower7", seatID, eventID+"_pit")
	require.NoError(t, err)
	st := store.New(pool, store.Options{})
	rows := []store.TicketRow{{ID: tickets.NewTicketID(), ReservationID: id, EventID: eventID, SectionID: eventID + "_lower7",
		SeatID: seatID, Unit: 1, UserID: user, SecretSealed: []byte("sealed")}}
	for unit := 1; unit <= 2; unit++ {
		rows = append(rows, store.TicketRow{ID: tickets.NewTicketID(), ReservationID: id, EventID: eventID, SectionID: eventID + "_pit",
			Unit: unit, UserID: user, SecretSealed: []byte("sealed")})
	}
	require.NoError(t, st.Tickets.InsertTickets(ctx, rows))
	issuer := session.NewIssuer("labels-test-secret")
	ts := httptest.NewServer((&api.Server{Sessions: issuer, Log: quiet(t), Tickets: &tickets.Wallet{Store: st},
		Bookings: &booking.Service{Store: st}}).Handler())
	t.Cleanup(ts.Close)
	token := issuer.Issue(user, "phone", time.Now())

	seatLabel := fmt.Sprintf("Lower 7, Row %s, Seat %d", row, number)
	for _, path := range []string{"/v1/bookings/" + id.String(), "/v1/me/bookings"} {
		r := apitest.Do(t, http.MethodGet, ts.URL+path, token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		b := r.Body
		if path == "/v1/me/bookings" {
			require.Len(t, b["bookings"], 1, "my bookings lists it, as its own page shows it")
			b = b["bookings"].([]any)[0].(map[string]any)
		}
		require.Equal(t, map[string]any{"id": eventID, "title": "Night in Amsterdam", "starts_at": "2027-03-12T20:00:00Z",
			"timezone": "Europe/Amsterdam", "venue": map[string]any{"name": "Ziggo Hall", "city": "Amsterdam"}}, b["event"], path)
		items := b["items"].([]any)
		require.Len(t, items, 2, path)
		labels := map[string]any{}
		for _, it := range items {
			it := it.(map[string]any)
			labels[it["label"].(string)] = it["quantity"]
			if it["label"] == seatLabel {
				require.EqualValues(t, 500, it["discount"], "the promotion's discount shows on its line")
				require.EqualValues(t, 4500, it["price"].(map[string]any)["amount"])
			}
		}
		require.Equal(t, map[string]any{seatLabel: float64(1), "Standing pit": float64(2)}, labels, path)
		var ticketLabels []string
		for _, tk := range b["tickets"].([]any) {
			ticketLabels = append(ticketLabels, tk.(map[string]any)["label"].(string))
		}
		require.ElementsMatch(t, []string{seatLabel, "Standing pit", "Standing pit"}, ticketLabels, path)
		if path == "/v1/me/bookings" {
			require.Nil(t, b["cancellation"], "lists leave the terms to the booking's own page")
			continue
		}
		require.Equal(t, map[string]any{"allowed": true, "deadline": "2027-03-10T20:00:00Z",
			"refund": map[string]any{"amount": float64(10500), "currency": "EUR"}}, b["cancellation"],
			"the fan sees, before confirming, until when and how much a cancellation refunds (48 hours before the show, everything)")
	}
	r := apitest.Do(t, http.MethodGet, ts.URL+"/v1/me/tickets", token, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var mine []string
	for _, tk := range r.Body["tickets"].([]any) {
		mine = append(mine, tk.(map[string]any)["label"].(string))
		require.Equal(t, "Night in Amsterdam", tk.(map[string]any)["event"].(map[string]any)["title"], "a ticket names its event")
	}
	require.ElementsMatch(t, []string{seatLabel, "Standing pit", "Standing pit"}, mine, "my tickets name their places too")
}

// A booking page that already shows a booking sends its ETag back: it gets
// 304 at once, or with Prefer: wait its request is held until the booking
// changes (then 200 with the new booking, at once, not at the next read
// the waiter would make anyway) or the wait ends (304).
func TestAWaitingBookingReadAnswersWhenTheBookingChangesAndNotModifiedWhenItDoesNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	eventID, section := rowEvent(t, "Watch", 2)
	fan := "fan_watch_" + eventID
	st := store.New(pool, store.Options{})
	h, _, err := st.Holds.CreateHold(ctx, store.HoldRequest{ReservationID: uuid.New(), UserID: fan, EventID: eventID,
		SeatIDs: []string{demo.SeatID(section, 0, 1)}})
	require.NoError(t, err)

	changes := store.NewBookingChanges(pool, quiet(t))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { changes.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, changes.Listening, 10*time.Second, 10*time.Millisecond)
	issuer := session.NewIssuer("watch-test-secret")
	ts := httptest.NewServer((&api.Server{Sessions: issuer, Log: quiet(t),
		Bookings: &booking.Service{Store: st, Changes: changes}}).Handler())
	t.Cleanup(ts.Close)
	get := func(header ...string) (*http.Response, map[string]any, time.Duration) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/v1/bookings/"+h.ID.String(), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+issuer.Issue(fan, "phone", time.Now()))
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		}
		return resp, body, time.Since(began)
	}

	resp, body, _ := get()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "PENDING_PAYMENT", body["status"])
	tag := resp.Header.Get("ETag")
	require.NotEmpty(t, tag)

	resp, _, _ = get("If-None-Match", tag)
	require.Equal(t, http.StatusNotModified, resp.StatusCode, "unchanged, without a wait: at once")
	require.Equal(t, tag, resp.Header.Get("ETag"))
	resp, _, took := get("If-None-Match", tag, "Prefer", "wait=1")
	require.Equal(t, http.StatusNotModified, resp.StatusCode, "unchanged through the wait")
	require.GreaterOrEqual(t, took, 900*time.Millisecond, "held for the wait")
	resp, body, _ = get("If-None-Match", `"another"`, "Prefer", "wait=10")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a stale copy is answered at once")
	require.Equal(t, "PENDING_PAYMENT", body["status"])

	// The booking is sold while a page waits on it.
	type answer struct {
		resp *http.Response
		body map[string]any
		took time.Duration
	}
	answered := make(chan answer, 1)
	go func() {
		resp, body, took := get("If-None-Match", tag, "Prefer", "wait=15")
		answered <- answer{resp, body, took}
	}()
	require.Eventually(t, func() bool { return changes.Watchers() > 0 }, 10*time.Second, 5*time.Millisecond)
	_, err = pool.Exec(ctx, `UPDATE reservations SET status = 'PAID', ended_at = now() WHERE id = $1`, h.ID)
	require.NoError(t, err)
	a := <-answered
	require.Equal(t, http.StatusOK, a.resp.StatusCode)
	require.Equal(t, "PAID", a.body["status"])
	require.NotEqual(t, tag, a.resp.Header.Get("ETag"))
	require.Less(t, a.took, 4*time.Second, "woken by the change, not by the read every 5 s")
}
