package devstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Default loopback ports of the development servers.
const (
	DefaultPostgresPort = 54329
	DefaultRedisPort    = 63799
	DefaultDir          = ".encore"
)

// ErrNotInstalled is wrapped by the error returned when a server program is
// missing and could not be installed.
var ErrNotInstalled = errors.New("not installed")

// Options configures where and how the local servers run.
type Options struct {
	// Dir is the data folder root, e.g. ".encore" (dev) or ".encore/test"
	// (tests). PostgreSQL data lives in Dir/postgres, Redis data in Dir/redis.
	// Default ".encore".
	Dir string
	// PostgresPort is the loopback port of the local PostgreSQL. Default 54329.
	PostgresPort int
	// RedisPort is the loopback port of the local Redis. Default 63799.
	RedisPort int
	// AllowInstall installs missing server programs with apt-get (update once,
	// then install -y postgresql / redis-server) when running as root on
	// Debian or Ubuntu.
	AllowInstall bool
	// Log receives progress lines such as
	// "postgres: initialising cluster in .encore/postgres ...". Nil discards.
	// Each line is written with one Write call under a package-wide mutex.
	Log io.Writer
	// Fast trades durability for speed, for tests: PostgreSQL runs with
	// fsync, synchronous_commit and full_page_writes off (and initdb with
	// --no-sync); Redis runs without persistence. Applies to servers started
	// by this call.
	Fast bool
	// SearchPath, when non-nil, replaces the folders searched for server
	// programs (PATH and the usual install folders such as
	// /usr/lib/postgresql/*/bin). Installed programs are looked for there too.
	SearchPath []string
	// StartTimeout bounds one server start. Default 60s.
	StartTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("devstack: data folder %q: %w", o.Dir, err)
	}
	o.Dir = abs
	if o.PostgresPort == 0 {
		o.PostgresPort = DefaultPostgresPort
	}
	if o.RedisPort == 0 {
		o.RedisPort = DefaultRedisPort
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	return o, nil
}

// Service is a running PostgreSQL or Redis.
type Service struct {
	// Name is "postgres" or "redis".
	Name string
	// URL connects to the server: postgres://postgres@127.0.0.1:<port>/postgres?sslmode=disable
	// or redis://127.0.0.1:<port>/0 for local servers, the preferred URL otherwise.
	URL string
	// Started is true if this Service started the server (and so its Stop
	// may stop it).
	Started bool
	// Port is the local loopback port, or 0 when the preferred URL is used.
	Port int
	// DataDir is the data folder of a server under Options.Dir ("" when the
	// preferred URL is used or the server on the port was reused).
	DataDir string
	// LogFile is the server's log file when this Service started it.
	LogFile string

	log       logger
	lockPath  string // machine-wide lock of the port (exclusive while starting or stopping)
	inUsePath string // machine-wide lock of the port, shared by every Service using it

	mu    sync.Mutex
	inUse *os.File // shared lock on inUsePath held until Stop
	stop  func(ctx context.Context) error
	crash func(ctx context.Context, down time.Duration) error
	done  bool
}

