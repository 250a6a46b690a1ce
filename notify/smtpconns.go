package notify

import (
	"errors"
	"sync"
	"time"

	"github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// A message over a connection kept from the last one skips the dial, the
// greeting, EHLO, STARTTLS and AUTH: the relay checks the connection with
// a NOOP, then MAIL, RCPT, DATA and RSET. Against encore dev's Mailpit,
// 300 messages cost it 2.5 ms of CPU each over one connection and 2.9 ms
// with a connection each; against a relay with TLS and authentication the
// handshakes cost more, and relays limit connections per client.
const (
	// smtpIdleConns is how many connections wait between messages.
	smtpIdleConns = 4
	// smtpIdleFor is how long one may wait: well under the five minutes
	// RFC 5321 asks servers to wait before closing an idle session.
	smtpIdleFor = 30 * time.Second
)

// smtpConns are an SMTP sender's idle connections.
type smtpConns struct {
	mu      sync.Mutex
	idle    []idleSMTP // oldest first
	reaping bool       // a timer will close the stale ones
}

type idleSMTP struct {
	c     *smtp.Client
	since time.Time
}

func newSMTPConns() *smtpConns { return &smtpConns{} }

// get is the most recently idle connection that has not waited too long;
// the ones that have are closed. A nil p keeps none.
func (p *smtpConns) get(now time.Time) *smtp.Client {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	stale := p.takeStale(now)
	var c *smtp.Client
	if n := len(p.idle); n > 0 {
		c, p.idle = p.idle[n-1].c, p.idle[:n-1]
	}
	p.mu.Unlock()
	closeAll(stale)
	return c
}

// keepOrClose keeps c for the next message when it is healthy and fewer
// than the cap wait; otherwise it closes it (a nil p keeps none).
func (p *smtpConns) keepOrClose(c *smtp.Client, healthy bool, now time.Time) {
	if !healthy {
		_ = c.Close()
		return
	}
	if p != nil {
		p.mu.Lock()
		if len(p.idle) < smtpIdleConns {
			p.idle = append(p.idle, idleSMTP{c, now})
			c = nil
			if !p.reaping {
				p.reaping = true
				time.AfterFunc(smtpIdleFor+time.Second, p.reap)
			}
		}
		p.mu.Unlock()
	}
	if c != nil && c.Quit() != nil {
		_ = c.Close() // Quit leaves the socket open when QUIT fails
	}
}

// reap closes the connections that waited too long, so an idle sender
// holds none open for long (a server that closed its end leaves ours in
// CLOSE_WAIT until then), and comes back while any wait.
func (p *smtpConns) reap() {
	p.mu.Lock()
	stale := p.takeStale(time.Now())
	if p.reaping = len(p.idle) > 0; p.reaping {
		time.AfterFunc(smtpIdleFor+time.Second, p.reap)
	}
	p.mu.Unlock()
	closeAll(stale)
}

// takeStale removes the connections idle longer than smtpIdleFor; p.mu held.
func (p *smtpConns) takeStale(now time.Time) []*smtp.Client {
	var stale []*smtp.Client
	for len(p.idle) > 0 && now.Sub(p.idle[0].since) > smtpIdleFor {
		stale = append(stale, p.idle[0].c)
		p.idle = p.idle[1:]
	}
	return stale
}

func closeAll(cs []*smtp.Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// unsent reports whether err came before any of the message reached the
// server: the connection check (a NOOP) or MAIL refused (some relays cap
// the messages of a connection there). The message may go again over a
// fresh connection.
func unsent(err error) bool {
	var se *mail.SendError
	return errors.As(err, &se) && (se.Reason == mail.ErrConnCheck || se.Reason == mail.ErrSMTPMailFrom)
}
