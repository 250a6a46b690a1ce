package outbox_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/outbox"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// refusingSMTP is an SMTP server that is there but refuses every session,
// as one under maintenance does.
func refusingSMTP(t *testing.T) notify.SMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("421 4.3.2 service not available, try later\r\n"))
			_, _ = bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	return notify.SMTP{Host: host, Port: p, From: "tickets@encore.invalid", Timeout: 2 * time.Second}
}

func message(key string) notify.Message {
	return notify.Message{To: "fan@example.com", Subject: "Your tickets", Body: "hello", HTML: "<p>hello</p>", Key: key}
}

func mails(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	require.NoError(t, err)
	return files
}

func TestAMessageThatFailsEveryAttemptIsDeadAndResendDeliversIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(outboxDB(t), store.Options{})
	refusing := refusingSMTP(t)
	q := &outbox.Mail{Store: st, Transport: refusing, MaxAttempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

	require.NoError(t, q.Send(ctx, message("b1-confirmation")), "a refused attempt is the queue's to retry, not the caller's")
	rows, err := st.Mail().List(ctx, vocab.MailPending, 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, 1, rows[0].Attempts, "Send tried at once")
	require.Contains(t, rows[0].LastError, "421")

	require.Eventually(t, func() bool {
		_, err := q.Drain(ctx)
		require.NoError(t, err)
		dead, err := st.Mail().List(ctx, vocab.MailDead, 0, 10)
		require.NoError(t, err)
		return len(dead) == 1
	}, 10*time.Second, 10*time.Millisecond)
	m, err := st.Mail().Get(ctx, rows[0].ID)
	require.NoError(t, err)
	require.Equal(t, 3, m.Attempts, "dead after MaxAttempts, not before")
	n, err := q.Drain(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a dead message is not tried again")

	// Support resends it once the server is back.
	box := t.TempDir()
	q2 := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}}
	_, err = st.Mail().Resend(ctx, m.ID)
	require.NoError(t, err)
	_, err = st.Mail().Resend(ctx, m.ID)
	require.ErrorIs(t, err, store.ErrNotDead, "a pending message is not resent twice")
	n, err = q2.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m, err = st.Mail().Get(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, vocab.MailSent, m.Status)
	require.Len(t, mails(t, box), 1)
	_, err = st.Mail().Resend(ctx, 1<<40)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestTheSameKeyIsQueuedAndSentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(outboxDB(t), store.Options{})
	box := t.TempDir()
	q := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}}
	for range 3 {
		require.NoError(t, q.Send(ctx, message("b2-confirmation")))
	}
	all, err := st.Mail().List(ctx, "", 0, 10)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, vocab.MailSent, all[0].Status)
	require.Equal(t, 1, all[0].Attempts)
	require.Len(t, mails(t, box), 1)
}

// A message sent at once costs the mail queue two row writes through Send
// (queued already claimed, then marked sent; a separate claim would be a
// third) and one through SendRetried, for a caller that is retried (the
// saga's Notify activity): tried first, then written once with its
// outcome. The same key again writes and sends nothing, through either.
func TestAMessageSentAtOnceCostsTwoRowWritesOrOneForARetriedCaller(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		send   func(q *outbox.Mail, ctx context.Context, m notify.Message) error
		writes int
	}{
		{"Send", (*outbox.Mail).Send, 2},
		{"SendRetried", (*outbox.Mail).SendRetried, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := outboxDB(t)
			writes := testenv.CountRowWrites(t, pool, "mail_queue")
			st := store.New(pool, store.Options{})
			box := t.TempDir()
			q := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}}
			require.NoError(t, tc.send(q, ctx, message("b4-confirmation")))
			require.Equal(t, tc.writes, writes()["mail_queue"])
			all, err := st.Mail().List(ctx, "", 0, 10)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.Equal(t, vocab.MailSent, all[0].Status)
			require.Equal(t, 1, all[0].Attempts)
			require.NotNil(t, all[0].SentAt)
			require.Len(t, mails(t, box), 1)

			for _, again := range []func(ctx context.Context, m notify.Message) error{q.Send, q.SendRetried} {
				require.NoError(t, again(ctx, message("b4-confirmation")))
			}
			require.Equal(t, tc.writes, writes()["mail_queue"], "the same key again writes nothing")
			require.Len(t, mails(t, box), 1, "and sends nothing")
		})
	}
}

// A first attempt that fails is written once, pending with its error, and
// the loop delivers it later, as a message queued by Send.
func TestAMessageWhoseFirstTryFailedForARetriedCallerIsLeftToTheLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := outboxDB(t)
	writes := testenv.CountRowWrites(t, pool, "mail_queue")
	st := store.New(pool, store.Options{})
	q := &outbox.Mail{Store: st, Transport: refusingSMTP(t), Backoff: time.Millisecond}
	require.NoError(t, q.SendRetried(ctx, message("b6-confirmation")), "a refused attempt is the queue's to retry")
	require.Equal(t, 1, writes()["mail_queue"])
	pending, err := st.Mail().List(ctx, vocab.MailPending, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, 1, pending[0].Attempts)
	require.Contains(t, pending[0].LastError, "421")

	box := t.TempDir()
	loop := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}}
	require.Eventually(t, func() bool {
		n, err := loop.Drain(ctx)
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 10*time.Millisecond)
	m, err := st.Mail().Get(ctx, pending[0].ID)
	require.NoError(t, err)
	require.Equal(t, vocab.MailSent, m.Status)
	require.Len(t, mails(t, box), 1)
}

// A sender that dies after the server accepted a message but before the
// mark leaves it claimed; once the lease ends the queue sends it again
// (at least once: the same Message-ID), never drops it.
func TestACrashBetweenSendAndMarkDoesNotLoseTheMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(outboxDB(t), store.Options{})
	raw := []byte(`{"to":"fan@example.com","subject":"s","body":"b","key":"b3-confirmation"}`)
	id, inserted, err := st.Mail().Enqueue(ctx, "b3-confirmation", "fan@example.com", "s", raw)
	require.NoError(t, err)
	require.True(t, inserted)
	// The crashed sender: claimed, (sent,) never marked.
	_, ok, err := st.Mail().Claim(ctx, id, 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)

	box := t.TempDir()
	q := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}, Lease: time.Minute}
	n, err := q.Drain(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a claimed message is its sender's until the lease ends")
	require.Eventually(t, func() bool {
		n, err := q.Drain(ctx)
		require.NoError(t, err)
		return n == 1
	}, 10*time.Second, 50*time.Millisecond)
	m, err := st.Mail().Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, vocab.MailSent, m.Status)
	require.Equal(t, 2, m.Attempts)
	files := mails(t, box)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Contains(t, string(b), "Message-ID: <b3-confirmation@encore>")
}

// A refusing address does not hold up the messages behind it, as an
// ordered outbox topic would.
func TestAFailingMessageDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(outboxDB(t), store.Options{})
	box := t.TempDir()
	q := &outbox.Mail{Store: st, Transport: notify.Mailbox{Dir: box}, Backoff: time.Hour}
	bad := message("b4-bad")
	bad.To = "not an address"
	require.NoError(t, q.Send(ctx, bad))
	require.NoError(t, q.Send(ctx, message("b4-good")))
	sent, err := st.Mail().List(ctx, vocab.MailSent, 0, 10)
	require.NoError(t, err)
	require.Len(t, sent, 1)
	require.Equal(t, "b4-good", sent[0].Key)
}
