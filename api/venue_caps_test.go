package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// countingBody is a request body of a head, then rep over and over up to
// size bytes; read is how much of it the server took.
type countingBody struct {
	head, rep string
	size      int
	read      int
	pending   string
}

func (b *countingBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if b.pending == "" {
			switch {
			case b.read+n == 0:
				b.pending = b.head
			case b.read+n+len(b.rep) <= b.size:
				b.pending = b.rep
			default:
				b.read += n
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
		c := copy(p[n:], b.pending)
		b.pending = b.pending[c:]
		n += c
	}
	b.read += n
	return n, nil
}

func (b *countingBody) Close() error { return nil }

func TestAVenueImportPastTheSeatCapIsRefusedAsTooLargeBeforeTheRestOfTheBodyIsRead(t *testing.T) {
	t.Parallel()
	st := store.New(testenv.DB(t), store.Options{})
	issuer := session.NewIssuer("caps-test-secret")
	srv := &api.Server{Sessions: issuer, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Admin: &api.Admin{Venues: venues.NewService(st), Events: organiser.NewService(st), Store: st}}
	handler := srv.Handler()
	tok, err := issuer.Mint(session.Identity{UserID: "caps", DeviceID: "d", Roles: []session.Role{session.Organiser}, Org: "org_caps"}, time.Now())
	require.NoError(t, err)
	post := func(contentType string, body *countingBody) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "/v1/admin/venues?name=Hall&city=Ghent&timezone=Europe/Brussels", body)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		var p map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), rec.Body.String())
		return rec, p
	}
	requireTooLarge := func(rec *httptest.ResponseRecorder, p map[string]any, field string, limit int) {
		t.Helper()
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		require.Equal(t, "/problems/layout-too-large", p["type"])
		require.EqualValues(t, limit, p["limit"])
		require.Equal(t, field, p["errors"].([]any)[0].(map[string]any)["field"])
	}

	// Thirty megabytes of one row's seats: past the cap of 100,000 seats at
	// about three.
	js := &countingBody{head: `{"name": "Hall", "city": "Ghent", "timezone": "Europe/Brussels", "layout": {"sections": [
		{"id": "s", "kind": "seated", "category": "c", "rows": [{"label": "A", "seats": [{"number": 1, "x": 0, "y": 0}`,
		rep: `, {"number": 2, "x": 0, "y": 0}`, size: 30 << 20}
	rec, p := post("application/json", js)
	requireTooLarge(rec, p, "layout", venues.MaxSeats)
	require.Less(t, js.read, 4<<20, "the server read %d of %d bytes", js.read, js.size)

	csv := &countingBody{head: "section,kind,category,row,seat,x,y\n", rep: "s,seated,c,A,1,0,0\n", size: 30 << 20}
	rec, p = post("text/csv", csv)
	requireTooLarge(rec, p, "layout", venues.MaxSeats)
	require.Less(t, csv.read, 3<<20, "the server read %d of %d bytes", csv.read, csv.size)

	// A body past the size cap, however cheap to parse, stops at the cap.
	blank := &countingBody{head: `{"name": `, rep: strings.Repeat(" ", 4096), size: 40 << 20}
	rec, p = post("application/json", blank)
	requireTooLarge(rec, p, "body", venues.MaxFileBytes)
	require.LessOrEqual(t, blank.read, venues.MaxFileBytes+64<<10, "the server read %d of %d bytes", blank.read, blank.size)
}
