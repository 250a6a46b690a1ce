// Package notify sends fans their emails: one MIME message per Message (a
// plain-text body, an HTML alternative, inline images such as the tickets'
// QR codes), built with go-mail and sent through an SMTP server, or written
// as the same .eml file into a local mailbox folder where there is no SMTP
// server at all (tests, encore api without one). Delivery with retries and
// a dead-letter list is the outbox's mail queue (outbox/mail.go), a Mailer
// in front of these.
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// Message is one email.
type Message struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	// Body is the plain-text part, always sent.
	Body string `json:"body"`
	// HTML is the HTML alternative of Body (empty: a text-only message).
	HTML string `json:"html,omitempty"`
	// Inline are images the HTML shows by "cid:" + CID.
	Inline []Image `json:"inline,omitempty"`
	// Key names the message for idempotent delivery (booking and kind): the
	// Message-ID is made from it, so a repeated send is the same message.
	Key string `json:"key"`
}

// Image is an inline image of a message.
type Image struct {
	CID  string `json:"cid"`
	Name string `json:"name"`
	// ContentType is "image/png" when empty.
	ContentType string `json:"content_type,omitempty"`
	Data        []byte `json:"data"`
}

// Mailer sends messages.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// ErrNoRecipient refuses a message without a valid To.
var ErrNoRecipient = errors.New("notify: no valid recipient")

// MessageID is the Message-ID (without angle brackets) of the message with
// key: the same key, the same ID, so mail clients fold a repeated delivery.
func MessageID(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.+=", r):
			return r
		}
		return '_'
	}, key) + "@encore"
}

