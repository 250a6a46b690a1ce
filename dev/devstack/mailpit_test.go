package devstack

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func loopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// mailpitBinary is the pinned Mailpit, built once into the checkout's
// .encore/bin as encore dev builds it.
func mailpitBinary(t *testing.T) string {
	t.Helper()
	tools, err := findMailpitTools()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := BuildMailpit(ctx, filepath.Join(filepath.Dir(filepath.Dir(tools)), ".encore"), tools, io.Discard)
	require.NoError(t, err)
	return bin
}

func TestEnsureMailpitReusesTheOneAnsweringAndStopsOnlyWhatItStarted(t *testing.T) {
	t.Parallel()
	bin := mailpitBinary(t)
	ctx := context.Background()
	smtpAddr, httpAddr := loopbackAddr(t), loopbackAddr(t)
	first, err := StartMailpit(ctx, bin, t.TempDir(), smtpAddr, httpAddr, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Stop() })
	require.True(t, first.Started)

	again, err := EnsureMailpit(ctx, MailpitOptions{Dir: t.TempDir(), SMTPAddr: smtpAddr, HTTPAddr: httpAddr})
	require.NoError(t, err)
	require.False(t, again.Started, "one already answering is reused")
	require.Equal(t, "smtp://"+smtpAddr, again.SMTPURL())
	require.NoError(t, again.Stop())
	require.NoError(t, pingMailpit(ctx, httpAddr), "stopping a reused Mailpit leaves it running")

	require.NoError(t, first.Stop())
	require.Error(t, pingMailpit(ctx, httpAddr), "the one this process started is stopped")
}

func TestStartMailpitRefusesAPortHeldBySomethingElse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = StartMailpit(context.Background(), "/nonexistent/mailpit", t.TempDir(), ln.Addr().String(), loopbackAddr(t), io.Discard)
	require.ErrorContains(t, err, "is in use")
	require.ErrorContains(t, err, "ENCORE_MAILPIT_SMTP_ADDR")
}