// Crash stops a server this Service started as a crash would and starts it
// again on the same port and data after down (a chaos rehearsal's restart
// of the primary). Only PostgreSQL can be crashed this way.
func (s *Service) Crash(ctx context.Context, down time.Duration) error {
	if s == nil {
		return errors.New("devstack: no server")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || !s.Started || s.crash == nil {
		return fmt.Errorf("%s: crash: not a server this process started and runs", s.Name)
	}
	return s.crash(ctx, down)
}

// Stop stops the server if this Service started it and no other Service
// (in this process or another) still uses it. It is a no-op for a server
// that was found running, and for a second call.
func (s *Service) Stop() error { return s.stopServer(false) }

// StopNow stops a server this Service started even while other processes
// use it: a drill's outage (encore drill) must reach every client.
func (s *Service) StopNow() error { return s.stopServer(true) }

func (s *Service) stopServer(evenInUse bool) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.done = true
	if !s.Started || s.stop == nil {
		s.releaseInUse()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Serialise with Ensure calls on the same port, so nobody starts to
	// reuse the server while it is being stopped.
	lk, err := lockFile(ctx, s.lockPath, syscall.LOCK_EX)
	if err != nil {
		s.releaseInUse()
		return fmt.Errorf("%s: stop: %w", s.Name, err)
	}
	defer lk.Close()
	s.releaseInUse()
	if s.inUsePath != "" && !evenInUse {
		// Waited for a moment, not tried once: a child process forked by
		// this process between its fork and its exec holds a copy of every
		// open file, in-use locks included, for that instant.
		wctx, wcancel := context.WithTimeout(ctx, inUseWait)
		excl, err := lockFile(wctx, s.inUsePath, syscall.LOCK_EX)
		wcancel()
		if errors.Is(err, context.DeadlineExceeded) {
			s.log.printf("%s: still used by another process or test; leaving it running on port %d", s.Name, s.Port)
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: stop: %w", s.Name, err)
		}
		defer excl.Close()
	}
	start := time.Now()
	s.log.printf("%s: stopping the server on port %d ...", s.Name, s.Port)
	if err := s.stop(ctx); err != nil {
		return err
	}
	s.log.printf("%s: stopped in %s", s.Name, since(start))
	return nil
}

// inUseWait is how long Stop waits for the other users of a server to let
// go before it leaves the server running for them.
const inUseWait = 500 * time.Millisecond

func (s *Service) releaseInUse() {
	if s.inUse != nil {
		s.inUse.Close()
		s.inUse = nil
	}
}

// newLocalService describes the server on a loopback port, with the
// machine-wide locks of that port.
func newLocalService(name string, port int, url string, log logger) *Service {
	return &Service{
		Name:      name,
		URL:       url,
		Port:      port,
		log:       log,
		lockPath:  machinePath(fmt.Sprintf("%s-%d.lock", name, port)),
		inUsePath: machinePath(fmt.Sprintf("%s-%d.inuse", name, port)),
	}
}

// lockSetup serialises Ensure calls: first on the data folder
// (Dir/<name>.lock), then on the port, for callers with different folders
// but the same port. The returned function releases both.
func (s *Service) lockSetup(ctx context.Context, dir string) (func(), error) {
	dl, err := lockFile(ctx, filepath.Join(dir, s.Name+".lock"), syscall.LOCK_EX)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	pl, err := lockFile(ctx, s.lockPath, syscall.LOCK_EX)
	if err != nil {
		dl.Close()
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return func() { pl.Close(); dl.Close() }, nil
}

// machinePath names a machine-wide lock or stamp file.
func machinePath(name string) string {
	return filepath.Join(os.TempDir(), "encore-devstack-"+name)
}

// holdInUse takes the shared in-use lock; the caller holds the setup lock,
// so no Stop holds the exclusive one.
func (s *Service) holdInUse(ctx context.Context) error {
	f, err := lockFile(ctx, s.inUsePath, syscall.LOCK_SH)
	if err != nil {
		return err
	}
	s.inUse = f
	return nil
}

// ProjectDir returns the folder that holds go.mod, searched from the
// working folder upwards, joined with elem; the working folder when there
// is none. `go test` runs each package in its own folder, so tests use
// ProjectDir(".encore", "test") for one Options.Dir shared by all packages.
func ProjectDir(elem ...string) string {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	root := wd
	for d := wd; ; {
		if exists(filepath.Join(d, "go.mod")) {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// Shutdown stops the PostgreSQL and Redis servers whose data lives under
// opts.Dir, whoever started them. Servers that are not running are ignored.
func Shutdown(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	log := logger{opts.Log}
	return errors.Join(shutdownPostgres(ctx, opts, log), shutdownRedis(ctx, opts, log))
}

// logger writes whole progress lines.
type logger struct{ w io.Writer }

var logMu sync.Mutex

func (l logger) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = io.WriteString(l.w, line)
}

// display shortens p relative to the working folder when it lies inside it.
func display(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

func since(t time.Time) time.Duration {
	d := time.Since(t)
	switch {
	case d > 10*time.Second:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Millisecond)
	}
}

// dirHash names the /var/tmp fallback folder of a data folder root.
func dirHash(absDir string) string {
	sum := sha256.Sum256([]byte(absDir))
	return hex.EncodeToString(sum[:])[:12]
}

// lockFile opens (creating) path and takes a flock on it, polling so that
// ctx can cancel the wait. Closing the file releases the lock.
func lockFile(ctx context.Context, path string, how int) (*os.File, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	delay := 10 * time.Millisecond
	for {
		err := flock(f, how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// openLockFile opens path for flock, which needs no write access: lock
// files in the temporary folder may belong to another user.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil && os.IsPermission(err) {
		f, err = os.Open(path) // fs.protected_regular refuses O_CREAT on others' files
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// notFoundError is returned when a server program is missing.
type notFoundError struct {
	what, hint string
	cause      error
}

func (e *notFoundError) Error() string {
	msg := e.what + " not found: " + e.hint
	if e.cause != nil {
		msg += " (automatic install failed: " + e.cause.Error() + ")"
	}
	return msg
}

func (e *notFoundError) Unwrap() error { return ErrNotInstalled }
