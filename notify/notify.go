// Package notify sends fans their confirmations: through an SMTP server in
// production, into a local mailbox folder in development. A failed send is
// retried by the saga with backoff and never blocks or undoes a sale.
package notify

import (
	"context"
	"fmt"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Message is one email.
type Message struct {
	To, Subject, Body string
	// Key names the message for idempotent delivery (booking and kind).
	Key string
}

// Mailer sends messages.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Mailbox writes each message as <Key>.eml into Dir: the dev "inbox".
// Writing the same key twice leaves one file.
type Mailbox struct{ Dir string }

// Send writes the message atomically.
func (b Mailbox) Send(_ context.Context, m Message) error {
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
	if _, err := tmp.WriteString(render("encore@localhost", m)); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(b.Dir, name))
}

// SMTP sends through an SMTP server (host:port), without auth when User is
// empty.
type SMTP struct {
	Addr, From, User, Password string
}

// Send delivers one message.
func (s SMTP) Send(_ context.Context, m Message) error {
	var auth smtp.Auth
	if s.User != "" {
		host, _, _ := strings.Cut(s.Addr, ":")
		auth = smtp.PlainAuth("", s.User, s.Password, host)
	}
	return smtp.SendMail(s.Addr, auth, s.From, []string{m.To}, []byte(render(s.From, m)))
}

func render(from string, m Message) string {
	return fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@encore>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n",
		from, m.To, m.Subject, time.Now().UTC().Format(time.RFC1123Z), m.Key, m.Body)
}
