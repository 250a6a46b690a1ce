package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/freeport"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/vocab"
)

// mailpit is a Mailpit of the test's own, built from tools/mailpit as
// encore dev builds it, on free loopback ports.
type mailpit struct {
	t    *testing.T
	smtp string
	api  string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := freeport.Take("127.0.0.1", 1)
	require.NoError(t, err)
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

func startMailpit(t *testing.T) *mailpit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := devstack.BuildMailpit(ctx, filepath.Join(testenv.RepoRoot(), ".encore"), filepath.Join(testenv.RepoRoot(), "tools", "mailpit"), io.Discard)
	require.NoError(t, err)
	var mp *devstack.Mailpit
	for try := 0; ; try++ { // a free port may be taken between the probe and the start
		mp, err = devstack.StartMailpit(ctx, bin, t.TempDir(), freeAddr(t), freeAddr(t), io.Discard)
		if err == nil || try == 3 {
			break
		}
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = mp.Stop() })
	return &mailpit{t: t, smtp: mp.SMTPAddr, api: mp.URL()}
}

type mailpitMessage struct {
	ID, MessageID, Subject, Text, HTML string
	To                                 []struct{ Address string }
	Inline                             []struct{ ContentType, ContentID string }
}

func (m *mailpit) get(path string, out any) {
	m.t.Helper()
	resp, err := http.Get(m.api + path)
	require.NoError(m.t, err)
	defer resp.Body.Close()
	require.Equal(m.t, http.StatusOK, resp.StatusCode, path)
	require.NoError(m.t, json.NewDecoder(resp.Body).Decode(out))
}

