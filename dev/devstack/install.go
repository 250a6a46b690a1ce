package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// aptState remembers, per process, whether apt-get update ran.
var aptState struct {
	mu      sync.Mutex
	updated bool
}

// updateFreshFor is how long an apt-get update by any process (recorded in a
// stamp file next to the machine-wide lock) counts as recent.
const updateFreshFor = time.Hour

// installTimeout bounds one automatic install, waits for locks included.
const installTimeout = 15 * time.Minute

// isDebianLike reports whether /etc/os-release names Debian or a derivative.
func isDebianLike() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return exists("/etc/debian_version")
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || (k != "ID" && k != "ID_LIKE") {
			continue
		}
		for _, id := range strings.Fields(strings.Trim(v, `"'`)) {
			if id == "debian" || id == "ubuntu" {
				return true
			}
		}
	}
	return false
}

// canAptInstall says why an automatic install is impossible ("" if possible).
func canAptInstall() string {
	switch {
	case !isDebianLike():
		return "automatic install needs Debian or Ubuntu"
	case !isRoot():
		return "automatic install needs root"
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "apt-get not found"
	}
	return ""
}

// installHint is the command a person should run to install pkg.
func installHint(debPkg, brewPkg string) string {
	switch {
	case runtime.GOOS == "darwin":
		return "`brew install " + brewPkg + "`"
	case isDebianLike() && isRoot():
		return "`apt-get install " + debPkg + "`"
	case isDebianLike():
		return "`sudo apt-get install " + debPkg + "`"
	default:
		return "your system's package manager (package " + debPkg + ")"
	}
}

// serverPackage is a server program devstack looks for and, where
// Options.AllowInstall permits, installs from a Debian package.
type serverPackage struct {
	name      string // log prefix: "postgres", "redis"
	programs  string // what the log says is missing: "server programs", "redis-server"
	debPkg    string // "postgresql", "redis-server"
	stillGone string // the cause when the install did not make find succeed
	what      string // of the notFoundError: "PostgreSQL server"
	hint      string // of the notFoundError: how a person installs it
}

// findOrInstall runs find (which records what it finds) and, when it finds
// nothing, installs the package with apt-get if allowed and possible and
// runs find again. It fails with a notFoundError (ErrNotInstalled).
func (sp serverPackage) findOrInstall(ctx context.Context, opts Options, log logger, find func() bool) error {
	if find() {
		return nil
	}
	var installErr error
	if opts.AllowInstall && canAptInstall() == "" {
		log.printf("%s: %s not found; installing the %s package ...", sp.name, sp.programs, sp.debPkg)
		installErr = aptInstall(ctx, log, find, sp.debPkg)
		if find() {
			return nil
		}
		if installErr == nil {
			installErr = errors.New(sp.stillGone)
		}
	}
	return &notFoundError{what: sp.what, hint: sp.hint, cause: installErr}
}

// aptInstall installs Debian packages unless present() becomes true while
// waiting for the machine-wide install lock (someone else installed them).
func aptInstall(ctx context.Context, log logger, present func() bool, pkgs ...string) error {
	if why := canAptInstall(); why != "" {
		return errors.New(why)
	}
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()

	aptState.mu.Lock()
	defer aptState.mu.Unlock()
	lockPath := machinePath("apt.lock")
	lk, err := lockFile(ctx, lockPath, syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer lk.Close()
	if present() {
		return nil
	}

	stamp := machinePath("apt-updated")
	if !aptState.updated {
		if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < updateFreshFor {
			aptState.updated = true
		}
	}
	if !aptState.updated {
		start := time.Now()
		log.printf("apt: updating package lists (apt-get update) ...")
		if err := aptGet(ctx, log, "update", "-q"); err != nil {
			return err
		}
		aptState.updated = true
		_ = os.WriteFile(stamp, nil, 0o644)
		_ = os.Chtimes(stamp, time.Now(), time.Now())
		log.printf("apt: package lists updated in %s", since(start))
	}
	start := time.Now()
	log.printf("apt: installing %s (apt-get install) ...", strings.Join(pkgs, " "))
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, pkgs...)
	if err := aptGet(ctx, log, args...); err != nil {
		return err
	}
	log.printf("apt: installed %s in %s", strings.Join(pkgs, " "), since(start))
	return nil
}

// aptGet runs apt-get, waiting and retrying while another process holds the
// dpkg or package-list lock.
func aptGet(ctx context.Context, log logger, args ...string) error {
	full := append([]string{"-o", "DPkg::Lock::Timeout=120"}, args...)
	configured := false
	warned := false
	for {
		cmd := exec.CommandContext(ctx, "apt-get", full...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "NEEDRESTART_MODE=a")
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		text := string(out)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), ctx.Err())
		case isLockError(text):
			if !warned {
				log.printf("apt: another process holds the package lock; waiting ...")
				warned = true
			}
			if err := sleepCtx(ctx, 5*time.Second); err != nil {
				return fmt.Errorf("apt-get %s: waiting for the dpkg lock: %w", strings.Join(args, " "), err)
			}
		case !configured && strings.Contains(text, "dpkg --configure -a"):
			configured = true
			log.printf("apt: an earlier install was interrupted; running dpkg --configure -a ...")
			c := exec.CommandContext(ctx, "dpkg", "--configure", "-a")
			c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if o, err := c.CombinedOutput(); err != nil && !isLockError(string(o)) {
				return fmt.Errorf("dpkg --configure -a: %w: %s", err, lastLines(string(o), 10))
			}
		default:
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(text, 10))
		}
	}
}

func isLockError(out string) bool {
	for _, s := range []string{"Could not get lock", "Unable to lock", "Unable to acquire the dpkg frontend lock", "is another process using it", "dpkg status database is locked"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