// Build is the go-mail message of m from the sender from, dated now.
func Build(from string, m Message, now time.Time) (*mail.Msg, error) {
	// 8bit text parts (RFC 6152), so a .eml file or a server's log reads as
	// written; quoted-printable only when a line would pass SMTP's limit of
	// 998 bytes (a very long title, say).
	enc := mail.NoEncoding
	if longLine(m.Body) || longLine(m.HTML) {
		enc = mail.EncodingQP
	}
	msg := mail.NewMsg(mail.WithNoDefaultUserAgent(), mail.WithEncoding(enc))
	if err := msg.From(from); err != nil {
		return nil, fmt.Errorf("notify: sender %q: %w", from, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRecipient, err)
	}
	msg.Subject(m.Subject)
	msg.SetDateWithValue(now)
	msg.SetMessageIDWithValue(MessageID(m.Key))
	msg.SetBodyString(mail.TypeTextPlain, m.Body)
	if m.HTML != "" {
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	}
	for _, img := range m.Inline {
		ct := img.ContentType
		if ct == "" {
			ct = "image/png"
		}
		if err := msg.EmbedReader(img.Name, bytes.NewReader(img.Data), mail.WithFileContentID(img.CID),
			mail.WithFileContentType(mail.ContentType(ct))); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

// longLine says whether s has a line SMTP would refuse as 8bit.
func longLine(s string) bool {
	for line := range strings.Lines(s) {
		if len(line) > 900 {
			return true
		}
	}
	return false
}

// Render is the message as the bytes of a MIME message: what Mailbox writes
// and what an SMTP server receives.
func Render(from string, m Message, now time.Time) ([]byte, error) {
	msg, err := Build(from, m, now)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Mailbox writes each message as <Key>.eml into Dir: the dev "inbox".
// Writing the same key twice leaves one file.
type Mailbox struct {
	Dir string
	// From is the sender (empty: encore@localhost).
	From string
}

// Send writes the message atomically.
func (b Mailbox) Send(_ context.Context, m Message) error {
	from := b.From
	if from == "" {
		from = "encore@localhost"
	}
	raw, err := Render(from, m, time.Now())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return err
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, m.Key) + ".eml"
	tmp, err := os.CreateTemp(b.Dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(b.Dir, name))
}

// SMTP sends through an SMTP server.
type SMTP struct {
	// Host and Port of the server.
	Host string
	Port int
	// ImplicitTLS speaks TLS from the first byte (smtps, usually port 465);
	// otherwise STARTTLS is used when the server offers it.
	ImplicitTLS bool
	// User and Password authenticate when User is set.
	User, Password string
	From           string
	// Timeout bounds one delivery (0: 30s).
	Timeout time.Duration

	// conns keeps connections between messages (smtpconns.go); nil, as
	// in an SMTP written out, keeps none: a connection a message.
	conns *smtpConns
}

// ParseSMTPURL reads smtp://[user[:password]@]host[:port] (port 587 by
// default; STARTTLS when offered) or smtps://... (port 465; TLS from the
// start).
func ParseSMTPURL(raw, from string) (SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// The URL may carry a password: never echo it.
		return SMTP{}, errors.New("notify: SMTP URL does not parse")
	}
	s := SMTP{From: from, conns: newSMTPConns()}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port, s.ImplicitTLS = 465, true
	default:
		return SMTP{}, fmt.Errorf("notify: SMTP URL scheme %q: want smtp or smtps", u.Scheme)
	}
	s.Host = u.Hostname()
	if s.Host == "" {
		return SMTP{}, errors.New("notify: SMTP URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return SMTP{}, fmt.Errorf("notify: SMTP URL port %q", p)
		}
		s.Port = n
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}

// ParseSMTPAddr reads host:port (the older ENCORE_SMTP_ADDR): STARTTLS
// when offered.
func ParseSMTPAddr(addr, from, user, password string) (SMTP, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return SMTP{}, fmt.Errorf("notify: SMTP address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return SMTP{}, fmt.Errorf("notify: SMTP address %q: bad port", addr)
	}
	return SMTP{Host: host, Port: n, From: from, User: user, Password: password, conns: newSMTPConns()}, nil
}

// Send delivers one message, over a connection kept from an earlier one
// when there is one.
func (s SMTP) Send(ctx context.Context, m Message) error {
	msg, err := Build(s.From, m, time.Now())
	if err != nil {
		return err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	opts := []mail.Option{mail.WithPort(s.Port), mail.WithTimeout(timeout)}
	if s.ImplicitTLS {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if s.User != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.User), mail.WithPassword(s.Password))
	}
	c, err := mail.NewClient(s.Host, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err // a kept connection would not notice: refuse as a dial would
	}
	if kept := s.conns.get(time.Now()); kept != nil {
		err := sendOver(ctx, c, kept, msg)
		if err == nil || msg.IsDelivered() {
			// Taken by the server; only the RSET after it may have failed.
			s.conns.keepOrClose(kept, err == nil, time.Now())
			return nil
		}
		_ = kept.Close()
		if !unsent(err) {
			// The server may have the message: the caller's retry (or the
			// mail queue's) decides, as for a fresh connection's failure.
			return err
		}
		// Closed by the server while it waited, or refused at MAIL (a
		// relay's cap on messages a connection): nothing of the message
		// was sent, so a fresh connection takes it.
	}
	fresh, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("dial failed: %w", err)
	}
	err = sendOver(ctx, c, fresh, msg)
	if err != nil && !msg.IsDelivered() {
		_ = fresh.Close()
		return fmt.Errorf("send failed: %w", err)
	}
	s.conns.keepOrClose(fresh, err == nil, time.Now())
	return nil
}

// sendOver sends msg over conn within ctx: the connection's deadline is
// ctx's (go-mail sets its own only after its NOOP, so an idle connection's
// old one would fail that NOOP), and ctx's end closes it mid-send.
func sendOver(ctx context.Context, c *mail.Client, conn *smtp.Client, msg *mail.Msg) error {
	if d, ok := ctx.Deadline(); ok {
		if err := conn.UpdateDeadline(time.Until(d)); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	return c.SendWithSMTPClient(conn, msg)
}
