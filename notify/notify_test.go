package notify_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/notify"
)

func sampleConfirmation() notify.Confirmation {
	return notify.Confirmation{
		BookingID: "b-1", EventTitle: "Night Jazz", Venue: "Hall, Lisbon", When: "Fri 5 Jun 2026, 20:00 WEST (UTC+01:00)",
		Seats: []string{"Stalls, Row A, Seat 1"},
		Lines: []notify.Line{{Label: "Stalls", Quantity: 1, Unit: "EUR 75.00", Amount: "EUR 75.00"}},
		Total: "EUR 75.00", Card: "Visa •••• 4242",
		BookingURL: "https://tickets.example/#/booking/b-1", TicketsURL: "https://tickets.example/#/tickets",
	}
}

// parts walks a MIME message and returns each leaf part's content type and
// decoded body, with the Content-ID of inline ones.
type part struct {
	ctype, cid string
	body       []byte
}

func walk(t *testing.T, ctype string, body io.Reader, out *[]part) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	require.NoError(t, err)
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := io.ReadAll(body)
		require.NoError(t, err)
		*out = append(*out, part{ctype: mt, body: b})
		return
	}
	*out = append(*out, part{ctype: mt})
	r := multipart.NewReader(body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		var rd io.Reader = p
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			rd = decodeBase64(t, p)
		} else if p.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			rd = qpReader(p)
		}
		before := len(*out)
		walk(t, p.Header.Get("Content-Type"), rd, out)
		if len(*out) > before {
			(*out)[len(*out)-1].cid = strings.Trim(p.Header.Get("Content-ID"), "<>")
		}
	}
}

func parse(t *testing.T, raw []byte) (*mail.Message, []part) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	var ps []part
	var body io.Reader = msg.Body
	if msg.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
		body = qpReader(body)
	}
	walk(t, msg.Header.Get("Content-Type"), body, &ps)
	return msg, ps
}

func find(ps []part, ctype string) *part {
	for i := range ps {
		if ps[i].ctype == ctype {
			return &ps[i]
		}
	}
	return nil
}

