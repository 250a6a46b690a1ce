package system_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

// nightPrice is the rate of every night of the test hotel.
const nightPrice = 12000

// hotel creates a hotel (free cancellation until freeCancelDays before
// check-in, rooms at nightPrice) with nights from today for 60 days and
// returns its ID.
func (e *e2e) hotel(freeCancelDays int) string {
	e.t.Helper()
	id := "prp_" + testenv.RandomSuffix()
	require.NoError(e.t, e.store.Hotels.CreateProperty(context.Background(), store.PropertySpec{ID: id, Name: "Hotel " + id, City: "C",
		Currency: "EUR", FreeCancelDays: freeCancelDays,
		RoomTypes: []store.RoomTypeSpec{{ID: "double", Name: "Double", MaxGuests: 2, Allotment: 5, Price: nightPrice}}},
		today(), 60))
	return id
}

func today() time.Time { return time.Now().UTC().Truncate(24 * time.Hour) }

// day is the date n days from today, as the API takes it.
func day(n int) string { return today().AddDate(0, 0, n).Format(time.DateOnly) }

// holdStay holds one room at property from checkin for nights nights, with
// the seats of e's event when seats are given (a package), and returns the
// hold's ID.
func (e *e2e) holdStay(fan, property string, checkin, nights int, seats ...string) string {
	e.t.Helper()
	body := map[string]any{"stays": []map[string]any{{"property_id": property, "room_type": "double",
		"checkin": day(checkin), "checkout": day(checkin + nights), "rooms": 1}}}
	if len(seats) > 0 {
		body["event_id"], body["seat_ids"] = e.eventID, seats
	}
	status, h := e.call(http.MethodPost, "/v1/holds", fan, body)
	require.Equal(e.t, http.StatusCreated, status, "%v", h)
	return h["hold_id"].(string)
}

// checkout checks the hold out with the card and returns the intent's ID.
func (e *e2e) checkout(fan, id, card string) string {
	e.t.Helper()
	status, co := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": card})
	require.Equal(e.t, http.StatusOK, status, "%v", co)
	return co["payment"].(map[string]any)["intent_id"].(string)
}

// nightCounters reads held and sold of property's night n days from today.
func (e *e2e) nightCounters(property string, n int) (held, sold int) {
	e.t.Helper()
	rn, err := e.store.Hotels.RoomNightCounters(context.Background(), property, "double", today().AddDate(0, 0, n))
	require.NoError(e.t, err)
	return rn.Held, rn.Sold
}

// sandboxList reads a list of the payment sandbox (refunds, events).
func (p provider) sandboxList(path string) []map[string]any {
	e := p.e
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.pspURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+system.SandboxKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var page struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&page))
	return page.Data
}

// refundAmounts lists the amounts of the sandbox's refunds of intentID.
func (p provider) refundAmounts(intentID string) []int64 {
	var out []int64
	for _, r := range p.sandboxList("/v1/refunds?limit=100&payment_intent=" + intentID) {
		out = append(out, int64(r["amount"].(float64)))
	}
	return out
}

// intentEvents counts the sandbox's events of typ about intentID.
func (p provider) intentEvents(typ, intentID string) int {
	n := 0
	for _, ev := range p.sandboxList("/v1/events?limit=100") {
		obj := ev["data"].(map[string]any)["object"].(map[string]any)
		if ev["type"] == typ && obj["id"] == intentID {
			n++
		}
	}
	return n
}

// mailTo reads the one message in the development mailbox that mentions id.
func (e *e2e) mailAbout(id string) string {
	e.t.Helper()
	var found string
	require.Eventually(e.t, func() bool {
		mails, _ := filepath.Glob(filepath.Join(e.mailbox, "mailbox", "*.eml"))
		for _, m := range mails {
			b, _ := os.ReadFile(m)
			if strings.Contains(string(b), id) {
				found = string(b)
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	return found
}

// requireReconciled runs the payment reconciliation over the sandbox's
// payments: every captured payment must match its booking and refunds.
func (e *e2e) requireReconciled() {
	e.t.Helper()
	rep, err := e.reconcile(context.Background(), time.Hour)
	require.NoError(e.t, err)
	require.NotZero(e.t, rep.Captured)
	require.Empty(e.t, rep.Mismatches)
}
