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

// slowGo puts a stand-in for go first in PATH (so its callers cannot run in
// parallel): "go build -o OUT" creates OUT with its final mode and writes it
// over a second, as go build copies its output when its work folder is on
// another file system (the tests' RAM disk is). It returns its folder.
func slowGo(t *testing.T) string {
	fake := t.TempDir()
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
	return fake
}

// A Mailpit being built is found whole or not at all: another process (a
// parallel test package) that starts it the moment it appears starts it.
// Built in place, the file appeared while go build still wrote it, and
// starting it failed with "text file busy".
func TestAMailpitBeingBuiltIsFoundWholeOrNotAtAll(t *testing.T) {
	tools := slowGo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "mailpit")
	built := make(chan error, 1)
	go func() {
		_, err := BuildMailpit(ctx, dir, tools, io.Discard)
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

// Builders of one process at once each get a whole Mailpit: they build in
// folders of their own (a name made of the process ID was one name for all
// of them, and the second rename found nothing).
func TestBuildersOfOneProcessAtOnceEachGetMailpit(t *testing.T) {
	tools := slowGo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			bin, err := BuildMailpit(ctx, dir, tools, io.Discard)
			if err == nil {
				err = exec.CommandContext(ctx, bin).Run()
			}
			errs <- err
		}()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "bin"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing but the program is left in bin: %v", entries)
}