func TestConfirmationIsMultipartAlternativeWithAnInlineQR(t *testing.T) {
	t.Parallel()
	m, err := notify.ConfirmationMessage("fan@example.com", "b-1-confirmation", sampleConfirmation())
	require.NoError(t, err)
	raw, err := notify.Render("tickets@encore.invalid", m, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	msg, ps := parse(t, raw)
	require.Equal(t, "<b-1-confirmation@encore>", msg.Header.Get("Message-ID"), "the key names the message")
	require.Equal(t, "Your tickets for Night Jazz", msg.Header.Get("Subject"))
	require.NotNil(t, find(ps, "multipart/alternative"), "text and HTML are alternatives")
	text, html, png := find(ps, "text/plain"), find(ps, "text/html"), find(ps, "image/png")
	require.NotNil(t, text)
	require.NotNil(t, html)
	require.NotNil(t, png, "the QR is embedded")
	require.Equal(t, "booking-qr@encore", png.cid)
	require.True(t, bytes.HasPrefix(png.body, []byte("\x89PNG")), "the QR is a PNG")
	require.Contains(t, string(html.body), `href="https://tickets.example/#/booking/b-1"`)
	require.Contains(t, string(html.body), `src="cid:booking-qr@encore"`)
	require.Contains(t, string(html.body), "EUR 75.00")
	require.Contains(t, string(text.body), "Total  EUR 75.00")
	require.Contains(t, string(text.body), "Paid with Visa •••• 4242")
	require.Contains(t, string(text.body), "https://tickets.example/#/booking/b-1")
}

func TestHTMLEscapesWhatOrganisersAndFansWrite(t *testing.T) {
	t.Parallel()
	c := sampleConfirmation()
	c.EventTitle = `<script>alert("x")</script>`
	c.Venue = `Hall "A" & <b>B</b>`
	m, err := notify.ConfirmationMessage("fan@example.com", "k", c)
	require.NoError(t, err)
	require.NotContains(t, m.HTML, "<script>")
	require.Contains(t, m.HTML, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	require.Contains(t, m.HTML, "Hall &#34;A&#34; &amp; &lt;b&gt;B&lt;/b&gt;")
	require.Contains(t, m.Body, `<script>alert("x")</script>`, "the text part is text, not markup")

	cancel, err := notify.CancellationMessage("fan@example.com", "k2", notify.Cancellation{BookingID: "b", EventTitle: "<script>", Reason: "<img src=x>"})
	require.NoError(t, err)
	require.NotContains(t, cancel.HTML, "<script>")
	require.NotContains(t, cancel.HTML, "<img src=x>")
}

func TestAJavascriptLinkIsNotALink(t *testing.T) {
	t.Parallel()
	c := sampleConfirmation()
	c.BookingURL = "javascript:alert(1)"
	m, err := notify.ConfirmationMessage("fan@example.com", "k", c)
	require.NoError(t, err)
	require.NotContains(t, m.HTML, `href="javascript:`)
}

func TestCancellationSaysTheRefund(t *testing.T) {
	t.Parallel()
	m, err := notify.CancellationMessage("fan@example.com", "b-cancellation", notify.Cancellation{BookingID: "b",
		EventTitle: "Night Jazz", Refund: "JPY 15000", Reason: "event cancelled", BookingURL: "https://t.example/#/booking/b"})
	require.NoError(t, err)
	require.Equal(t, "Your booking for Night Jazz was cancelled", m.Subject)
	require.Contains(t, m.Body, "JPY 15000 is refunded")
	require.Contains(t, m.HTML, `<strong class="refund">JPY 15000</strong>`)
	require.Contains(t, m.HTML, `href="https://t.example/#/booking/b"`)
}

func TestMailboxWritesTheSameMIMEMessageOncePerKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := notify.ConfirmationMessage("fan@example.com", "b-1-confirmation", sampleConfirmation())
	require.NoError(t, err)
	box := notify.Mailbox{Dir: dir}
	require.NoError(t, box.Send(context.Background(), m))
	require.NoError(t, box.Send(context.Background(), m))
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	msg, ps := parse(t, raw)
	require.Equal(t, "<fan@example.com>", msg.Header.Get("To"))
	require.NotNil(t, find(ps, "text/html"))
	require.NotNil(t, find(ps, "image/png"))
}

func TestABadRecipientIsRefused(t *testing.T) {
	t.Parallel()
	_, err := notify.Render("tickets@encore.invalid", notify.Message{To: "not an address", Key: "k"}, time.Now())
	require.ErrorIs(t, err, notify.ErrNoRecipient)
}

func TestParseSMTPURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url string
		want      notify.SMTP
		err       bool
	}{
		{"smtp defaults to the submission port", "smtp://mail.example", notify.SMTP{Host: "mail.example", Port: 587}, false},
		{"smtps defaults to 465 with TLS from the start", "smtps://mail.example", notify.SMTP{Host: "mail.example", Port: 465, ImplicitTLS: true}, false},
		{"user and password are read", "smtp://u%40x:p%3Aw@mail.example:2525", notify.SMTP{Host: "mail.example", Port: 2525, User: "u@x", Password: "p:w"}, false},
		{"a loopback catcher", "smtp://127.0.0.1:1025", notify.SMTP{Host: "127.0.0.1", Port: 1025}, false},
		{"another scheme is refused", "http://mail.example", notify.SMTP{}, true},
		{"no host is refused", "smtp://:25", notify.SMTP{}, true},
		{"a bad port is refused", "smtp://mail.example:99999", notify.SMTP{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := notify.ParseSMTPURL(c.url, "")
			if c.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			// The settings, without the connections it keeps.
			require.Equal(t, c.want, notify.SMTP{Host: got.Host, Port: got.Port, ImplicitTLS: got.ImplicitTLS,
				User: got.User, Password: got.Password, From: got.From, Timeout: got.Timeout})
		})
	}
}

func TestAnSMTPURLErrorDoesNotEchoThePassword(t *testing.T) {
	t.Parallel()
	_, err := notify.ParseSMTPURL("smtp://user:s3cret@host:bad port", "")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func FuzzParseSMTPURL(f *testing.F) {
	for _, s := range []string{"smtp://a:b@host:25", "smtps://host", "smtp://[::1]:1025", "x", "smtp://host:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := notify.ParseSMTPURL(raw, "")
		if err != nil {
			return
		}
		if s.Host == "" || s.Port <= 0 || s.Port > 65535 {
			t.Fatalf("accepted %q as %+v", raw, s)
		}
	})
}

func TestALineTooLongForSMTPIsQuotedPrintable(t *testing.T) {
	t.Parallel()
	short, err := notify.Render("t@encore.invalid", notify.Message{To: "fan@example.com", Key: "k", Body: "hello"}, time.Now())
	require.NoError(t, err)
	require.Contains(t, string(short), "Content-Transfer-Encoding: 8bit")
	long, err := notify.Render("t@encore.invalid", notify.Message{To: "fan@example.com", Key: "k", Body: strings.Repeat("a", 2000)}, time.Now())
	require.NoError(t, err)
	require.Contains(t, string(long), "Content-Transfer-Encoding: quoted-printable")
	for line := range strings.Lines(string(long)) {
		require.LessOrEqual(t, len(line), 998)
	}
	_, ps := parse(t, long)
	require.Equal(t, strings.Repeat("a", 2000), strings.TrimSpace(string(find(ps, "text/plain").body)))
}
