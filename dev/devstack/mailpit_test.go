package devstack

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
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

// A Mailpit being built is found whole or not at all: another process (a
// parallel test package) that starts it the moment it appears starts it.
// Built in place, the file appeared while go build still wrote it (go build
// copies its output when its work folder is on another file system, as the
// tests' RAM disk is), and starting it failed with "text file busy". A
// stand-in for go writes its output slowly here; not parallel, for its PATH.
func TestAMailpitBeingBuiltIsFoundWholeOrNotAtAll(t *testing.T) {
	fake := t.TempDir()
	// As go build copies: the file is created with its final mode, then
	// written.
	require.NoError(t, os.WriteFile(filepath.Join(fake, "start.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte(`#!/bin/sh
out=$3
mkdir -p "$(dirname "$out")"
cp "$(dirname "$0")/start.sh" "$out"
exec 3>>"$out"
sleep 1
printf 'exit 0\n' >&3
exec 3>&-
`), 0o755))
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "mailpit")
	built := make(chan error, 1)
	go func() {
		_, err := BuildMailpit(ctx, dir, fake, io.Discard)
		built <- err
	}()
	start := func() {
		out, err := exec.CommandContext(ctx, bin).CombinedOutput()
		require.NoError(t, err, "started the moment it appeared: %s", out)
	}
	for {
		if _, err := os.Stat(bin); err == nil {
			start()
			require.NoError(t, <-built)
			return
		}
		select {
		case err := <-built:
			require.NoError(t, err)
			start()
			return
		case <-ctx.Done():
			t.Fatal("no Mailpit built in a minute")
		case <-time.After(time.Millisecond):
		}
	}
}
