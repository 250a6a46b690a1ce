package notify

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wneessen/go-mail/smtp"
)

// smtpServer is an SMTP server on loopback that takes every message and
// counts connections and messages. closeIdle > 0 closes a connection, as
// a server's idle timeout does, once it has taken that many messages;
// mailCap > 0 refuses MAIL (421) on a connection that took that many, as
// relays that cap a connection's messages do; refuseData refuses every
// message at the end of its DATA.
type smtpServer struct {
	addr       string
	closeIdle  int
	mailCap    int
	refuseData atomic.Bool

	mu       sync.Mutex
	conns    int
	open     []net.Conn
	messages []string
}

func startSMTPServer(t *testing.T, opts ...func(*smtpServer)) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &smtpServer{addr: ln.Addr().String()}
	for _, o := range opts {
		o(s)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open { // the sender keeps its idle ones open
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.open = append(s.open, c)
			s.mu.Unlock()
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 test ESMTP")
	taken := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb := strings.ToUpper(strings.Fields(line + " x")[0])
		switch verb {
		case "EHLO", "HELO":
			say("250-test")
			say("250 8BITMIME")
		case "MAIL":
			if s.mailCap > 0 && taken >= s.mailCap {
				say("421 4.7.0 too many messages on this connection")
				continue
			}
			say("250 ok")
		case "RCPT", "NOOP":
			say("250 ok")
		case "RSET":
			say("250 ok")
			if s.closeIdle > 0 && taken >= s.closeIdle {
				return
			}
		case "DATA":
			say("354 go on")
			var msg strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				msg.WriteString(l)
			}
			if s.refuseData.Load() {
				say("554 refused")
				continue
			}
			s.mu.Lock()
			s.messages = append(s.messages, msg.String())
			s.mu.Unlock()
			taken++
			say("250 taken")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 no")
		}
	}
}

func (s *smtpServer) counts() (conns, messages int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, len(s.messages)
}

func testSender(t *testing.T, s *smtpServer) SMTP {
	t.Helper()
	sender, err := ParseSMTPURL("smtp://"+s.addr, "tickets@encore.test")
	require.NoError(t, err)
	return sender
}

func testMessage(i int) Message {
	return Message{To: fmt.Sprintf("fan%d@example.com", i), Key: fmt.Sprintf("k%d", i), Subject: "Your tickets", Body: "Confirmed."}
}

func TestMessagesInARowUseAsFewConnectionsAsTheServerAllowsAndArriveOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		server   func(*smtpServer)
		n, conns int
	}{
		{"one after another share a connection", func(*smtpServer) {}, 3, 1},
		// The check before MAIL fails on the closed one: sent afresh.
		{"a connection the server closed while it waited is replaced", func(s *smtpServer) { s.closeIdle = 1 }, 3, 3},
		// A relay's cap: 421 at MAIL, before anything of the message.
		{"a message refused at MAIL on a kept connection goes over a fresh one", func(s *smtpServer) { s.mailCap = 2 }, 5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startSMTPServer(t, tc.server)
			sender := testSender(t, srv)
			for i := range tc.n {
				require.NoError(t, sender.Send(context.Background(), testMessage(i)))
			}
			conns, messages := srv.counts()
			require.Equal(t, tc.n, messages, "each message taken once")
			require.Equal(t, tc.conns, conns)
		})
	}
}

func TestConcurrentMessagesAllArriveOverFewerConnectionsThanMessages(t *testing.T) {
	t.Parallel()
	srv := startSMTPServer(t)
	sender := testSender(t, srv)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				errs <- sender.Send(context.Background(), testMessage(g*5+i))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	conns, messages := srv.counts()
	require.Equal(t, 40, messages)
	require.Less(t, conns, 40)
	sender.conns.mu.Lock()
	require.LessOrEqual(t, len(sender.conns.idle), smtpIdleConns, "no more than the cap wait")
	sender.conns.mu.Unlock()
}

func TestAConnectionIdleTooLongIsClosedNotReused(t *testing.T) {
	t.Parallel()
	srv := startSMTPServer(t)
	conn, err := net.Dial("tcp", srv.addr)
	require.NoError(t, err)
	c, err := smtp.NewClient(conn, "127.0.0.1")
	require.NoError(t, err)
	p := newSMTPConns()
	t0 := time.Now()
	p.keepOrClose(c, true, t0)
	require.Same(t, c, p.get(t0.Add(smtpIdleFor)), "still fresh at the limit")
	p.keepOrClose(c, true, t0)
	require.Nil(t, p.get(t0.Add(smtpIdleFor+time.Second)))
	require.Error(t, c.Noop(), "the stale connection is closed")
}

func TestAConnectionIdleLongerThanTheSendTimeoutIsStillReused(t *testing.T) {
	t.Parallel()
	srv := startSMTPServer(t)
	sender := testSender(t, srv)
	sender.Timeout = 300 * time.Millisecond // the connection's deadline ran out while it waited
	require.NoError(t, sender.Send(context.Background(), testMessage(0)))
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, sender.Send(context.Background(), testMessage(1)))
	conns, messages := srv.counts()
	require.Equal(t, 2, messages)
	require.Equal(t, 1, conns)
}

func TestAnEndedContextSendsNothingOverAKeptConnection(t *testing.T) {
	t.Parallel()
	srv := startSMTPServer(t)
	sender := testSender(t, srv)
	require.NoError(t, sender.Send(context.Background(), testMessage(0)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, sender.Send(ctx, testMessage(1)), context.Canceled)
	_, messages := srv.counts()
	require.Equal(t, 1, messages)
}

func TestAMessageRefusedAfterMailIsNotSentAgain(t *testing.T) {
	t.Parallel()
	srv := startSMTPServer(t)
	sender := testSender(t, srv)
	require.NoError(t, sender.Send(context.Background(), testMessage(0)))
	srv.refuseData.Store(true)
	require.Error(t, sender.Send(context.Background(), testMessage(1)))
	conns, messages := srv.counts()
	require.Equal(t, 1, messages)
	require.Equal(t, 1, conns, "no second try over a fresh connection")
}
