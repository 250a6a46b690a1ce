package devstack

import (
	"context"
	"fmt"
	"os"
	"time"
)

// serverKind is what Ensure needs to know of one kind of development server
// (PostgreSQL, Redis). The steps are the same for both: use the preferred
// URL if it answers, else reuse the server answering on the loopback port,
// else start one under Options.Dir; and so are the locks that make
// concurrent callers (processes, test packages) agree on one server.
type serverKind struct {
	name   string // "postgres", "redis": the Service's name, the log prefix and the lock files' names
	port   func(Options) int
	url    func(port int) string
	ping   func(ctx context.Context, connURL string, timeout time.Duration) error
	redact func(connURL string) string // for log lines
	// starting reports whether a failed ping is a server that is still
	// starting up (or loading its data): worth waiting for.
	starting func(err error) bool
	// foreign is the error for a port held by something that is not a
	// usable server of this kind.
	foreign func(port int, connURL string, err error) error
	// start starts a server under opts.Dir and fills in what svc records of
	// it (DataDir, LogFile, stop).
	start func(ctx context.Context, opts Options, log logger, svc *Service) error
}

// ensure returns a server of kind k to use. See EnsurePostgres and
// EnsureRedis.
func (k serverKind) ensure(ctx context.Context, opts Options, preferredURL string) (*Service, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	log := logger{opts.Log}
	if preferredURL != "" {
		err := k.ping(ctx, preferredURL, 3*time.Second)
		if err == nil {
			log.printf("%s: using %s", k.name, k.redact(preferredURL))
			return &Service{Name: k.name, URL: preferredURL, log: log}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.printf("%s: %s does not answer (%v); using a local server", k.name, k.redact(preferredURL), err)
	}

	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", k.name, err)
	}
	port := k.port(opts)
	svc := newLocalService(k.name, port, k.url(port), log)
	unlock, err := svc.lockSetup(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	reused, err := k.reuse(ctx, svc.URL, port, opts.StartTimeout)
	if err != nil {
		return nil, err
	}
	if !reused {
		if err := k.start(ctx, opts, log, svc); err != nil {
			return nil, err
		}
		svc.Started = true
	} else {
		log.printf("%s: reusing the server on 127.0.0.1:%d", k.name, port)
	}
	if err := svc.holdInUse(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", k.name, err)
	}
	return svc, nil
}

// reuse reports whether a usable server of kind k answers on port. It
// waits while that server is starting up; it fails when something else
// holds the port.
func (k serverKind) reuse(ctx context.Context, connURL string, port int, timeout time.Duration) (bool, error) {
	if !portOpen(port) {
		return false, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		err := k.ping(ctx, connURL, 3*time.Second)
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if k.starting(err) && time.Now().Before(deadline) {
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return false, err
			}
			continue
		}
		if !portOpen(port) {
			return false, nil // it went away (shut down)
		}
		return false, k.foreign(port, connURL, err)
	}
}
