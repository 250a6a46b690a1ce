package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// MailpitModule is the mail catcher encore dev runs, pinned in
// tools/mailpit/go.mod (a module of its own: its dependencies would move
// those of the task runner in tools/go.mod).
const MailpitModule = "github.com/axllent/mailpit"

// MailpitOptions say where the mail catcher listens and keeps its mail.
type MailpitOptions struct {
	// Dir is the data folder root (".encore"): the program is built into
	// Dir/bin/mailpit, its mail kept in Dir/mailpit.
	Dir string
	// SMTPAddr and HTTPAddr are its loopback SMTP and web UI/API addresses
	// (127.0.0.1:1025, 127.0.0.1:8025).
	SMTPAddr, HTTPAddr string
	// ToolsDir is the folder of Mailpit's go.mod (tools/mailpit), where it
	// is built from on first use. Empty: looked for above the working
	// folder.
	ToolsDir string
	Log      io.Writer
}

// Mailpit is a running mail catcher.
type Mailpit struct {
	SMTPAddr, HTTPAddr string
	// Started says this process started it (and Stop stops it); false when
	// one was already answering on HTTPAddr.
	Started bool
	LogFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// URL is the web UI.
func (m *Mailpit) URL() string { return "http://" + m.HTTPAddr }

// SMTPURL is where to send mail (no TLS, no authentication).
func (m *Mailpit) SMTPURL() string { return "smtp://" + m.SMTPAddr }

// EnsureMailpit returns the Mailpit answering on opts.HTTPAddr, or starts
// one (building it first when Dir/bin/mailpit is missing).
func EnsureMailpit(ctx context.Context, opts MailpitOptions) (*Mailpit, error) {
	log := logger{opts.Log}
	if opts.Dir == "" {
		opts.Dir = DefaultDir
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if pingMailpit(ctx, opts.HTTPAddr) == nil {
		log.printf("mailpit: using the one on %s", opts.HTTPAddr)
		return &Mailpit{SMTPAddr: opts.SMTPAddr, HTTPAddr: opts.HTTPAddr}, nil
	}
	bin, err := BuildMailpit(ctx, dir, opts.ToolsDir, opts.Log)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "mailpit")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	return StartMailpit(ctx, bin, data, opts.SMTPAddr, opts.HTTPAddr, opts.Log)
}

// StartMailpit runs the program bin with its mail in dataDir on the two
// addresses and waits until its API answers.
func StartMailpit(ctx context.Context, bin, dataDir, smtpAddr, httpAddr string, logw io.Writer) (*Mailpit, error) {
	log := logger{logw}
	for _, a := range []string{smtpAddr, httpAddr} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return nil, fmt.Errorf("mailpit: %s is in use, and not by a Mailpit that answers: stop that program or set ENCORE_MAILPIT_SMTP_ADDR and ENCORE_MAILPIT_HTTP_ADDR (%w)", a, err)
		}
		ln.Close()
	}
	logFile := filepath.Join(dataDir, "mailpit.log")
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--smtp", smtpAddr, "--listen", httpAddr,
		"--database", filepath.Join(dataDir, "mailpit.db"), "--disable-version-check", "--quiet")
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("mailpit: start: %w", err)
	}
	m := &Mailpit{SMTPAddr: smtpAddr, HTTPAddr: httpAddr, Started: true, LogFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(m.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pingMailpit(ctx, httpAddr) == nil {
			log.printf("mailpit: started on %s (SMTP) and http://%s (web UI and API)", smtpAddr, httpAddr)
			return m, nil
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("mailpit: exited at start; see %s", logFile)
		case <-ctx.Done():
			_ = m.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = m.Stop()
			return nil, fmt.Errorf("mailpit: no answer on %s after 30s; see %s", httpAddr, logFile)
		}
	}
}

// Stop stops a Mailpit this process started; one found running is left.
func (m *Mailpit) Stop() error {
	if m == nil || !m.Started {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
	return nil
}

// BuildMailpit returns dir/bin/mailpit, building it from the pinned module
// in toolsDir (found above the working folder when empty) when missing.
func BuildMailpit(ctx context.Context, dir, toolsDir string, logw io.Writer) (string, error) {
	bin := filepath.Join(dir, "bin", "mailpit")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if toolsDir == "" {
		var err error
		if toolsDir, err = findMailpitTools(); err != nil {
			return "", err
		}
	}
	logger{logw}.printf("mailpit: building %s (pinned in %s) into %s; once", MailpitModule, filepath.Join(toolsDir, "go.mod"), bin)
	// Built beside bin in a folder of its own, then renamed: another
	// builder (a parallel test, in this process or another) that finds bin
	// finds it whole and closed. Built in place, it found the file while go
	// build still wrote it, and starting it failed with "text file busy".
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(filepath.Dir(bin), "build-") // one a builder, however many in a process
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "mailpit")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, MailpitModule)
	cmd.Dir = toolsDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mailpit: build: %w: %s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("mailpit: install: %w", err)
	}
	return bin, nil
}

// findMailpitTools finds tools/mailpit/go.mod in the working folder or a
// parent: encore dev runs from a checkout.
func findMailpitTools() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "tools", "mailpit", "go.mod")); err == nil {
			return filepath.Join(d, "tools", "mailpit"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("mailpit: tools/mailpit/go.mod not found above the working folder: run encore dev from the checkout, or set ENCORE_SMTP_URL")
		}
	}
}

// pingMailpit asks Mailpit's API for its version.
func pingMailpit(ctx context.Context, httpAddr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/api/v1/info", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var info struct{ Version string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&info) != nil || info.Version == "" {
		return fmt.Errorf("mailpit: %s does not answer as Mailpit", httpAddr)
	}
	return nil
}