// message waits for the message whose Message-ID names key and reads it
// whole through Mailpit's API.
func (m *mailpit) message(key string) mailpitMessage {
	m.t.Helper()
	want := notify.MessageID(key)
	var id string
	require.Eventually(m.t, func() bool {
		var list struct{ Messages []mailpitMessage }
		m.get("/api/v1/messages?limit=200", &list)
		for _, s := range list.Messages {
			if strings.Trim(s.MessageID, "<>") == want {
				id = s.ID
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "message %s in Mailpit", want)
	var msg mailpitMessage
	m.get("/api/v1/message/"+id, &msg)
	return msg
}

// sendThrough makes the saga's emails go through the SMTP server at addr,
// as ENCORE_SMTP_URL does.
func (e *e2e) sendThrough(addr string) {
	cfg := e.cfg
	cfg.SMTPURL = config.Secret("smtp://" + addr)
	e.stopWorker()
	e.deps.Booking.Mailer = system.Mailer(cfg, e.store)
	e.startWorker()
}

// currencyEvent is an event of its own in currency at a venue in zone,
// one section of base price.
func (e *e2e) currencyEvent(title, currency, zone string, base int64) string {
	e.t.Helper()
	id := "evt_" + testenv.RandomSuffix()
	venue := "ven_" + id[4:]
	require.NoError(e.t, demo.Create(context.Background(), e.store.Pool(), demo.Event{ID: id, Title: title, VenueID: venue,
		VenueName: "Hall " + currency, City: "City", Currency: currency, StartsAt: time.Date(2031, 3, 14, 10, 30, 0, 0, time.UTC),
		OnsaleAt: time.Now().Add(-time.Hour), Sections: []demo.Section{{ID: "sec_" + id[4:], Name: "Stalls", Rows: 2, PerRow: 4, BasePrice: base}}}))
	_, err := e.store.Pool().Exec(context.Background(), `UPDATE venues SET timezone = $2 WHERE id = $1`, venue, zone)
	require.NoError(e.t, err)
	return id
}

// buyAt books seat A-2 (at the section's base price) of event and waits for the email.
func (e *e2e) buyAt(fan, event string) string {
	e.t.Helper()
	status, h := e.call(http.MethodPost, "/v1/holds", fan, map[string]any{"event_id": event,
		"seat_ids": []string{demo.SeatID("sec_"+event[4:], 0, 2)}})
	require.Equal(e.t, http.StatusCreated, status, "%v", h)
	id := h["hold_id"].(string)
	status, co := e.call(http.MethodPost, "/v1/holds/"+id+"/checkout", fan, map[string]any{"payment_method": "pm_card_visa"})
	require.Equal(e.t, http.StatusOK, status, "%v", co)
	e.waitStatus(fan, id, vocab.BookingPaid, 30*time.Second)
	e.waitNotified(id)
	return id
}

// A paid booking's confirmation reaches a real SMTP server (Mailpit, as in
// encore dev) as multipart HTML and text with the QR inline; its HTML links
// to the web app's booking page, and each currency reads with its own
// minor unit: yen without decimals, dinars with three.
func TestAPaidBookingsConfirmationReachesMailpitWithTheWebAppLinkAndAmountsPerCurrency(t *testing.T) {
	t.Parallel()
	mp := startMailpit(t)
	e := newE2E(t)
	e.sendThrough(mp.smtp)
	cases := []struct {
		currency, zone, when string
		base                 int64
		total                string
	}{
		{"JPY", "Asia/Tokyo", "Fri 14 Mar 2031, 19:30 JST (UTC+09:00)", 15000, "JPY 15000"},
		{"KWD", "Asia/Kuwait", "Fri 14 Mar 2031, 13:30 +03 (UTC+03:00)", 1500, "KWD 1.500"},
	}
	for _, c := range cases {
		event := e.currencyEvent("Night in "+c.currency+" <b>live</b>", c.currency, c.zone, c.base)
		fan := e.fanWithEmail("mail"+strings.ToLower(c.currency), "fan-"+strings.ToLower(c.currency)+"@example.com")
		id := e.buyAt(fan, event)

		msg := mp.message(id + "-confirmation")
		require.Equal(t, "fan-"+strings.ToLower(c.currency)+"@example.com", msg.To[0].Address)
		require.Contains(t, msg.HTML, `href="`+e.cfg.PublicURL+`/#/booking/`+id+`"`, "the HTML links to the web app's booking page")
		require.NotContains(t, msg.HTML, "/v1/bookings/", "no link to the API")
		require.Contains(t, msg.HTML, "Night in "+c.currency+" &lt;b&gt;live&lt;/b&gt;", "the title, escaped")
		require.Contains(t, msg.HTML, `class="total">`+c.total+`<`, "the total in the currency's minor unit")
		require.Contains(t, msg.Text, "Total  "+c.total)
		require.Contains(t, msg.Text, "Stalls, Row A, Seat 2", "the seat by its labels")
		require.Contains(t, msg.Text, c.when, "the time in the venue's zone")
		require.Contains(t, msg.Text, "Paid with Visa •••• 4242", "the card as the provider charged it")
		var brand, last4 string
		require.NoError(t, e.store.Pool().QueryRow(context.Background(),
			`SELECT card_brand, card_last4 FROM payments WHERE reservation_id = $1`, id).Scan(&brand, &last4))
		require.Equal(t, []string{"visa", "4242"}, []string{brand, last4}, "recorded from the capture's answer, not read again")
		require.Len(t, msg.Inline, 1)
		require.Equal(t, "image/png", msg.Inline[0].ContentType)
		require.Contains(t, msg.HTML, `src="cid:`+msg.Inline[0].ContentID+`"`, "the QR shows inline")
	}
}

// A message whose every attempt failed is on support's dead-letter list;
// support resends it and the queue delivers it.
func TestSupportSeesADeadEmailAndResendsIt(t *testing.T) {
	t.Parallel()
	mp := startMailpit(t)
	e := newE2E(t)
	ctx := context.Background()
	closed := freeAddr(t) // nothing listens: every attempt fails
	refused, err := notify.ParseSMTPURL("smtp://"+closed, "tickets@encore.invalid")
	require.NoError(t, err)
	key := "dead-" + testenv.RandomSuffix()
	q := &outbox.Mail{Store: e.store, Transport: refused, MaxAttempts: 1}
	require.NoError(t, q.Send(ctx, notify.Message{To: "fan@example.com", Subject: "Your tickets", Body: "hello", Key: key}))

	support := e.staff("sam", "", session.Support)
	status, list := e.call(http.MethodGet, "/v1/support/emails?status=DEAD", support, nil)
	require.Equal(t, http.StatusOK, status, "%v", list)
	var id float64
	for _, m := range list["emails"].([]any) {
		if m := m.(map[string]any); m["key"] == key {
			id = m["id"].(float64)
			require.Equal(t, "DEAD", m["status"])
			require.NotEmpty(t, m["last_error"])
		}
	}
	require.NotZero(t, id, "the dead email is listed")

	status, _ = e.call(http.MethodGet, "/v1/support/emails?status=DEAD", e.fan("nosy"), nil)
	require.Equal(t, http.StatusForbidden, status, "a fan sees no one's emails")
	status, p := e.call(http.MethodGet, "/v1/support/emails?status=LOST", support, nil)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, fmt.Sprint(p), "status", "the problem names the field")

	path := fmt.Sprintf("/v1/support/emails/%d/resend", int64(id))
	status, r := e.call(http.MethodPost, path, support, nil)
	require.Equal(t, http.StatusAccepted, status, "%v", r)
	status, _ = e.call(http.MethodPost, path, support, nil)
	require.Equal(t, http.StatusConflict, status, "a pending email is not resent twice")
	status, _ = e.call(http.MethodPost, "/v1/support/emails/999999999/resend", support, nil)
	require.Equal(t, http.StatusNotFound, status)

	// The worker's loop, now that the server is back.
	good, err := notify.ParseSMTPURL("smtp://"+mp.smtp, "tickets@encore.invalid")
	require.NoError(t, err)
	_, err = (&outbox.Mail{Store: e.store, Transport: good}).Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, "hello", strings.TrimSpace(mp.message(key).Text))
	status, list = e.call(http.MethodGet, "/v1/support/emails?status=SENT", support, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, fmt.Sprint(list["emails"]), key)
}

// A fan who cancels their own paid booking is told, with the amount
// refunded in the event's currency.
func TestAFansOwnCancellationSendsAnEmailWithTheRefund(t *testing.T) {
	t.Parallel()
	mp := startMailpit(t)
	e := newE2E(t)
	e.sendThrough(mp.smtp)
	event := e.currencyEvent("Dinar Night", "KWD", "Asia/Kuwait", 12345)
	fan := e.fanWithEmail("canceller", "canceller@example.com")
	id := e.buyAt(fan, event)
	status, b := e.call(http.MethodPost, "/v1/bookings/"+id+"/cancel", fan, nil, "Idempotency-Key", "cancel-"+id)
	require.Equal(t, http.StatusOK, status, "%v", b)
	require.Equal(t, string(vocab.BookingRefunded), b["status"])

	msg := mp.message(id + "-cancellation")
	require.Equal(t, "Your booking for Dinar Night was cancelled", msg.Subject)
	require.Contains(t, msg.Text, "KWD 12.345 is refunded")
	require.Contains(t, msg.HTML, `<strong class="refund">KWD 12.345</strong>`)
	require.Contains(t, msg.HTML, `href="`+e.cfg.PublicURL+`/#/booking/`+id+`"`)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM mail_queue WHERE key = $1`, id+"-cancellation"), "one email, once")
}
