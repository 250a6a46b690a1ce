package notify

import (
	"bytes"
	"embed"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

// The HTML templates escape by context (html/template); the text ones
// write what they are given, for a text/plain part nothing interprets.
var (
	htmlTemplates = htmltemplate.Must(htmltemplate.ParseFS(templateFiles, "templates/*.html.tmpl"))
	textTemplates = texttemplate.Must(texttemplate.ParseFS(templateFiles, "templates/*.txt.tmpl"))
)

// Line is one line of a receipt, amounts already formatted (money.Format).
type Line struct {
	Label    string
	Quantity int
	Unit     string
	Amount   string
}

// Confirmation is what the confirmation of a sale says.
type Confirmation struct {
	BookingID  string
	EventTitle string
	Venue      string // name and city
	When       string // date and time with the venue's zone
	// Seats are section/row/seat labels, or "General admission ×N".
	Seats []string
	Lines []Line
	// Discount and Fees are formatted amounts, empty when none.
	Discount, PromoCode, Fees string
	Total                     string
	// Card is the brand and last four of the card paid with ("Visa ••••
	// 4242"), empty when the provider did not say.
	Card string
	// Vouchers are a package's hotel stays, one line each.
	Vouchers []string
	// BookingURL is the web app's page of the booking (its tickets' live
	// codes); TicketsURL the fan's tickets. Empty: no link.
	BookingURL, TicketsURL string
	// Resent marks a copy support sent again.
	Resent bool
}

// Cancellation is what the message of a cancelled booking says.
type Cancellation struct {
	BookingID  string
	EventTitle string
	When       string
	// Refund is the formatted amount refunded, empty when nothing was paid.
	Refund string
	// Reason is why, in the words of who cancelled (empty: the fan did).
	Reason     string
	BookingURL string
}

// qrCID is the Content-ID of the confirmation's QR image.
const qrCID = "booking-qr@encore"

// qrEmailPixels is the side of the confirmation's QR image.
const qrEmailPixels = 256

// ConfirmationMessage renders the confirmation to to under key. The QR code
// opens the booking's page, where the tickets' codes rotate: a code printed
// into an email would be a copy that never expires.
func ConfirmationMessage(to, key string, c Confirmation) (Message, error) {
	m := Message{To: to, Key: key, Subject: "Your tickets for " + oneLine(c.EventTitle)}
	if c.Resent {
		m.Subject += " (copy)"
	}
	var qr []byte
	if c.BookingURL != "" {
		png, err := QRPNG(c.BookingURL, qrEmailPixels)
		if err != nil {
			return Message{}, err
		}
		qr = png
		m.Inline = []Image{{CID: qrCID, Name: "booking-qr.png", ContentType: "image/png", Data: png}}
	}
	data := struct {
		Confirmation
		QRCID string
	}{c, ""}
	if qr != nil {
		data.QRCID = qrCID
	}
	var err error
	if m.Body, m.HTML, err = render("confirmation", data); err != nil {
		return Message{}, err
	}
	return m, nil
}

// CancellationMessage renders the cancellation to to under key.
func CancellationMessage(to, key string, c Cancellation) (Message, error) {
	m := Message{To: to, Key: key, Subject: "Your booking was cancelled"}
	if c.EventTitle != "" {
		m.Subject = "Your booking for " + oneLine(c.EventTitle) + " was cancelled"
	}
	var err error
	if m.Body, m.HTML, err = render("cancellation", c); err != nil {
		return Message{}, err
	}
	return m, nil
}

func render(name string, data any) (text, html string, err error) {
	var t, h bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&t, name+".txt.tmpl", data); err != nil {
		return "", "", err
	}
	if err := htmlTemplates.ExecuteTemplate(&h, name+".html.tmpl", data); err != nil {
		return "", "", err
	}
	return t.String(), h.String(), nil
}

// oneLine keeps a header on one line whatever a title holds.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
