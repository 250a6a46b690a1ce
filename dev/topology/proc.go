package topology

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// Proc is one Encore process of the topology, which a test may kill and
// start again on the same addresses.
type Proc struct {
	// Name is "temporal", "psp", "api1", "worker2", ...
	Name string
	// URL is an API's fan listener; AdminURL the /metrics listener of an
	// API or a worker.
	URL, AdminURL string
	// LogPath is its standard output and error, kept across restarts.
	LogPath string

	binary string
	args   []string
	env    map[string]string
	ready  func(context.Context, *Proc) error

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Pid is the running process's ID (0 when it is not running).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start runs the process and waits until it is ready (at most two minutes).
func (p *Proc) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("topology: %s is running", p.Name)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "---- start %s %s\n", p.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.binary, p.args...)
	cmd.Env = p.environ()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("topology: start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	if p.ready == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel() // a process that exits is never ready
		case <-rctx.Done():
		}
	}()
	if err := p.ready(rctx, p); err != nil {
		select {
		case <-exited:
			return fmt.Errorf("topology: %s exited before it was ready:\n%s", p.Name, tail(p.LogPath, 30))
		default:
		}
		return fmt.Errorf("topology: %s not ready: %w\n%s", p.Name, err, tail(p.LogPath, 30))
	}
	return nil
}

// Kill sends SIGKILL, as a crash or the OOM killer would, and waits for the
// process to be gone.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Stop is Kill for the end of a test: nothing here needs a clean shutdown.
func (p *Proc) Stop() { p.Kill() }

// RestartAfter kills the process, leaves it dead for down (an outage longer
// than a supervisor's restart, or none) and starts it again, returning how
// long it was gone: from the kill until it was ready again.
func (p *Proc) RestartAfter(ctx context.Context, down time.Duration) (time.Duration, error) {
	t0 := time.Now()
	p.Kill()
	select {
	case <-ctx.Done():
		return time.Since(t0), ctx.Err()
	case <-time.After(down):
	}
	err := p.Start(ctx)
	return time.Since(t0), err
}

// Running reports whether the process has been started and has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// environ is the caller's environment without its ENCORE_ variables, plus
// the process's own.
func (p *Proc) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ENCORE_") {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(p.env))
	for k := range p.env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+p.env[k])
	}
	return env
}

// waitLog waits for the current run's log to contain s.
func (p *Proc) waitLog(ctx context.Context, s string) error {
	for {
		b, err := os.ReadFile(p.LogPath)
		if err == nil {
			run := string(b)
			if i := strings.LastIndex(run, "---- start "+p.Name); i >= 0 {
				run = run[i:]
			}
			if strings.Contains(run, s) {
				return nil
			}
		}
		if !pause(ctx, 50*time.Millisecond) {
			return fmt.Errorf("%q not in %s's log: %w", s, p.Name, ctx.Err())
		}
	}
}
